// The review screen: one criterion at a time, judged from the keyboard, with the person's
// verdicts and notes kept in this browser (localStorage) until they are sent, so a reload
// or a live refresh loses nothing. The page follows the group's log and refreshes the
// review when evidence or a decision about this WorkItem arrives, and keeps the person's
// reservation of the review alive while it stays open.
//
// Without scripts every criterion shows at once and the form works as it is.

import { connectionStatus, followWhileShown } from "./connection.js";
import { keepCountingDown, tick } from "./countdown.js";
import { LiveSection } from "./live-section.js";
import { GroupStream } from "./stream.js";

const data = JSON.parse(document.getElementById("review-data").textContent);
const RENEW_MS = 4 * 60 * 1000;
const VERDICT_KEYS = { p: "pass", f: "fail", n: "needs_changes" };

// --- the draft -----------------------------------------------------------------------------

function loadDraft() {
  try {
    return JSON.parse(localStorage.getItem(data.draft_key)) || { verdicts: {}, notes: {} };
  } catch {
    return { verdicts: {}, notes: {} };
  }
}

let draft = loadDraft();

function saveDraft() {
  try {
    localStorage.setItem(data.draft_key, JSON.stringify(draft));
  } catch {
    // storage full or disabled: the form still holds what was typed
  }
}

function dropDraft() {
  draft = { verdicts: {}, notes: {} };
  try {
    localStorage.removeItem(data.draft_key);
  } catch {}
}

function body() {
  return document.getElementById("review-body");
}

// The review was sent (this page's redirect says so) or is over: the draft has done its job.
const params = new URLSearchParams(window.location.search);
if (params.get("sent") === String(body().dataset.submission)) {
  dropDraft();
  params.delete("sent");
  const query = params.toString();
  history.replaceState(null, "", window.location.pathname + (query ? "?" + query : "") + window.location.hash);
}

function applyDraft(root) {
  if (root.dataset.open !== "true") {
    dropDraft();
    return;
  }
  for (const criterion of data.criteria) {
    const verdict = draft.verdicts[criterion];
    for (const radio of root.querySelectorAll(`input[name="verdict-${CSS.escape(criterion)}"]`)) {
      radio.checked = radio.value === verdict;
    }
    const note = root.querySelector(`textarea[name="note-${CSS.escape(criterion)}"]`);
    if (note && draft.notes[criterion] !== undefined) note.value = draft.notes[criterion];
  }
  const summary = root.querySelector('textarea[name="summary"]');
  if (summary && draft.summary !== undefined) summary.value = draft.summary;
  showMarks(root);
}

function showMarks(root) {
  let judged = 0;
  for (const criterion of data.criteria) {
    const verdict = draft.verdicts[criterion];
    if (verdict) judged += 1;
    const mark = root.querySelector(`[data-draft-mark="${CSS.escape(criterion)}"]`);
    if (mark) {
      mark.textContent = verdict ? "your verdict: " + verdict.replace("_", " ") : "";
      mark.className = "draft-mark" + (verdict ? " draft-mark--" + verdict : "");
    }
  }
  const progress = root.querySelector("#review-progress");
  if (progress && root.querySelector("fieldset.verdict-form")) {
    progress.textContent = `${judged} of ${data.criteria.length} judged`;
  }
}

document.addEventListener("change", (event) => {
  const field = event.target;
  if (!(field instanceof HTMLInputElement) || field.type !== "radio") return;
  const match = field.name.match(/^verdict-(.+)$/);
  if (!match) return;
  draft.verdicts[match[1]] = field.value;
  saveDraft();
  showMarks(body());
});

document.addEventListener("input", (event) => {
  const field = event.target;
  if (!(field instanceof HTMLTextAreaElement)) return;
  const match = field.name.match(/^note-(.+)$/);
  if (match) draft.notes[match[1]] = field.value;
  else if (field.name === "summary") draft.summary = field.value;
  else return;
  saveDraft();
});

// --- one criterion at a time ---------------------------------------------------------------

let current = 0;

function firstUnjudged() {
  const index = data.criteria.findIndex((criterion) => !draft.verdicts[criterion]);
  return index === -1 ? 0 : index;
}

