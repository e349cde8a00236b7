// The "live / reconnecting / revoked" pill in a page's header, and what a page does when the
// viewer's membership is revoked while it is open (issue 13 §2).

export function connectionStatus(element) {
  return (state, label) => {
    element.dataset.state = state;
    element.querySelector('[data-field="label"]').textContent = label;
    if (state === "revoked") dropActions();
  };
}

// The membership is gone: every form goes from the page — those that would act in the group
// (the write path would refuse them anyway) and the searches that would lead to a 404 — and
// the page says why. What it already shows stays readable.
export function dropActions(root = document.querySelector("main")) {
  if (!root || document.body.dataset.membership === "revoked") return;
  document.body.dataset.membership = "revoked";
  for (const form of root.querySelectorAll("form")) form.remove();
  for (const actions of root.querySelectorAll(".mission-actions, [data-member-action]")) actions.remove();
  // The roles the header names are no longer held.
  for (const roles of root.querySelectorAll(".group-header .roles")) {
    const chip = document.createElement("span");
    chip.className = "role role--revoked";
    chip.textContent = "membership revoked";
    roles.replaceChildren(chip);
  }
  const notice = document.createElement("p");
  notice.className = "note note--refused revoked-notice";
  notice.setAttribute("role", "alert");
  notice.dataset.field = "revoked-notice";
  notice.textContent =
    "Your membership of this group was revoked: you can no longer act here, and this page " +
    "no longer follows the group.";
  root.prepend(notice);
}

// Stop the stream when the page goes away; resume after the last event seen when the
// page comes back from the back/forward cache.
export function followWhileShown(stream) {
  stream.start();
  window.addEventListener("pagehide", () => stream.stop());
  window.addEventListener("pageshow", (event) => {
    if (event.persisted) stream.start();
  });
}
