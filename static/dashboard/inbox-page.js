// The inbox: one GroupStream per group of the person's, and the sections re-fetched whenever
// an event that may change what waits for them arrives in any of those groups (work,
// approvals, missions, reviews, evidence, memberships). The browser never decides what is
// in the inbox; the server renders it again. Countdowns and "waiting since" keep ticking.

import { connectionStatus, followWhileShown } from "./connection.js";
import { keepCountingDown, tick } from "./countdown.js";
import { LiveSection } from "./live-section.js";
import { GroupStream } from "./stream.js";
import { keepRelativeTimesFresh, refreshRelativeTimes } from "./times.js";

const data = JSON.parse(document.getElementById("inbox-data").textContent);
const showConnection = connectionStatus(document.getElementById("connection-status"));

const sections = new LiveSection({
  elementId: "inbox-sections",
  families: data.families,
  onSwap: (fresh) => {
    tick(fresh);
    refreshRelativeTimes(fresh);
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
