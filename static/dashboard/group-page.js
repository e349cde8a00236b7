// The group page: re-verify the rendered page in the browser, then follow the log live; the
// work section (missions, WorkItems, approvals) is re-fetched when their events arrive.

import { canDigest } from "./canonical.js";
import { ChainFollower } from "./chain.js";
import { connectionStatus, followWhileShown } from "./connection.js";
import { keepCountingDown, tick } from "./countdown.js";
import { LiveSection } from "./live-section.js";
import { GroupStream } from "./stream.js";
import { markBrowserVerdict, renderLiveEvent } from "./timeline.js";
import { keepRelativeTimesFresh } from "./times.js";

const data = JSON.parse(document.getElementById("timeline-data").textContent);
const timeline = document.getElementById("timeline");
const template = document.getElementById("event-template");
const chainStatus = document.getElementById("chain-status");
const showConnection = connectionStatus(document.getElementById("connection-status"));
const work = new LiveSection({
  elementId: "work-items",
  families: data.work_families,
  onSwap: (fresh) => tick(fresh), // the approval queue's start-by deadlines
});

function itemAt(sequence) {
  return timeline.querySelector(`li.event[data-sequence="${sequence}"]`);
}

function showBrowserCheck(follower, count, live = 0) {
  const target = chainStatus.querySelector('[data-field="browser-check"]');
  if (!canDigest) {
    target.textContent = "Your browser cannot re-check it here (hashing needs https).";
    chainStatus.dataset.browser = "unavailable";
  } else if (follower.firstBreak === null) {
    const arrived = live ? ` (${live} arrived live)` : "";
    target.textContent = count ? `Re-checked in your browser: ✓ ${count} event(s)${arrived}.` : "";
    chainStatus.dataset.browser = "verified";
  } else {
    target.textContent = `Your browser finds the chain broken at #${follower.firstBreak}.`;
    chainStatus.dataset.browser = "broken";
    chainStatus.classList.replace("chain-status--ok", "chain-status--broken");
  }
}

async function verifyRenderedPage() {
  const follower = new ChainFollower(data.anchor_sequence, data.anchor_hash);
  for (const event of data.documents) {
    const verdict = await follower.next(event);
    const item = itemAt(event.sequence);
    if (item) markBrowserVerdict(item, verdict);
  }
  showBrowserCheck(follower, data.documents.length);
  return follower;
}

function followNewest(follower) {
  let queue = Promise.resolve();
  let liveCount = 0;
  const onEvent = (event) => {
    work.notify(event);
    // Digests are async: chain them so events are verified and shown strictly in order.
    queue = queue.then(async () => {
      const verdict = await follower.next(event);
      document.getElementById("timeline-empty")?.remove();
      timeline.prepend(renderLiveEvent(template, event, verdict));
      document.getElementById("head-sequence").textContent = "#" + event.sequence;
      liveCount += 1;
      showBrowserCheck(follower, data.documents.length + liveCount, liveCount);
    });
  };
  return new GroupStream({
    group: data.group,
    afterSequence: follower.last.sequence,
    onEvent,
    onStatus: showConnection,
  });
}

function countNewer() {
  // An older page stays as it is; it only says how much newer history has arrived.
  const notice = document.getElementById("newer-notice");
  let count = 0;
  return new GroupStream({
    group: data.group,
    afterSequence: data.head_sequence,
    onEvent: (event) => {
      work.notify(event); // the work section always shows the present, even on an old page
      count += 1;
      document.getElementById("head-sequence").textContent = "#" + event.sequence;
      if (notice) {
        notice.querySelector('[data-field="count"]').textContent = String(count);
        notice.hidden = false;
      }
    },
    onStatus: showConnection,
  });
}

keepRelativeTimesFresh();
keepCountingDown();
const follower = await verifyRenderedPage();
followWhileShown(data.live ? followNewest(follower) : countNewer());
