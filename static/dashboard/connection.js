// The "live / reconnecting / revoked" pill in a page's header.

export function connectionStatus(element) {
  return (state, label) => {
    element.dataset.state = state;
    element.querySelector('[data-field="label"]').textContent = label;
  };
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
