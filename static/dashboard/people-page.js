// The People page and a person's page: follow the group's log and, when a WorkItem,
// approval, review, mission or membership event arrives, fetch the cards again (debounced)
// and swap them in place. The decisions below a person's card are a page of the log: the
// "Newer" link reaches what arrived since.

import { connectionStatus, followWhileShown } from "./connection.js";
import { LiveSection } from "./live-section.js";
import { GroupStream } from "./stream.js";

const data = JSON.parse(document.getElementById("people-data").textContent);

const cards = new LiveSection({
  elementId: "person-cards",
  families: data.families,
  inPlace: true,
});

followWhileShown(
  new GroupStream({
    group: data.group,
    afterSequence: data.head_sequence,
    onEvent: (event) => cards.notify(event),
    onStatus: connectionStatus(document.getElementById("connection-status")),
  }),
);
