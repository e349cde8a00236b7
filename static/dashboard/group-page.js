// The group page, an overview (issue 37 §1): it follows the group's log live. The counts and
// "Needs attention now" are one bounded server-rendered section, fetched again (debounced)
// when an event that may change them arrives; the approval queue likewise; the mission rows
// are re-rendered one by one (live-rows.js). Every event, in words, is on the Timeline.

import { connectionStatus, followWhileShown } from "./connection.js";
import { keepCountingDown, tick } from "./countdown.js";
import { LiveRows } from "./live-rows.js";
import { LiveSection } from "./live-section.js";
import { GroupStream } from "./stream.js";
import { keepRelativeTimesFresh } from "./times.js";

const data = JSON.parse(document.getElementById("overview-data").textContent);
const showConnection = connectionStatus(document.getElementById("connection-status"));
const overview = new LiveSection({
  elementId: "overview-live",
  families: data.overview_families,
  inPlace: true, // keeps the focus on a link the person is on
});
const queue = new LiveSection({
  elementId: "approval-queue",
  families: data.queue_families,
  onSwap: (fresh) => tick(fresh), // the start-by deadlines
});
const missionRows = new LiveRows({
  element: document.getElementById("missions-rows"),
  liveInserts: true,
  perPage: data.missions_shown,
  principal: data.principal,
});
const missionsTotal = document.querySelector('[data-field="missions-total"]');

// The header's role chips follow the viewer's own membership.
function showRoles(event) {
  const payload = event.payload || {};
  if (!String(event.type).startsWith("membership.") || payload.principal !== data.principal) return;
  if (!Array.isArray(payload.roles)) return;
  const roles = document.querySelector(".group-header .roles");
  roles.replaceChildren(
    ...payload.roles.map((role) => {
      const chip = document.createElement("span");
      chip.className = "role";
      chip.textContent = role;
      return chip;
    }),
  );
}

function onEvent(event) {
  showRoles(event);
  if (event.type === "mission.created") {
    missionsTotal.textContent = String(Number(missionsTotal.textContent) + 1);
    document.getElementById("missions-empty")?.remove();
  }
  overview.notify(event);
  queue.notify(event);
  missionRows.notify(event);
  const total = document.querySelector('[data-field="events-total"]');
  if (total) total.textContent = String(event.sequence);
}

keepRelativeTimesFresh();
keepCountingDown();
followWhileShown(
  new GroupStream({
    group: data.group,
    afterSequence: data.head_sequence,
    onEvent,
    onStatus: showConnection,
  }),
);
