// The review screen: one criterion at a time, judged from the keyboard, with the person's
// verdicts and notes kept in this browser (localStorage, one draft per submission) until they
// are sent — so a reload, a live refresh or someone else deciding first loses nothing
// (issue 34 §3). When the submission is decided by someone else, the page says who and when
// (server-rendered) and shows the unsent verdicts until the person discards them. The page
// follows the group's log, refreshes the review when evidence or a decision about this
// WorkItem arrives, keeps the person's reservation alive while they are at it, and enables
// Accept only once every criterion has a verdict and nothing holds it (the server decides
// again on submit).
//
// Without scripts every criterion shows at once and the form works as it is.

import { connectionStatus, followWhileShown } from "./connection.js";
import { keepCountingDown, tick } from "./countdown.js";
import { LiveSection } from "./live-section.js";
import { GroupStream } from "./stream.js";
import { refreshTextLimits } from "./text-limits.js";

const data = JSON.parse(document.getElementById("review-data").textContent);
const posted = JSON.parse(document.getElementById("review-posted").textContent);
const RENEW_MS = 4 * 60 * 1000;
const VERDICT_KEYS = { p: "pass", f: "fail", n: "needs_changes" };
const VERDICT_WORDS = { pass: "Pass", fail: "Fail", needs_changes: "Needs changes" };
const DRAFT_PREFIX = "mw-review:";
const THEN_NEXT_KEY = "mw-review-then-next";
// drafts nobody came back to are forgotten after two weeks
const DRAFT_TTL_MS = 14 * 24 * 3600 * 1000;

// --- the draft -----------------------------------------------------------------------------

function emptyDraft() {
  return { verdicts: {}, notes: {}, summary: "" };
}

function isEmpty(draft) {
  return (
    !Object.keys(draft.verdicts).length &&
    !Object.values(draft.notes).some((note) => note) &&
    !draft.summary
  );
}

function read(key) {
  try {
    const stored = JSON.parse(localStorage.getItem(key));
    if (stored && stored.verdicts && stored.notes) return { ...emptyDraft(), ...stored };
  } catch {
    // unreadable: start afresh
  }
  return emptyDraft();
}

function write(key, draft) {
  try {
    if (isEmpty(draft)) localStorage.removeItem(key);
    else localStorage.setItem(key, JSON.stringify({ ...draft, savedAt: Date.now() }));
  } catch {
    // storage full or disabled: the form still holds what was typed
  }
}

function forget(key) {
  try {
    localStorage.removeItem(key);
  } catch {}
}

function pruneOldDrafts() {
  try {
    for (let i = localStorage.length - 1; i >= 0; i -= 1) {
      const key = localStorage.key(i);
      if (!key || !key.startsWith(DRAFT_PREFIX)) continue;
      const saved = JSON.parse(localStorage.getItem(key))?.savedAt ?? 0;
      if (Date.now() - saved > DRAFT_TTL_MS) localStorage.removeItem(key);
    }
  } catch {}
}

function keyFor(submission) {
  return data.draft_key.replace(/:[^:]*$/, ":" + submission);
}

function body() {
  return document.getElementById("review-body");
}

// A decision this browser sent (the redirect names its draft): the draft has done its job.
const params = new URLSearchParams(window.location.search);
const sent = params.get("sent");
if (sent) {
  if (sent.startsWith(DRAFT_PREFIX)) forget(sent);
  params.delete("sent");
  const query = params.toString();
  history.replaceState(null, "", window.location.pathname + (query ? "?" + query : "") + window.location.hash);
}
pruneOldDrafts();

let draftKey = data.draft_key;
let draft = read(draftKey);
if (posted) {
  // what the server just refused to act on is the latest the person typed
  draft = {
    verdicts: { ...draft.verdicts, ...posted.verdicts },
    notes: { ...draft.notes, ...posted.notes },
    summary: posted.summary || draft.summary,
  };
  write(draftKey, draft);
}

// --- the unsent verdicts of a decided submission ---------------------------------------------

let unsentKey = null;

function showUnsent(key, unsent) {
  const panel = document.getElementById("unsent-draft");
  if (!panel) return;
  unsentKey = key;
  const list = panel.querySelector('[data-field="unsent-list"]');
  list.replaceChildren();
  const criteria = new Set([...data.criteria, ...Object.keys(unsent.verdicts), ...Object.keys(unsent.notes)]);
  for (const criterion of criteria) {
    const verdict = unsent.verdicts[criterion];
    const note = unsent.notes[criterion];
    if (!verdict && !note) continue;
    const item = document.createElement("li");
    const id = document.createElement("code");
    id.textContent = criterion;
    const word = document.createElement("strong");
    word.textContent = VERDICT_WORDS[verdict] || "no verdict";
    item.append(id, " ", word);
    if (note) {
      const text = document.createElement("span");
      text.className = "unsent__note";
      text.textContent = note;
      item.append(" — ", text);
    }
    list.append(item);
  }
  const summary = panel.querySelector('[data-field="unsent-summary"]');
  summary.hidden = !unsent.summary;
  summary.querySelector("span").textContent = unsent.summary || "";
  panel.querySelector("#discard-draft").hidden = false;
  panel.hidden = false;
}

