// A server-rendered section that follows the log. The browser never rebuilds projections:
// when an event that may change the section arrives, it fetches the section again (debounced,
// one request at a time, the last one always after the last event) and swaps it in, keeping
// whatever the person was typing into its forms.

import { morph } from "./morph.js";

const DEBOUNCE_MS = 150;

function familyOf(type) {
  return String(type).split(".", 1)[0];
}

function draftFields(root) {
  const fields = [];
  for (const form of root.querySelectorAll("form[data-form-key]")) {
    // what a person chose counts too: a select, a date and time (the "Escalate" form)
    for (const field of form.querySelectorAll(
      "textarea, input[type=text], input[type=datetime-local], select",
    )) {
      fields.push([form.dataset.formKey + "|" + field.name, field]);
    }
  }
  return fields;
}

// Fetch a server-rendered fragment as HTML; null unless 200 (404: the membership is gone,
// and the stream says so; the page stays as it was).
export async function fetchFragment(url) {
  const response = await fetch(url, {
    credentials: "same-origin",
    cache: "no-store",
    headers: { Accept: "text/html" },
  });
  return response.ok ? response.text() : null;
}

// `task` (async) run one at a time, debounced: a call while it runs asks for one more run
// once it is done, so the last run always starts after the last call.
export function debouncedOneAtATime(task, delayMs = DEBOUNCE_MS) {
  let running = false;
  let again = false;
  let timer = null;
  const run = async () => {
    if (running) {
      again = true;
      return;
    }
    running = true;
    try {
      await task();
    } catch {
      // Offline: the stream reconnects and replays what was missed, which asks again.
    } finally {
      running = false;
      if (again) {
        again = false;
        run();
      }
    }
  };
  return () => {
    clearTimeout(timer);
    timer = setTimeout(run, delayMs);
  };
}

// Whether the page is being left by a form's submission: a section must not be swapped
// out from under the browser then (it comes back from the back/forward cache unchanged).
export function leavingTracker() {
  const state = { leaving: false };
  document.addEventListener("submit", () => (state.leaving = true));
  window.addEventListener("pageshow", () => (state.leaving = false));
  return state;
}

export class LiveSection {
  // elementId: the section's root (it carries data-refresh-url; the response's root has the
  // same id). families: event-type prefixes that matter. matches(event): a finer filter.
  // onSwap(fresh, focused): called with the new root once it is in the page (and, inPlace,
  // the element that had the focus before the update). inPlace: update the
  // section where it is (morph.js), so the focused element, the scroll position and open
  // disclosures are kept whatever the person was on (not only the form fields).
  constructor({ elementId, families, matches = () => true, onSwap = () => {}, inPlace = false }) {
    this.elementId = elementId;
    this.families = new Set(families);
    this.matches = matches;
    this.onSwap = onSwap;
    this.inPlace = inPlace;
    this.page = leavingTracker();
    this.schedule = debouncedOneAtATime(() => this.refresh());
  }

  get element() {
    return document.getElementById(this.elementId);
  }

  notify(event) {
    if (!this.families.has(familyOf(event.type)) || !this.matches(event)) return;
    this.schedule();
  }

  async refresh() {
    const html = await fetchFragment(this.element.dataset.refreshUrl);
    if (html !== null && !this.page.leaving) this.swap(html);
  }

  swap(html) {
    const current = this.element;
    const holder = document.createElement("template");
    holder.innerHTML = html;
    const fresh = holder.content.getElementById(this.elementId);
    if (!current || !fresh) return;
    if (this.inPlace) {
      const focused = document.activeElement;
      morph(current, fresh);
      this.onSwap(current, focused);
      current.dataset.refreshedAt = new Date().toISOString();
      return;
    }
    replacePreserving(current, fresh);
    this.onSwap(fresh);
    fresh.dataset.refreshedAt = new Date().toISOString();
  }
}

// Put `fresh` where `current` is, keeping what the person was doing in it: the text they
// typed into its forms (by data-form-key and field name), the field that had the focus and
// its selection, and the "Actions" disclosures they opened (by data-details-key).
export function replacePreserving(current, fresh) {
  const drafts = new Map();
  let focus = null;
  for (const [key, field] of draftFields(current)) {
    if (field.value) drafts.set(key, field.value);
    if (field === document.activeElement) {
      focus = { key, start: field.selectionStart, end: field.selectionEnd };
    }
  }
  const opened = new Set(
    [...current.querySelectorAll("details[data-details-key][open]")].map((d) => d.dataset.detailsKey),
  );
  current.replaceWith(fresh);
  for (const details of fresh.querySelectorAll("details[data-details-key]")) {
    if (opened.has(details.dataset.detailsKey)) details.open = true;
  }
  for (const [key, field] of draftFields(fresh)) {
    if (drafts.has(key)) field.value = drafts.get(key);
    if (focus && focus.key === key) {
      field.focus();
      // a select or a date has no text selection (its selectionStart is null or absent)
      if (focus.start != null) field.setSelectionRange(focus.start, focus.end);
    }
  }
}
