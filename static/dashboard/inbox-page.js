// The inbox: one GroupStream per group of the person's, and the sections re-fetched whenever
// an event that may change what waits for them arrives in any of those groups (work,
// approvals, missions, reviews, evidence, memberships). The browser never decides what is
// in the inbox; the server renders it again. Countdowns and "waiting since" keep ticking.
//
// A refresh is brought in in place (morph.js): the link or button a person is on keeps the
// focus, the page does not scroll, open disclosures stay open (issue 34 §5). What changed is
// said once, politely (#inbox-announcer, aria-live). An entry that left while it had the
// focus hands it to its section's heading, never to <body>.
//
// The filters, snoozes and the bulk final approval are plain forms (issue 37 §5): they work
// without this script, which only tells the server the browser's time zone for snoozes.

import { connectionStatus, followWhileShown } from "./connection.js";
import { keepCountingDown, tick } from "./countdown.js";
import { LiveSection } from "./live-section.js";
import { GroupStream } from "./stream.js";
import { keepRelativeTimesFresh, refreshRelativeTimes } from "./times.js";

const data = JSON.parse(document.getElementById("inbox-data").textContent);
const showConnection = connectionStatus(document.getElementById("connection-status"));

const announcer = document.getElementById("inbox-announcer");

function counts(root) {
  const found = new Map();
  for (const section of root.querySelectorAll("[data-section]")) {
    const title =
      section.querySelector(".inbox-section__title")?.firstChild?.textContent.trim() || section.dataset.section;
    found.set(section.dataset.section, { title, count: Number(section.dataset.count) });
  }
  return found;
}

let shown = counts(document.getElementById("inbox-sections"));
let focusedSection = null;
document.getElementById("inbox-sections").addEventListener("focusin", (event) => {
  focusedSection = event.target.closest("[data-section]")?.dataset.section || null;
});

function announceChanges(root) {
  const now = counts(root);
  const said = [];
  for (const [key, { title, count }] of now) {
    const before = shown.get(key);
    if (before && before.count !== count) said.push(`${title}: ${count} (was ${before.count})`);
  }
  shown = now;
  if (said.length) announcer.textContent = `Inbox updated. ${said.join("; ")}.`;
}

function keepFocus(root, focused) {
  if (!focused || document.contains(focused) || !focusedSection) return;
  root.querySelector(`[data-section="${focusedSection}"] .inbox-section__title`)?.focus({ preventScroll: true });
}

const sections = new LiveSection({
  elementId: "inbox-sections",
  families: data.families,
  inPlace: true,
  onSwap: (root, focused) => {
    tick(root);
    refreshRelativeTimes(root);
    keepFocus(root, focused);
    announceChanges(root);
  },
});

// One pill for several sockets: live only when every group's stream is.
const states = new Map();
function onStatus(group) {
  return (state, label) => {
    states.set(group, state);
    const all = [...states.values()];
    if (all.every((s) => s === "live")) showConnection("live", "live");
    else if (all.includes("revoked")) showConnection("revoked", "a membership was revoked");
    else showConnection(state, label);
  };
}

// "Snooze until tomorrow 09:00" means the person's own morning: tell the server their zone.
const zone = document.querySelector('[data-field="snooze-zone"]');
if (zone) zone.value = Intl.DateTimeFormat().resolvedOptions().timeZone || "";

keepCountingDown();
keepRelativeTimesFresh();
if (data.groups.length === 0) {
  showConnection("offline", "no groups to follow");
}
for (const { group, head_sequence: headSequence } of data.groups) {
  states.set(group, "connecting");
  followWhileShown(
    new GroupStream({
      group,
      afterSequence: headSequence,
      onEvent: (event) => sections.notify(event),
      onStatus: onStatus(group),
      // a revoked membership: the group's entries leave the inbox
      onRefused: () => sections.refresh(),
    }),
  );
}
