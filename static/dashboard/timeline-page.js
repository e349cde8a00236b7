// The Timeline's newest page, with no filter, follows the log (issue 37 §1): when events
// arrive over the stream, the lines after the newest one shown are fetched in words from the
// server (debounced, one request at a time, bounded to a page) and put on top; the page keeps
// its size. The browser also re-checks each arriving event's hash and its link to the one
// before it (chain.js), as the server did, and says what it found.

import { ChainFollower } from "./chain.js";
import { connectionStatus, followWhileShown } from "./connection.js";
import { debouncedOneAtATime, fetchFragment } from "./live-section.js";
import { GroupStream } from "./stream.js";

const data = JSON.parse(document.getElementById("timeline-live-data").textContent);
const lines = document.getElementById("timeline-lines");
const status = document.getElementById("timeline-live");
const showConnection = connectionStatus(document.getElementById("connection-status"));
const browserVerdicts = new Map(); // sequence -> the browser's verdict
let follower = data.hash ? new ChainFollower(data.after, data.hash) : null;
let newest = data.after;
let checked = 0;

function markBrowser(line) {
  const verdict = browserVerdicts.get(Number(line.dataset.sequence));
  if (verdict) line.dataset.browser = verdict;
}

function sayBrowserCheck() {
  if (follower && follower.firstBreak !== null) {
    status.textContent = `Your browser finds the chain broken at #${follower.firstBreak}.`;
    status.dataset.browser = "broken";
  } else if (checked) {
    const unavailable = [...browserVerdicts.values()].every((seen) => seen === "unavailable");
    status.textContent = unavailable
      ? "New events appear at the top as they happen (your browser cannot re-check them here: hashing needs https)."
      : `New events appear at the top as they happen. Re-checked in your browser: ✓ ${checked} new event${checked === 1 ? "" : "s"}.`;
    status.dataset.browser = unavailable ? "unavailable" : "verified";
  }
}

async function showNewLines() {
  const html = await fetchFragment(`${data.lines_url}?after=${newest}`);
  if (html === null) return;
  const holder = document.createElement("template");
  holder.innerHTML = html;
  const fresh = [...holder.content.querySelectorAll("#timeline-new > li.tl-line")].filter(
    (line) => Number(line.dataset.sequence) > newest,
  );
  if (!fresh.length) return;
  document.getElementById("timeline-empty")?.remove();
  for (const line of fresh) {
    line.classList.add("tl-line--new");
    markBrowser(line);
  }
  lines.prepend(...fresh);
  newest = Number(fresh[0].dataset.sequence);
  // The page keeps its size however long it stays open: the oldest lines go.
  const shown = lines.querySelectorAll(":scope > li.tl-line");
  for (let index = data.page_size; index < shown.length; index += 1) shown[index].remove();
  const head = document.querySelector('[data-field="head"]');
  if (head) head.textContent = String(newest);
  showPage(fresh);
}

// The pagers and the chain's verdict speak of the lines the page shows now.
function showPage(fresh) {
  const shown = lines.querySelectorAll(":scope > li.tl-line");
  const oldest = shown[shown.length - 1].dataset.sequence;
  for (const pager of document.querySelectorAll(".tl-pager")) {
    const range = pager.querySelector(".pager__range");
    if (range) range.textContent = `#${newest} – #${oldest}`;
    const older = pager.querySelector("a.pager__older");
    if (older) older.href = `?before=${oldest}`;
    else if (Number(oldest) > 1) {
      const link = document.createElement("a");
      link.className = "pager__older";
      link.rel = "next";
      link.href = `?before=${oldest}`;
      link.textContent = "Older →";
      pager.querySelector(".pager__older")?.replaceWith(link);
    }
  }
  const chain = document.getElementById("chain-status");
  const broken = fresh.find((line) => line.dataset.verdict !== "verified");
  if (broken && chain) {
    chain.className = "chain-status chain-status--broken";
    chain.dataset.verified = "false";
    chain.replaceChildren(document.createElement("strong"));
    chain.firstChild.textContent = `✗ Chain broken at #${broken.dataset.sequence}`;
    chain.append(": an event's fingerprint or its link to the event before it does not match.");
  } else if (chain?.dataset.verified === "true") {
    const events = `${shown.length} event${shown.length === 1 ? "" : "s"}`;
    const count = chain.querySelector('[data-field="verified-count"]');
    if (count) count.textContent = events;
    else {
      // the page was empty: "Nothing to verify" becomes the verdict on what arrived
      const verdict = document.createElement("strong");
      verdict.textContent = "✓ Verified";
      chain.className = "chain-status chain-status--ok";
      chain.replaceChildren(
        verdict,
        `: each of these ${events} was re-hashed and is linked to the event before it in the log.`,
      );
    }
  }
}

const refresh = debouncedOneAtATime(showNewLines);
let checking = Promise.resolve();

function onEvent(event) {
  // Digests are async: chain them so events are checked strictly in order.
  checking = checking.then(async () => {
    follower = follower || new ChainFollower(event.sequence - 1, event.prev_hash);
    const verdict = await follower.next(event);
    browserVerdicts.set(event.sequence, verdict);
    // only the lines a page can hold are looked up again
    for (const sequence of browserVerdicts.keys()) {
      if (browserVerdicts.size <= 2 * data.page_size) break;
      browserVerdicts.delete(sequence);
    }
    checked += 1;
    const line = document.getElementById(`event-${event.sequence}`);
    if (line) markBrowser(line);
    sayBrowserCheck();
  });
  refresh();
}

followWhileShown(
  new GroupStream({ group: data.group, afterSequence: data.after, onEvent, onStatus: showConnection }),
);
