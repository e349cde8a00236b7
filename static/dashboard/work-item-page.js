// The WorkItem page: follow the group's log and refresh the page's body when an event about
// this item, an item it is linked to, its mission, a mission whose budget it shows, or a
// membership arrives; keep the lease's expiry (and a retry's backoff) counting down.

import { connectionStatus, followWhileShown } from "./connection.js";
import { keepCountingDown, tick } from "./countdown.js";
import { LiveSection } from "./live-section.js";
import { GroupStream } from "./stream.js";

const data = JSON.parse(document.getElementById("work-item-data").textContent);
const related = new Set(data.related);
const missions = new Set([data.mission, ...data.missions]);

const body = new LiveSection({
  elementId: "work-item-body",
  families: data.families,
  matches: (event) =>
    event.type.startsWith("membership.") ||
    related.has(event.payload?.work_item) ||
    missions.has(event.payload?.mission) ||
    (event.payload?.charged_missions ?? []).some((mission) => missions.has(mission)),
  onSwap: (fresh) => tick(fresh),
});

keepCountingDown();
followWhileShown(
  new GroupStream({
    group: data.group,
    afterSequence: data.head_sequence,
    onEvent: (event) => body.notify(event),
    onStatus: connectionStatus(document.getElementById("connection-status")),
  }),
);
