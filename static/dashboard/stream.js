// The websocket of wire.md §7 for one group: subscribe after the last sequence seen, hand each
// new event over once (duplicates around a reconnect are dropped by sequence), and reconnect
// with exponential backoff. The browser authenticates with its Django session cookie.

const MAX_DELAY_MS = 30000;

export function streamUrl(location = window.location) {
  const scheme = location.protocol === "https:" ? "wss://" : "ws://";
  return scheme + location.host + "/ws/v1/stream";
}

export class GroupStream {
  constructor({ group, afterSequence, onEvent, onStatus, onRefused, url = streamUrl() }) {
    this.group = group;
    this.lastSequence = afterSequence;
    this.onEvent = onEvent;
    this.onStatus = onStatus;
    this.onRefused = onRefused;
    this.url = url;
    this.attempt = 0;
    this.stopped = false;
    this.socket = null;
    this.timer = null;
  }

  start() {
    this.stopped = false;
    this.connect();
  }

  stop() {
    this.stopped = true;
    clearTimeout(this.timer);
    if (this.socket) this.socket.close();
  }

  connect() {
    this.onStatus("connecting", "connecting…");
    const socket = new WebSocket(this.url);
    this.socket = socket;
    socket.addEventListener("open", () => {
      this.attempt = 0;
      socket.send(
        JSON.stringify({ op: "SUBSCRIBE", group: this.group, afterSequence: this.lastSequence }),
      );
      this.onStatus("live", "live");
    });
    socket.addEventListener("message", (message) => this.receive(message.data));
    socket.addEventListener("close", () => this.scheduleReconnect());
  }

  receive(text) {
    let frame;
    try {
      frame = JSON.parse(text);
    } catch {
      return;
    }
    if (frame.op === "EVENT" && frame.event && frame.event.group === this.group) {
      // Sequences within a group arrive in order without gaps; anything at or below the
      // last one seen is a duplicate from a resubscription.
      if (frame.event.sequence <= this.lastSequence) return;
      this.lastSequence = frame.event.sequence;
      this.onEvent(frame.event);
    } else if (frame.op === "ERROR" && (!frame.group || frame.group === this.group)) {
      if (frame.code === "NOT_A_MEMBER") {
        this.stop();
        this.onStatus("revoked", "membership revoked");
      }
      if (this.onRefused) this.onRefused(frame);
    }
  }

  scheduleReconnect() {
    if (this.stopped) return;
    const base = Math.min(MAX_DELAY_MS, 500 * 2 ** this.attempt);
    const delay = Math.round(base / 2 + Math.random() * (base / 2));
    this.attempt += 1;
    this.onStatus("reconnecting", "reconnecting in " + Math.ceil(delay / 1000) + " s");
    this.timer = setTimeout(() => this.connect(), delay);
  }
}
