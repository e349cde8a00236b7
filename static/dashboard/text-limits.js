// Limits stated as limits (issue 34 §6): a textarea with data-limit="10000" gets a counter
// once its text is long ("2,345 of 10,000 characters"), and over the limit the counter says
// so as a limit ("22,000 characters; at most 10,000") and the form is not sent until the
// text is shortened — nothing is cut off silently, and the server states the same limit
// when scripts are off. Counters live beside their field, so a live refresh that keeps the
// typed text (live-section.js) calls refreshTextLimits on the fresh section.

const LONG_FRACTION = 0.2;

function number(value) {
  return value.toLocaleString("en");
}

function counterFor(field) {
  const id = field.id ? field.id + "-count" : "";
  let counter = id ? document.getElementById(id) : field.nextElementSibling;
  if (!counter || !counter.classList.contains("char-count")) {
    counter = document.createElement("p");
    counter.className = "char-count small";
    counter.setAttribute("aria-live", "polite");
    if (id) counter.id = id;
    field.insertAdjacentElement("afterend", counter);
  }
  return counter;
}

export function countText(field) {
  const limit = Number(field.dataset.limit);
  if (!limit) return;
  const length = field.value.length;
  const counter = counterFor(field);
  const over = length > limit;
  counter.hidden = !over && length < limit * LONG_FRACTION;
  counter.classList.toggle("char-count--over", over);
  counter.textContent = over
    ? `${number(length)} characters; at most ${number(limit)}. Shorten it by ${number(length - limit)} to send it.`
    : `${number(length)} of ${number(limit)} characters`;
  if (over) field.setAttribute("aria-invalid", "true");
  else field.removeAttribute("aria-invalid");
}

export function refreshTextLimits(root = document) {
  for (const field of root.querySelectorAll("textarea[data-limit]")) countText(field);
}

// Watch every limited field of the page, now and after live refreshes (event delegation).
export function watchTextLimits() {
  document.addEventListener("input", (event) => {
    if (event.target instanceof HTMLTextAreaElement && event.target.dataset.limit) {
      countText(event.target);
    }
  });
  document.addEventListener("submit", (event) => {
    const over = [...event.target.querySelectorAll("textarea[data-limit]")].find(
      (field) => field.value.length > Number(field.dataset.limit),
    );
    if (!over) return;
    event.preventDefault();
    event.stopImmediatePropagation();
    countText(over);
    // a page that shows one part at a time brings the field into view first
    over.dispatchEvent(new CustomEvent("mw:over-limit", { bubbles: true }));
    over.focus();
  }, true);
  refreshTextLimits();
}
