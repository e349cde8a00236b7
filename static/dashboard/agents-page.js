// The Agents page and an agent's page: follow the group's log and, when a WorkItem, lease,
// mission or membership event arrives, fetch the cards again (debounced) and swap them in
// place; keep the lease expiries counting down. Presence is not in the log (R11.1-11): a
// card shows it as of its last refresh, with its age.

import { connectionStatus, followWhileShown } from "./connection.js";
import { keepCountingDown, tick } from "./countdown.js";
import { LiveSection } from "./live-section.js";
import { GroupStream } from "./stream.js";

const data = JSON.parse(document.getElementById("agents-data").textContent);

const cards = new LiveSection({
  elementId: "agent-cards",
  families: data.families,
  inPlace: true,
  onSwap: (fresh) => tick(fresh),
});

keepCountingDown();
followWhileShown(
  new GroupStream({
    group: data.group,
    afterSequence: data.head_sequence,
    onEvent: (event) => cards.notify(event),
    onStatus: connectionStatus(document.getElementById("connection-status")),
  }),
);
