// A group's mission or WorkItem list: follow the log from the head the page was rendered at,
// re-rendering only the rows that events touched (live-rows.js).

import { connectionStatus, followWhileShown } from "./connection.js";
import { LiveRows } from "./live-rows.js";
import { GroupStream } from "./stream.js";

const data = JSON.parse(document.getElementById("list-data").textContent);
const notice = document.getElementById("list-new");
const total = document.querySelector('[data-field="total"]');
const rows = new LiveRows({
  element: document.querySelector("[data-live-rows]"),
  liveInserts: data.live_inserts,
  perPage: data.per_page,
  principal: data.principal,
  onNew: (count) => {
    notice.querySelector('[data-field="count"]').textContent = String(count);
    notice.hidden = false;
  },
});
// The header counts every mission (or WorkItem) of the group, whatever the filters show.
const createdType = rows.kind === "missions" ? "mission.created" : "work.authorized";

function onEvent(event) {
  if (event.type === createdType && total) total.textContent = String(Number(total.textContent) + 1);
  rows.notify(event);
}

followWhileShown(
  new GroupStream({
    group: data.group,
    afterSequence: data.head_sequence,
    onEvent,
    onStatus: connectionStatus(document.getElementById("connection-status")),
  }),
);