function fromHash() {
  const id = decodeURIComponent(window.location.hash.replace(/^#criterion-/, ""));
  return data.criteria.indexOf(id);
}

function show(index, { focus = false } = {}) {
  if (!data.criteria.length) return;
  current = Math.max(0, Math.min(index, data.criteria.length - 1));
  const root = body();
  root.classList.add("review--one-at-a-time");
  data.criteria.forEach((criterion, position) => {
    const section = root.querySelector(`section[data-criterion="${CSS.escape(criterion)}"]`);
    if (section) section.hidden = position !== current;
    const link = root.querySelector(`[data-criterion-link="${CSS.escape(criterion)}"]`);
    if (link) {
      if (position === current) link.setAttribute("aria-current", "step");
      else link.removeAttribute("aria-current");
    }
  });
  const shown = root.querySelector(`section[data-criterion="${CSS.escape(data.criteria[current])}"]`);
  if (shown && focus) shown.focus({ preventScroll: false });
  history.replaceState(null, "", "#criterion-" + encodeURIComponent(data.criteria[current]));
}

document.addEventListener("click", (event) => {
  const link = event.target.closest("[data-criterion-link]");
  if (!link) return;
  event.preventDefault();
  show(data.criteria.indexOf(link.dataset.criterionLink), { focus: true });
});

function setVerdict(verdict) {
  const criterion = data.criteria[current];
  const radio = body().querySelector(
    `input[name="verdict-${CSS.escape(criterion)}"][value="${verdict}"]`,
  );
  if (!radio) return; // the person may not judge: nothing to set
  radio.checked = true;
  radio.dispatchEvent(new Event("change", { bubbles: true }));
}

document.addEventListener("keydown", (event) => {
  if (event.ctrlKey || event.metaKey || event.altKey) return;
  const target = event.target;
  const typing =
    target instanceof HTMLTextAreaElement ||
    (target instanceof HTMLInputElement && !["radio", "checkbox"].includes(target.type)) ||
    target.isContentEditable;
  const dialog = document.getElementById("review-keys");
  if (typing) {
    if (event.key === "Escape") target.blur();
    return;
  }
  if (dialog.open) return;
  if (event.key === "j") show(current + 1, { focus: true });
  else if (event.key === "k") show(current - 1, { focus: true });
  else if (event.key in VERDICT_KEYS) setVerdict(VERDICT_KEYS[event.key]);
  else if (event.key === "e") {
    const note = body().querySelector(`textarea[name="note-${CSS.escape(data.criteria[current])}"]`);
    if (note) note.focus();
  } else if (event.key === "?") dialog.showModal();
  else return;
  event.preventDefault();
});

// --- the reservation -----------------------------------------------------------------------

function csrfToken() {
  const field = document.querySelector('input[name="csrfmiddlewaretoken"]');
  return field ? field.value : "";
}

async function reserve() {
  if (!data.may_reserve || document.hidden || body().dataset.open !== "true") return;
  try {
    await fetch(data.reserve_url, {
      method: "POST",
      credentials: "same-origin",
      headers: { "X-CSRFToken": csrfToken(), Accept: "application/json" },
    });
  } catch {
    // offline: the reservation runs out by itself; the next renewal tries again
  }
}

// --- live ----------------------------------------------------------------------------------

const section = new LiveSection({
  elementId: "review-body",
  families: data.families,
  matches: (event) =>
    event.type.startsWith("membership.") || event.payload?.work_item === data.work_item,
  onSwap: (fresh) => {
    applyDraft(fresh);
    show(current);
    tick(fresh);
  },
});

applyDraft(body());
show(fromHash() >= 0 ? fromHash() : firstUnjudged());
keepCountingDown();
if (data.may_reserve && data.reserved_for_s < RENEW_MS / 1000) reserve();
setInterval(reserve, RENEW_MS);
followWhileShown(
  new GroupStream({
    group: data.group,
    afterSequence: data.head_sequence,
    onEvent: (event) => section.notify(event),
    onStatus: connectionStatus(document.getElementById("connection-status")),
  }),
);