function hideUnsent() {
  const panel = document.getElementById("unsent-draft");
  if (panel) panel.hidden = true;
  unsentKey = null;
}

document.getElementById("discard-draft")?.addEventListener("click", () => {
  if (unsentKey) forget(unsentKey);
  if (unsentKey === draftKey) draft = emptyDraft();
  hideUnsent();
  document.getElementById("review-closed")?.focus?.();
});

// --- the form and the draft --------------------------------------------------------------------

function radios(root, criterion) {
  return root.querySelectorAll(`input[name="verdict-${CSS.escape(criterion)}"]`);
}

function applyDraft(root) {
  if (root.dataset.open !== "true") {
    // decided by someone else: the verdicts the person typed stay, shown as not sent; a
    // decision of their own (from another tab) has made the draft moot
    const closed = root.querySelector("#review-closed");
    if (closed && closed.dataset.decidedByMe === "true") forget(draftKey);
    else if (!isEmpty(draft)) showUnsent(draftKey, draft);
    return;
  }
  const current = keyFor(root.dataset.submission);
  if (current !== draftKey) {
    // a new submission replaced the one the draft was for
    if (!isEmpty(draft)) showUnsent(draftKey, draft);
    draftKey = current;
    draft = read(draftKey);
  }
  for (const criterion of data.criteria) {
    const verdict = draft.verdicts[criterion];
    for (const radio of radios(root, criterion)) radio.checked = radio.value === verdict;
    const note = root.querySelector(`textarea[name="note-${CSS.escape(criterion)}"]`);
    if (note && draft.notes[criterion] !== undefined) note.value = draft.notes[criterion];
  }
  const summary = root.querySelector('textarea[name="summary"]');
  if (summary && draft.summary) summary.value = draft.summary;
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
  updateButtons(root);
}

// Accept once every criterion has a verdict and every verdict passes; Send back once every
// criterion has one and one does not pass; Record once every criterion has one. A button the
// server holds (someone else's reservation, a check owed or failed: data-held) stays disabled
// with the server's reason until a live refresh lifts the hold.
function updateButtons(root) {
  const verdicts = data.criteria.map((criterion) => {
    const checked = [...radios(root, criterion)].find((radio) => radio.checked);
    return checked ? checked.value : null;
  });
  const judged = verdicts.filter(Boolean).length;
  const complete = judged === data.criteria.length;
  const allPass = complete && verdicts.every((verdict) => verdict === "pass");
  const rules = [
    ["#accept-result", complete && allPass],
    ["#send-back", complete && !allPass],
    ["#record-verdicts", complete],
  ];
  let reason = "";
  for (const [selector, ready] of rules) {
    const button = root.querySelector(selector);
    if (!button || button.dataset.held === "true") continue;
    button.disabled = !ready;
  }
  const accept = root.querySelector("#accept-result");
  if (!complete) {
    reason = `Give a verdict on every criterion first: ${judged} of ${data.criteria.length} judged.`;
  } else if (accept && !allPass && accept.dataset.held !== "true") {
    reason = "Accept needs a pass on every criterion; send the result back instead.";
  }
  const why = root.querySelector("#verdicts-why");
  if (why && why.textContent !== reason) why.textContent = reason;
}

document.addEventListener("change", (event) => {
  const field = event.target;
  if (!(field instanceof HTMLInputElement)) return;
  if (field.name === "then_next") {
    try {
      localStorage.setItem(THEN_NEXT_KEY, field.checked ? "on" : "off");
    } catch {}
    return;
  }
  if (field.type !== "radio") return;
  const match = field.name.match(/^verdict-(.+)$/);
  if (!match) return;
  draft.verdicts[match[1]] = field.value;
  write(draftKey, draft);
  showMarks(body());
});

document.addEventListener("input", (event) => {
  const field = event.target;
  if (!(field instanceof HTMLTextAreaElement) || !field.closest("#review-body")) return;
  const match = field.name.match(/^note-(.+)$/);
  if (match) draft.notes[match[1]] = field.value;
  else if (field.name === "summary") draft.summary = field.value;
  else return;
  write(draftKey, draft);
});

