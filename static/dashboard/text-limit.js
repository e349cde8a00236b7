// Long text says its limit as a limit (issue 34 §6): under every <textarea maxlength>, a
// counter "1,234 of 10,000 characters", kept as the person types. The server still checks
// (a form sent over the limit is answered "22,000 characters; at most 10,000", never as
// "incomplete"); this only lets a person see the limit coming. Textareas swapped in by a
// live update get their counter as they arrive (a MutationObserver).
//
// A person never loses what they typed: once counted, a field's maxlength is lifted (the
// browser cut a longer paste at the limit without a word), so the whole text stays in the
// field, the counter says by how much it is over, and the form is not sent until it is
// shortened, as the decision pages' text-limits.js does for data-limit. With scripts off the
// maxlength stays, and the server states the same limit.

const NEAR = 0.9; // from 90 % of the limit the counter is marked, and read out once

export function limitText(length, limit) {
  const count = (n) => n.toLocaleString("en");
  if (length > limit) return `${count(length)} characters; at most ${count(limit)}`;
  return `${count(length)} of ${count(limit)} characters`;
}

let counters = 0;

function attach(textarea) {
  // a field with data-limit is counted by the decision pages' own text-limits.js
  if (textarea.dataset.limitCounter || textarea.dataset.limit) return;
  const limit = Number(textarea.getAttribute("maxlength"));
  if (!Number.isFinite(limit) || limit <= 0) return;
  textarea.dataset.maxChars = String(limit);
  textarea.removeAttribute("maxlength");
  const counter = document.createElement("p");
  counter.className = "text-limit";
  counter.id = `text-limit-${++counters}`;
  textarea.dataset.limitCounter = counter.id;
  const describedBy = textarea.getAttribute("aria-describedby");
  textarea.setAttribute("aria-describedby", describedBy ? `${describedBy} ${counter.id}` : counter.id);
  textarea.insertAdjacentElement("afterend", counter);
  const update = () => {
    const length = textarea.value.length;
    counter.textContent = limitText(length, limit);
    const near = length >= limit * NEAR;
    const over = length > limit;
    counter.classList.toggle("text-limit--near", near);
    counter.classList.toggle("text-limit--over", over);
    if (over) textarea.setAttribute("aria-invalid", "true");
    else textarea.removeAttribute("aria-invalid");
    // polite and only near the limit: a screen reader is not told every keystroke
    if (near) counter.setAttribute("aria-live", "polite");
    else counter.removeAttribute("aria-live");
  };
  textarea.addEventListener("input", update);
  update();
}

// A form holding a counted field over its limit is not sent: the field is focused and its
// counter says by how much (capture, so it runs before a page's own submit handler).
function holdOverLimit(event) {
  const form = event.target;
  const fields = form.querySelectorAll ? form.querySelectorAll("textarea[data-max-chars]") : [];
  const over = [...fields].find((field) => field.value.length > Number(field.dataset.maxChars));
  if (!over) return;
  event.preventDefault();
  event.stopImmediatePropagation();
  over.focus();
}

export function countLimits(root = document) {
  const found = root.matches && root.matches("textarea[maxlength]") ? [root] : [];
  for (const textarea of [...found, ...root.querySelectorAll("textarea[maxlength]")]) attach(textarea);
}

function watch() {
  document.addEventListener("submit", holdOverLimit, true);
  countLimits();
  new MutationObserver((records) => {
    for (const record of records) {
      for (const node of record.addedNodes) {
        if (node.nodeType === Node.ELEMENT_NODE) countLimits(node);
      }
    }
  }).observe(document.body, { childList: true, subtree: true });
}

if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", watch);
else watch();
