// The final-approval screen follows the group's log (issue 34 §5): another person's approval,
// a cancel, a WorkItem that moves, a role taken away — any event about this mission, one of
// its WorkItems or a membership — re-fetches the screen's body within a second, and the
// server drops the approval form once it can no longer succeed. The comment the person typed
// stays in the form while the form stays; when the form goes (or the whole membership is
// revoked), the comment is shown as "not sent", to copy. Long comments count against their
// limit.

import { connectionStatus, followWhileShown } from "./connection.js";
import { LiveSection } from "./live-section.js";
import { GroupStream } from "./stream.js";
import { refreshTextLimits } from "./text-limits.js";
import { UnsentText } from "./unsent-text.js";

const data = JSON.parse(document.getElementById("final-approval-data").textContent);
const workItems = new Set(data.work_items);
const unsent = new UnsentText("final-approval");
const status = connectionStatus(document.getElementById("connection-status"));

const body = new LiveSection({
  elementId: "final-approval",
  families: data.families,
  matches: (event) =>
    event.type.startsWith("membership.") ||
    event.payload?.mission === data.mission ||
    workItems.has(event.payload?.work_item),
  onSwap: (fresh) => {
    for (const node of fresh.querySelectorAll("[data-work-item]")) workItems.add(node.dataset.workItem);
    refreshTextLimits(fresh);
    unsent.afterSwap();
  },
});

followWhileShown(
  new GroupStream({
    group: data.group,
    afterSequence: data.head_sequence,
    onEvent: (event) => body.notify(event),
    onStatus: (state, label) => {
      if (state === "revoked") unsent.keepAll();
      status(state, label);
    },
  }),
);
