// The review queue: follow every group the person judges in, and refresh the queue when a
// submission, a piece of evidence, a decision or a reservation arrives in any of them.

import { connectionStatus, followWhileShown } from "./connection.js";
import { keepCountingDown, tick } from "./countdown.js";
import { LiveSection } from "./live-section.js";
import { GroupStream } from "./stream.js";

const data = JSON.parse(document.getElementById("review-queue-data").textContent);
const status = connectionStatus(document.getElementById("connection-status"));

const queue = new LiveSection({
  elementId: "review-queue",
  families: data.families,
  onSwap: (fresh) => tick(fresh),
});

keepCountingDown();
if (!data.groups.length) status("live", "no groups to follow");
for (const { group, head_sequence } of data.groups) {
  followWhileShown(
    new GroupStream({
      group,
      afterSequence: head_sequence,
      onEvent: (event) => queue.notify(event),
      onStatus: status,
    }),
  );
}
