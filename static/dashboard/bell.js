// The bell in the header (issue 36 §2): its unread count follows /ws/notifications/, which
// sends {"unread": n, "shown": "n", "label": "n unread notifications"} on connect and whenever
// the count changes. Without this script the bell is still a link whose name and badge say
// the count of when the page was rendered. Reconnects with backoff; stops while the page is
// hidden in the back/forward cache. Each change is also dispatched on the document as
// "mwp:unread" (the notifications page offers to show what came in).

const MAX_DELAY_MS = 30000;

function bellUrl(location = window.location) {
  const scheme = location.protocol === "https:" ? "wss://" : "ws://";
  return scheme + location.host + "/ws/notifications/";
}

function show(bell, state) {
  const count = bell.querySelector("[data-bell-count]");
  const before = Number(bell.dataset.unread || 0);
  bell.dataset.unread = String(state.unread);
  bell.classList.toggle("bell--unread", state.unread > 0);
  bell.setAttribute("aria-label", state.label);
  bell.title = state.label;
  if (count) {
    count.textContent = state.shown;
    count.hidden = state.unread === 0;
  }
  if (state.unread !== before) {
    document.dispatchEvent(new CustomEvent("mwp:unread", { detail: { ...state, before } }));
  }
}

function follow(bell) {
  let socket = null;
  let attempt = 0;
  let timer = null;
  let stopped = false;

  function connect() {
    socket = new WebSocket(bellUrl());
    socket.addEventListener("open", () => {
      attempt = 0;
      bell.dataset.live = "true";
    });
    socket.addEventListener("message", (message) => {
      let state;
      try {
        state = JSON.parse(message.data);
      } catch {
        return;
      }
      if (typeof state.unread === "number") show(bell, state);
    });
    socket.addEventListener("close", () => {
      bell.dataset.live = "false";
      if (stopped) return;
      const base = Math.min(MAX_DELAY_MS, 1000 * 2 ** attempt);
      attempt += 1;
      timer = setTimeout(connect, Math.round(base / 2 + Math.random() * (base / 2)));
    });
  }

  window.addEventListener("pagehide", () => {
    stopped = true;
    clearTimeout(timer);
    if (socket) socket.close();
  });
  window.addEventListener("pageshow", (event) => {
    if (!event.persisted) return;
    stopped = false;
    attempt = 0;
    connect();
  });
  connect();
}

const bell = document.querySelector("[data-bell]");
if (bell && "WebSocket" in window) follow(bell);
