// Text a person typed into a form that the page then drops (issue 34 §3, §5): a live update
// removes a form that can no longer succeed — someone else refused the revision, the mission
// was cancelled, a role or the membership was taken away — and the text they typed must not
// go with it. Each typed field is remembered as it changes; when its form is gone after an
// update (or all forms go, on a revocation), the text is shown above the page as "not sent",
// read-only, to copy, until the person discards it. A form that is still there keeps its
// text itself (live-section.js).

function formKeyOf(field) {
  const form = field.closest("form[data-form-key]");
  return form ? form.dataset.formKey + "|" + field.name : null;
}

function labelOf(field) {
  if (field.dataset.unsentLabel) return field.dataset.unsentLabel;
  const label = field.id ? document.querySelector(`label[for="${CSS.escape(field.id)}"]`) : null;
  return (label ? label.textContent : field.name).trim().replace(/\s+/g, " ");
}

function stillOnPage(key) {
  const [formKey, name] = key.split("|");
  return Boolean(
    document.querySelector(
      `form[data-form-key="${CSS.escape(formKey)}"] [name="${CSS.escape(name)}"]`,
    ),
  );
}

export class UnsentText {
  // anchorId: the element the "not sent" box goes before (the page's live section).
  constructor(anchorId) {
    this.anchorId = anchorId;
    this.typed = new Map();
    this.shown = new Map();
    // text the server gave back with its answer (a refused form) counts as typed
    for (const field of document.querySelectorAll("form[data-form-key] textarea")) {
      const key = formKeyOf(field);
      if (key && field.value) this.typed.set(key, { label: labelOf(field), text: field.value });
    }
    document.addEventListener("input", (event) => {
      const field = event.target;
      if (!(field instanceof HTMLTextAreaElement || field instanceof HTMLInputElement)) return;
      if (field instanceof HTMLInputElement && field.type !== "text") return;
      const key = formKeyOf(field);
      if (key) this.typed.set(key, { label: labelOf(field), text: field.value });
    });
    // a form sent is no longer "typed": what happens to it is the server's answer
    document.addEventListener("submit", (event) => {
      for (const key of [...this.typed.keys()]) {
        if (key.startsWith(event.target.dataset?.formKey + "|")) this.typed.delete(key);
      }
    });
  }

  // After a live update: show the text of every form that is gone.
  afterSwap() {
    for (const [key, entry] of this.typed) {
      if (entry.text && !stillOnPage(key)) this.show(key, entry);
    }
  }

  // Every form is about to go (the membership was revoked): keep all typed text.
  keepAll() {
    for (const [key, entry] of this.typed) if (entry.text) this.show(key, entry);
  }

  box() {
    let box = document.getElementById("unsent-text");
    if (box) return box;
    box = document.createElement("section");
    box.id = "unsent-text";
    box.className = "card unsent";
    box.setAttribute("aria-labelledby", "unsent-text-title");
    const title = document.createElement("h2");
    title.id = "unsent-text-title";
    title.textContent = "Your text, not sent";
    const why = document.createElement("p");
    why.className = "small";
    why.textContent =
      "The form you typed into can no longer be sent: the page changed while it was open. " +
      "Your text is kept here, to copy, until you discard it.";
    box.append(title, why);
    const anchor = document.getElementById(this.anchorId);
    (anchor || document.querySelector("main")).before(box);
    return box;
  }

  show(key, entry) {
    this.typed.delete(key);
    const box = this.box();
    const id = "unsent-" + (this.shown.size + 1);
    const label = document.createElement("label");
    label.htmlFor = id;
    label.className = "not-sent__label";
    label.textContent = entry.label + " (not sent)";
    const text = document.createElement("textarea");
    text.id = id;
    text.readOnly = true;
    text.rows = 3;
    text.className = "not-sent__text";
    text.dataset.field = "unsent-text";
    text.value = entry.text;
    const discard = document.createElement("button");
    discard.type = "button";
    discard.className = "button button--secondary button--small";
    discard.textContent = "Discard";
    discard.setAttribute("aria-label", "Discard " + entry.label.toLowerCase());
    const row = document.createElement("div");
    row.className = "unsent__row";
    row.append(label, text, discard);
    discard.addEventListener("click", () => {
      row.remove();
      this.shown.delete(key);
      if (!this.shown.size) box.remove();
    });
    this.shown.get(key)?.remove();
    this.shown.set(key, row);
    box.append(row);
  }
}
