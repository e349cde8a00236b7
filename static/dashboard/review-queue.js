// The review queue: follow every group the person judges in, and refresh the queue when a
// submission, a piece of evidence, a decision or a reservation arrives in any of them.

import { connectionStatus, followWhileShown } from "./connection.js";
import { keepCountingDown, tick } from "./countdown.js";
import { LiveSection } from "./live-section.js";
import { GroupStream } from "./stream.js";

const data = JSON.parse(document.getElementById("review-queue-data").textContent);

// A decision sent from a review page (its redirect names the draft): the draft is done with.
const params = new URLSearchParams(window.location.search);
const sent = params.get("sent");
if (sent) {
  try {
    if (sent.startsWith("mw-review:")) localStorage.removeItem(sent);
  } catch {}
  params.delete("sent");
  const query = params.toString();
  history.replaceState(null, "", window.location.pathname + (query ? "?" + query : ""));
}
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
