// Timeline items: render a live event with the server's own markup (the <template> holds the
// same partial the server renders) and show each verification verdict.

import { absoluteTime, relativeTime } from "./times.js";

// A principal as people read it: the name the server gave the page (names: principal ->
// name), else the part after "user:" / "agent:" — never the prefix (issue 34 §6).
export function nameOf(principal, names = {}) {
  if (names[principal]) return names[principal];
  if (principal === "authority") return "the authority";
  const text = String(principal);
  const colon = text.indexOf(":");
  return colon > 0 ? text.slice(colon + 1) : text;
}

// Same families as apps/dashboard/timeline.py FAMILIES: they pick the badge colour.
const FAMILIES = new Set([
  "mission", "work", "membership", "lease", "approval", "artifact", "evidence", "context",
  "snapshot", "ext",
]);

const LABELS = {
  verified: "✓ verified",
  "hash-mismatch": "✗ hash mismatch",
  "broken-link": "✗ broken link",
  unavailable: "? not checked",
  pending: "…",
};

export function eventFamily(type) {
  const family = String(type).split(".", 1)[0];
  return FAMILIES.has(family) ? family : "other";
}

function field(item, name) {
  return item.querySelector(`[data-field="${name}"]`);
}

function setVerdictChip(item, verdict, label) {
  const chip = field(item, "verdict");
  chip.className = "verdict verdict--" + verdict;
  chip.textContent = label;
}

// A server-rendered event after the browser re-checked it.
export function markBrowserVerdict(item, verdict) {
  item.dataset.browser = verdict;
  const server = item.dataset.verdict;
  if (verdict === "unavailable") return;
  const agree = verdict === server;
  const label = LABELS[server] + (verdict === "verified" ? " · browser ✓" : " · browser ✗");
  setVerdictChip(item, agree ? server : verdict, label);
  item.classList.toggle("event--broken", verdict !== "verified" || server !== "verified");
}

// A live event: only the browser has checked it.
export function renderLiveEvent(template, event, verdict, names = {}) {
  const item = template.content.firstElementChild.cloneNode(true);
  item.dataset.sequence = String(event.sequence);
  item.id = "event-" + event.sequence;
  item.dataset.verdict = verdict;
  item.dataset.browser = verdict;
  item.classList.add("event--new");
  item.classList.toggle("event--broken", verdict !== "verified" && verdict !== "unavailable");
  field(item, "sequence").textContent = "#" + event.sequence;
  const badge = field(item, "type");
  badge.className = "badge badge--" + eventFamily(event.type);
  badge.textContent = event.type;
  const label = verdict === "verified" ? "✓ verified in browser" : LABELS[verdict];
  setVerdictChip(item, verdict, label);
  field(item, "time").setAttribute("datetime", event.recorded_at);
  field(item, "relative").textContent = relativeTime(new Date(event.recorded_at));
  // UTC until local-time.js sees the item arrive and writes the viewer's own time
  const absolute = field(item, "absolute");
  absolute.setAttribute("datetime", event.recorded_at);
  absolute.title = absoluteTime(event.recorded_at);
  absolute.textContent = absoluteTime(event.recorded_at);
  field(item, "actor").textContent = nameOf(event.actor, names);
  field(item, "actor-principal").textContent = event.actor;
  field(item, "command_id").textContent = event.command_id;
  field(item, "payload").textContent = JSON.stringify(event.payload, null, 2);
  field(item, "event_id").textContent = event.event_id;
  field(item, "hash").textContent = event.hash;
  field(item, "prev_hash").textContent = event.prev_hash;
  return item;
}
