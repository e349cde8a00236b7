// Countdowns to a time the server rendered: a lease's expiry, a retry's backoff, a start
// deadline. Each element carries data-countdown (the target, a wire.md timestamp) and
// data-server-now (the server's clock when it rendered the page), so a browser whose clock is
// off still counts the server's time. Every second the text is rewritten; once the target is
// behind, the element shows its data-passed-text ("expired") and gets data-passed="true".
// Counting down decides nothing: only the authority ends a lease (R11.5-01).

// "2026-11-30T10:00:00.123456Z": Date.parse is only specified for milliseconds.
function parseWireTime(text) {
  return Date.parse(String(text).replace(/\.(\d{3})\d*Z$/, ".$1Z"));
}

// The one place the words are written (the server renders the target, never the words):
// whole seconds, rounded up, so "0 s left" never shows while time remains.
export function remainingText(ms) {
  const left = Math.ceil(ms / 1000);
  const hours = Math.floor(left / 3600);
  const minutes = Math.floor((left % 3600) / 60);
  const seconds = left % 60;
  if (hours) return `${hours} h ${minutes} min left`;
  if (minutes) return `${minutes} min ${seconds} s left`;
  return `${seconds} s left`;
}

// How far the server's clock is ahead of this browser's, measured when the element is first
// seen (off by the time the page took to arrive, a few milliseconds).
function skewOf(element) {
  if (element.dataset.skewMs === undefined) {
    const server = parseWireTime(element.dataset.serverNow);
    element.dataset.skewMs = String(Number.isNaN(server) ? 0 : server - Date.now());
  }
  return Number(element.dataset.skewMs);
}

export function tick(root = document) {
  for (const element of root.querySelectorAll("[data-countdown]")) {
    const target = parseWireTime(element.dataset.countdown);
    if (Number.isNaN(target)) continue;
    const left = target - (Date.now() + skewOf(element));
    if (left > 0) {
      element.textContent = remainingText(left);
      delete element.dataset.passed;
      element.classList.remove("countdown--passed");
    } else {
      element.textContent = element.dataset.passedText || "expired";
      element.dataset.passed = "true";
      element.classList.add("countdown--passed");
    }
  }
}

// One timer for the whole page: elements swapped in by a live refresh are found on the next
// tick (or at once, when the caller ticks the fresh section).
export function keepCountingDown(intervalMs = 1000) {
  tick();
  return setInterval(() => tick(), intervalMs);
}
