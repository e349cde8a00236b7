// The WorkItem page: follow the group's log and refresh the page's body when an event about
// this item, an item it is linked to, its mission, or a membership arrives.

import { connectionStatus, followWhileShown } from "./connection.js";
import { LiveSection } from "./live-section.js";
import { GroupStream } from "./stream.js";

const data = JSON.parse(document.getElementById("work-item-data").textContent);
const related = new Set(data.related);

const body = new LiveSection({
  elementId: "work-item-body",
  families: data.families,
  matches: (event) =>
    event.type.startsWith("membership.") ||
    related.has(event.payload?.work_item) ||
    event.payload?.mission === data.mission,
});

followWhileShown(
  new GroupStream({
    group: data.group,
    afterSequence: data.head_sequence,
    onEvent: (event) => body.notify(event),
    onStatus: connectionStatus(document.getElementById("connection-status")),
  }),
);
