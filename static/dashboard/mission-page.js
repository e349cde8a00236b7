// The mission page: follow the group's log and refresh the page's body when an event about
// this mission, one of its WorkItems, a same-group child mission, a charge to it, or a
// membership arrives (the body is rendered by the server; the browser never rebuilds it).
// A cancel reason typed into a form the refresh drops (someone else ended the mission, a
// role was taken away, the membership revoked) is shown as "not sent" instead of lost.

import { connectionStatus, followWhileShown } from "./connection.js";
import { LiveSection } from "./live-section.js";
import { GroupStream } from "./stream.js";
import { UnsentText } from "./unsent-text.js";

const data = JSON.parse(document.getElementById("mission-data").textContent);
const unsent = new UnsentText("mission-body");
const status = connectionStatus(document.getElementById("connection-status"));
const missions = new Set([data.mission, ...data.missions]);
let workItems = new Set(data.work_items);

// A WorkItem authorised after the page loaded is in the refreshed graph: follow it too.
function rememberWorkItems(root) {
  const found = new Set(data.work_items);
  for (const node of root.querySelectorAll("[data-work-item]")) found.add(node.dataset.workItem);
  workItems = found;
}

// The graph scrolls in its box; a refresh keeps the person where they had scrolled to.
let graphScroll = { left: 0, top: 0 };
document.addEventListener(
  "scroll",
  (event) => {
    if (event.target instanceof Element && event.target.classList.contains("graph-box")) {
      graphScroll = { left: event.target.scrollLeft, top: event.target.scrollTop };
    }
  },
  true,
);

function keepGraphScroll(root) {
  const box = root.querySelector(".graph-box");
  if (box) {
    box.scrollLeft = graphScroll.left;
    box.scrollTop = graphScroll.top;
  }
}

// A large mission's graph is not drawn inline: fetch its own page and put the graph in the
// placeholder (again after each refresh, showing the last one fetched meanwhile).
let lastGraph = null;

async function loadGraph(root) {
  const slot = root.querySelector("#graph-deferred");
  if (!slot) return;
  if (lastGraph) slot.replaceChildren(lastGraph.cloneNode(true));
  try {
    const response = await fetch(slot.dataset.graphUrl, {
      credentials: "same-origin",
      headers: { Accept: "text/html" },
    });
    if (!response.ok) return;
    const holder = document.createElement("template");
    holder.innerHTML = await response.text();
    const graph = holder.content.getElementById("graph-body");
    if (!graph || !slot.isConnected) return;
    lastGraph = graph;
    slot.replaceChildren(graph.cloneNode(true));
    keepGraphScroll(slot);
    rememberWorkItems(slot);
  } catch {
    // offline: the link in the placeholder still opens the graph
  }
}

const body = new LiveSection({
  elementId: "mission-body",
  families: data.families,
  matches: (event) =>
    event.type.startsWith("membership.") ||
    missions.has(event.payload?.mission) ||
    missions.has(event.payload?.package?.mission) ||
    workItems.has(event.payload?.work_item) ||
    (event.payload?.charged_missions ?? []).some((mission) => missions.has(mission)),
  onSwap: (fresh) => {
    keepGraphScroll(fresh);
    rememberWorkItems(fresh);
    loadGraph(fresh);
    unsent.afterSwap();
  },
});

loadGraph(document);

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
