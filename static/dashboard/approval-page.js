// The execution-approval screen: follow the group's log and re-fetch the screen's body when an
// event about this WorkItem (a grant, a refusal, a new revision, a reassignment) or a
// membership change arrives, keeping whatever the person was typing; keep the start-by
// deadline counting down.

import { connectionStatus, followWhileShown } from "./connection.js";
import { keepCountingDown, tick } from "./countdown.js";
import { LiveSection } from "./live-section.js";
import { GroupStream } from "./stream.js";

const data = JSON.parse(document.getElementById("approval-data").textContent);

const body = new LiveSection({
  elementId: "approval-body",
  families: data.families,
  matches: (event) =>
    event.type.startsWith("membership.") || event.payload?.work_item === data.work_item,
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
