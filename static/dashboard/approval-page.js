// The execution-approval screen: follow the group's log and re-fetch the screen's body when an
// event about this WorkItem (a grant, a refusal, a new revision, a reassignment, a cancel) or
// a membership change arrives, keeping whatever the person was typing in a form that can
// still succeed — and, in one that can no longer (someone else refused first, a role was
// taken away, the membership revoked), showing their text as "not sent" instead of dropping
// it; keep the start-by deadline counting down; count long comments against their limit.

import { connectionStatus, followWhileShown } from "./connection.js";
import { keepCountingDown, tick } from "./countdown.js";
import { LiveSection } from "./live-section.js";
import { GroupStream } from "./stream.js";
import { refreshTextLimits } from "./text-limits.js";
import { UnsentText } from "./unsent-text.js";

const data = JSON.parse(document.getElementById("approval-data").textContent);
const unsent = new UnsentText("approval-body");
const status = connectionStatus(document.getElementById("connection-status"));

const body = new LiveSection({
  elementId: "approval-body",
  families: data.families,
  matches: (event) =>
    event.type.startsWith("membership.") || event.payload?.work_item === data.work_item,
  onSwap: (fresh) => {
    tick(fresh);
    refreshTextLimits(fresh);
    unsent.afterSwap();
  },
});

keepCountingDown();
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
