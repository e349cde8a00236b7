// Long text says its limit as a limit (issue 34 §6), the same way on every page. One module
// for every limited field: a <textarea maxlength> (any form of the dashboard) and a
// <textarea data-limit> (the decision screens, whose fields carry no maxlength) are counted
// alike, with one counter, one wording and one class family (.text-limit, dashboard.css).
// base.html loads it on every page; the decision pages import refreshTextLimits from it
// too (the same module, run once).
//
// The counter reads "2,345 of 10,000 characters". It shows once the text reaches a fifth of
// the limit, and always over it. Why that rule: a short note never meets its limit, and a
// review page holds one note per criterion, so "0 of 10,000 characters" under every empty
// field would be noise; from a fifth a person writing at length sees the limit well before
// it matters (a screen reader still hears the limit: the hidden counter is the field's
// description). A page's static limit note ([data-limit-note], "At most 10,000
// characters.", there for a page without scripts) is hidden while the counter shows, so the
// limit is said once. From 90 % the counter is marked and read out politely (not every keystroke
// before that). Over the limit it says "10,250 characters; at most 10,000. Shorten it by 250
// to send it." and the field is marked invalid.
//
// A person never loses what they typed: once counted, a field's maxlength is lifted (the
// browser cut a longer paste at the limit without a word) and its limit kept in data-limit,
// so the whole text stays in the field. A form holding a field over its limit is not sent
// (a capture-phase submit listener, before a page's own handler): the field is focused, and
// `mw:over-limit` is dispatched on it first so a page that shows one part at a time
// (review-page.js) brings it into view. The server still checks and states the same limit;
// with scripts off nothing here runs and the maxlength stays in the HTML.
//
// Live updates: a MutationObserver recounts whenever elements come or go, which covers a
// section swapped in (live-section.js) and one updated in place (morph.js puts back the
// server's maxlength and aria-describedby and drops the counter it does not know).
// refreshTextLimits(root) recounts at once, for a page module that has just set a field's
// text itself (a restored draft fires no input event). Counting is idempotent: a field's
// counter is found again (by id) rather than made twice, and nothing is written when
// nothing changed, so the observer never feeds itself.

const LONG = 0.2; // from a fifth of the limit the counter shows
const NEAR = 0.9; // from 90 % it is marked, and read out politely

const LIMITED = "textarea[maxlength], textarea[data-limit]";

const number = (value) => value.toLocaleString("en");

// The words of the counter for `length` characters against `limit`.
export function limitText(length, limit) {
  if (length > limit) {
    return (
      `${number(length)} characters; at most ${number(limit)}. ` +
      `Shorten it by ${number(length - limit)} to send it.`
    );
  }
  return `${number(length)} of ${number(limit)} characters`;
}

// The field's limit, its maxlength lifted (kept as data-limit); 0 when it has none.
function limitOf(field) {
  const limits = [field.getAttribute("maxlength"), field.dataset.limit]
    .map(Number)
    .filter((limit) => Number.isFinite(limit) && limit > 0);
  if (!limits.length) return 0;
  const limit = Math.min(...limits);
  if (field.dataset.limit !== String(limit)) field.dataset.limit = String(limit);
  if (field.hasAttribute("maxlength")) field.removeAttribute("maxlength");
  return limit;
}

const counters = new WeakMap(); // field -> its counter, for a field without an id
let made = 0;

function counterOf(field) {
  let counter = field.id
    ? document.getElementById(`${field.id}-counter`)
    : counters.get(field);
  if (!counter || !counter.isConnected) {
    counter = document.createElement("p");
    counter.className = "text-limit";
    counter.id = field.id ? `${field.id}-counter` : `text-limit-${++made}`;
    counters.set(field, counter);
    field.insertAdjacentElement("afterend", counter);
  }
  const described = (field.getAttribute("aria-describedby") || "").split(/\s+/).filter(Boolean);
  if (!described.includes(counter.id)) {
    field.setAttribute("aria-describedby", [...described, counter.id].join(" "));
  }
  return counter;
}

function toggleAttribute(element, name, value, on) {
  if (on && element.getAttribute(name) !== value) element.setAttribute(name, value);
  else if (!on && element.hasAttribute(name)) element.removeAttribute(name);
}

// The static notes of the field's limit ([data-limit-note] among what describes it): the
// words the server writes for a page without scripts.
function limitNotes(field) {
  const ids = (field.getAttribute("aria-describedby") || "").split(/\s+/).filter(Boolean);
  return ids
    .map((id) => document.getElementById(id))
    .filter(Boolean)
    .flatMap((element) => [
      ...(element.matches("[data-limit-note]") ? [element] : []),
      ...element.querySelectorAll("[data-limit-note]"),
    ]);
}

// Count one field: its counter made or found, its words, marks and validity brought up to date.
export function countText(field) {
  const limit = limitOf(field);
  if (!limit) return;
  const counter = counterOf(field);
  const length = field.value.length;
  const over = length > limit;
  const near = length >= limit * NEAR;
  const words = limitText(length, limit);
  if (counter.textContent !== words) counter.textContent = words;
  const hidden = !over && length < limit * LONG;
  if (counter.hidden !== hidden) counter.hidden = hidden;
  // the page's own "At most 10,000 characters." steps aside while the counter says it
  for (const note of limitNotes(field)) {
    if (note.hidden === hidden) note.hidden = !hidden;
  }
  counter.classList.toggle("text-limit--near", near && !over);
  counter.classList.toggle("text-limit--over", over);
  // polite and only near the limit: a screen reader is not told every keystroke
  toggleAttribute(counter, "aria-live", "polite", near);
  toggleAttribute(field, "aria-invalid", "true", over);
}

// Count every limited field in `root` (and `root` itself if it is one).
export function refreshTextLimits(root = document) {
  if (root instanceof Element && root.matches(LIMITED)) countText(root);
  for (const field of root.querySelectorAll(LIMITED)) countText(field);
}

function isLimited(target) {
  return target instanceof HTMLTextAreaElement && target.matches(LIMITED);
}

function holdOverLimit(event) {
  const form = event.target;
  if (!(form instanceof HTMLFormElement)) return;
  const over = [...form.elements].find(
    (field) => isLimited(field) && field.value.length > limitOf(field),
  );
  if (!over) return;
  event.preventDefault();
  event.stopImmediatePropagation();
  countText(over);
  over.dispatchEvent(new CustomEvent("mw:over-limit", { bubbles: true }));
  over.focus();
}

function elementsCameOrWent(records) {
  const element = (node) => node.nodeType === Node.ELEMENT_NODE;
  return records.some(
    (record) => [...record.addedNodes].some(element) || [...record.removedNodes].some(element),
  );
}

function watch() {
  document.addEventListener("input", (event) => {
    if (isLimited(event.target)) countText(event.target);
  });
  document.addEventListener("submit", holdOverLimit, true);
  refreshTextLimits();
  new MutationObserver((records) => {
    if (elementsCameOrWent(records)) refreshTextLimits();
  }).observe(document.body, { childList: true, subtree: true });
}

// once per document, however the module is reached
const WATCHING = Symbol.for("mw:text-limits");
if (!window[WATCHING]) {
  window[WATCHING] = true;
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", watch);
  else watch();
}
