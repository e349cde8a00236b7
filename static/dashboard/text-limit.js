// Long text says its limit as a limit (issue 34 §6): under every <textarea maxlength>, a
// counter "1,234 of 10,000 characters", kept as the person types. The server still checks
// (a form sent over the limit is answered "22,000 characters; at most 10,000", never as
// "incomplete"); this only lets a person see the limit coming. Textareas swapped in by a
// live update get their counter as they arrive (a MutationObserver).

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
    counter.classList.toggle("text-limit--near", near);
    // polite and only near the limit: a screen reader is not told every keystroke
    if (near) counter.setAttribute("aria-live", "polite");
    else counter.removeAttribute("aria-live");
  };
  textarea.addEventListener("input", update);
  update();
}

export function countLimits(root = document) {
  const found = root.matches && root.matches("textarea[maxlength]") ? [root] : [];
  for (const textarea of [...found, ...root.querySelectorAll("textarea[maxlength]")]) attach(textarea);
}

function watch() {
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
