// The group page: re-verify the rendered page in the browser, then follow the log live. The
// approval queue (bounded) is re-fetched when its events arrive; the mission rows are
// re-rendered one by one (live-rows.js); the newest page of the log keeps its size, the
// oldest events falling off as new ones arrive, and its counter follows the head.

import { canDigest } from "./canonical.js";
import { ChainFollower } from "./chain.js";
import { connectionStatus, followWhileShown } from "./connection.js";
import { keepCountingDown, tick } from "./countdown.js";
import { LiveRows } from "./live-rows.js";
import { LiveSection } from "./live-section.js";
import { GroupStream } from "./stream.js";
import { markBrowserVerdict, renderLiveEvent } from "./timeline.js";
import { keepRelativeTimesFresh } from "./times.js";

const data = JSON.parse(document.getElementById("timeline-data").textContent);
const timeline = document.getElementById("timeline");
const template = document.getElementById("event-template");
const chainStatus = document.getElementById("chain-status");
const showConnection = connectionStatus(document.getElementById("connection-status"));
const queue = new LiveSection({
  elementId: "approval-queue",
  families: data.queue_families,
  onSwap: (fresh) => tick(fresh), // the start-by deadlines
});
const missionRows = new LiveRows({
  element: document.getElementById("missions-rows"),
  liveInserts: true,
  perPage: data.missions_shown,
  principal: data.principal,
});
const missionsTotal = document.querySelector('[data-field="missions-total"]');

// The header's role chips follow the viewer's own membership.
function showRoles(event) {
  const payload = event.payload || {};
  if (!String(event.type).startsWith("membership.") || payload.principal !== data.principal) return;
  if (!Array.isArray(payload.roles)) return;
  const roles = document.querySelector(".group-header .roles");
  roles.replaceChildren(
    ...payload.roles.map((role) => {
      const chip = document.createElement("span");
      chip.className = "role";
      chip.textContent = role;
      return chip;
    }),
  );
}

// What the work column does with each event, on any page of the log: it shows the present.
function followWork(event) {
  showRoles(event);
  if (event.type === "mission.created") {
    missionsTotal.textContent = String(Number(missionsTotal.textContent) + 1);
    document.getElementById("missions-empty")?.remove();
  }
  queue.notify(event);
  missionRows.notify(event);
}

// The pagers of the newest page: "#newest – #oldest of head", and "Older →" from the oldest.
function showRange(head) {
  const events = timeline.querySelectorAll("li.event");
  if (!events.length) return;
  const newest = events[0].dataset.sequence;
  const oldest = events[events.length - 1].dataset.sequence;
  for (const pager of document.querySelectorAll("[data-pager]")) {
    pager.querySelector('[data-field="range"]').hidden = false;
    pager.querySelector('[data-field="newest"]').textContent = newest;
    pager.querySelector('[data-field="oldest"]').textContent = oldest;
    pager.querySelector('[data-field="head"]').textContent = String(head);
    const older = pager.querySelector('[data-field="older"]');
    if (older) older.href = `?before=${oldest}`;
    else if (Number(oldest) > 1) {
      const off = pager.querySelector('[data-field="older-off"]');
      const link = document.createElement("a");
      link.className = "pager__older";
      link.rel = "next";
      link.dataset.field = "older";
      link.href = `?before=${oldest}`;
      link.textContent = "Older →";
      off?.replaceWith(link);
    }
  }
}

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
    followWork(event);
    // Digests are async: chain them so events are verified and shown strictly in order.
    queue = queue.then(async () => {
      const verdict = await follower.next(event);
      document.getElementById("timeline-empty")?.remove();
      timeline.prepend(renderLiveEvent(template, event, verdict, data.names));
      // The page keeps its size however long it stays open: the oldest event goes.
      const shown = timeline.querySelectorAll("li.event");
      if (shown.length > data.page_size) shown[shown.length - 1].remove();
      showRange(event.sequence);
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
      followWork(event); // the work column always shows the present, even on an old page
      count += 1;
      document.getElementById("head-sequence").textContent = "#" + event.sequence;
      for (const head of document.querySelectorAll('[data-pager] [data-field="head"]')) {
        head.textContent = String(event.sequence);
      }
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