// "Then open the next submission": the person's last choice, remembered in this browser.
function applyThenNext(root) {
  const box = root.querySelector('input[name="then_next"]');
  if (!box || posted) return;
  try {
    const remembered = localStorage.getItem(THEN_NEXT_KEY);
    if (remembered) box.checked = remembered === "on";
  } catch {}
}

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

// A note over its limit is brought into view before the form refuses to send it.
document.addEventListener("mw:over-limit", (event) => {
  const section = event.target.closest("section[data-criterion]");
  if (section) show(data.criteria.indexOf(section.dataset.criterion));
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

// The reservation is renewed only while the person is here: the tab is shown and they did
// something on the page since the last renewal. A tab left open and alone lets it run out by
// itself (within a quarter of an hour), so nobody holds the coordinator off by walking away;
// their first sign of life afterwards reserves again, if nobody else holds it by then.
const ACTIVITY = ["keydown", "pointerdown", "pointermove", "wheel", "scroll", "input"];
let activeSinceRenewal = true;
let lapsing = false;

function noteActivity() {
  activeSinceRenewal = true;
  if (lapsing && !document.hidden) {
    lapsing = false;
    reserve();
  }
}

function renewIfHere() {
  if (activeSinceRenewal && !document.hidden) {
    activeSinceRenewal = false;
    reserve();
  } else {
    lapsing = true;
  }
}

// Whether this page holds the person's reservation, as far as it knows.
let holding = data.reserved_for_s > 0;

async function reserve() {
  if (!data.may_reserve || document.hidden || body().dataset.open !== "true") return;
  try {
    const response = await fetch(data.reserve_url, {
      method: "POST",
      credentials: "same-origin",
      headers: { "X-CSRFToken": csrfToken(), Accept: "application/json" },
      body: new URLSearchParams({ page: data.page_token }), // this page now holds it
    });
    holding = response.ok;
  } catch {
    // offline: the reservation runs out by itself; the next renewal tries again
  }
}

// Leaving the page gives the reservation back at once, so a glance at a submission holds
// nobody off: the reservation is for the person at work on it. Not when the page's own
// forms send a decision, a skip or an ask: the decision ends it, Skip gives it back itself,
// and an ask comes back to this page. A reload or the back button reserves again.
const FORM_SENT_WITHIN_MS = 5000;
let formSentAt = -Infinity;
document.addEventListener("submit", () => (formSentAt = performance.now()), true);

function release() {
  if (!holding || !data.release_url) return;
  if (performance.now() - formSentAt < FORM_SENT_WITHIN_MS) return;
  holding = false;
  fetch(data.release_url, {
    method: "POST",
    credentials: "same-origin",
    keepalive: true, // outlives the page it leaves
    headers: { "X-CSRFToken": csrfToken(), Accept: "application/json" },
    // only if this page still holds it: a reload's new page may have reserved already
    body: new URLSearchParams({ page: data.page_token }),
  }).catch(() => {});
}

// A reload or the back button: this page's own leaving just gave the reservation back.
function returning() {
  const [entry] = performance.getEntriesByType("navigation");
  return entry !== undefined && (entry.type === "reload" || entry.type === "back_forward");
}

// --- live ----------------------------------------------------------------------------------

const section = new LiveSection({
  elementId: "review-body",
  families: data.families,
  matches: (event) =>
    event.type.startsWith("membership.") || event.payload?.work_item === data.work_item,
  onSwap: (fresh) => {
    const thenNext = document.querySelector('input[name="then_next"]')?.checked;
    applyDraft(fresh);
    const box = fresh.querySelector('input[name="then_next"]');
    if (box && thenNext !== undefined) box.checked = thenNext;
    show(current);
    tick(fresh);
    refreshTextLimits(fresh);
  },
});

applyDraft(body());
applyThenNext(body());
show(fromHash() >= 0 ? fromHash() : firstUnjudged());
keepCountingDown();
refreshTextLimits(); // the drafted notes just put back fire no input event
if (data.may_reserve && (!data.reserved_just_now || returning())) reserve();
window.addEventListener("pagehide", release);
window.addEventListener("pageshow", (event) => {
  if (event.persisted) reserve(); // back from the browser's page cache
});
for (const kind of ACTIVITY) {
  window.addEventListener(kind, noteActivity, { passive: true, capture: true });
}
document.addEventListener("visibilitychange", () => {
  if (!document.hidden) noteActivity();
});
setInterval(renewIfHere, RENEW_MS);
followWhileShown(
  new GroupStream({
    group: data.group,
    afterSequence: data.head_sequence,
    onEvent: (event) => section.notify(event),
    onStatus: connectionStatus(document.getElementById("connection-status")),
  }),
);
