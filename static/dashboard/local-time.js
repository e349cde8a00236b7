// Times in the viewer's own zone (issue 34 §6). The server writes every time with
// {% local_time %}: <time datetime="…Z" title="… UTC" data-local-time="datetime">… UTC</time>.
// This module rewrites the text into the browser's local time and keeps the UTC time on hover
// (the title), so scripts off still read a correct, if UTC, time. Sections spliced in by a
// live update are rewritten as they arrive (a MutationObserver), so no page has to ask; so
// is a <time> a live update morphs in place to another moment (its datetime changes).

const FORMATS = {
  datetime: { year: "numeric", month: "short", day: "numeric", hour: "2-digit", minute: "2-digit" },
  seconds: {
    year: "numeric", month: "short", day: "numeric",
    hour: "2-digit", minute: "2-digit", second: "2-digit",
  },
  date: { year: "numeric", month: "short", day: "numeric" },
};

// "2026-11-30T10:00:00.123456Z": Date.parse is only specified for milliseconds.
function parseWireTime(text) {
  return new Date(String(text).replace(/\.(\d{3})\d*Z$/, ".$1Z"));
}

export function localText(moment, style = "datetime", locale = undefined) {
  const options = FORMATS[style] || FORMATS.datetime;
  return new Intl.DateTimeFormat(locale, options).format(moment);
}

export function localize(root = document) {
  const times = root.matches && root.matches("time[data-local-time]")
    ? [root]
    : root.querySelectorAll("time[data-local-time]");
  for (const time of times) {
    if (time.dataset.localized === time.getAttribute("datetime")) continue;
    const moment = parseWireTime(time.getAttribute("datetime"));
    if (Number.isNaN(moment.getTime())) continue;
    time.textContent = localText(moment, time.dataset.localTime);
    time.dataset.localized = time.getAttribute("datetime");
  }
}

function watch() {
  localize();
  new MutationObserver((records) => {
    for (const record of records) {
      // a <time> morphed in place to another moment (morph.js rewrites its datetime and
      // its text, the server's UTC words) is written again, like one that arrived new
      if (record.type === "attributes") localize(record.target);
      for (const node of record.addedNodes) {
        if (node.nodeType === Node.ELEMENT_NODE) localize(node);
      }
    }
  }).observe(document.body, {
    childList: true,
    subtree: true,
    attributes: true,
    attributeFilter: ["datetime"],
  });
}

if (document.readyState === "loading") {
  document.addEventListener("DOMContentLoaded", watch);
} else {
  watch();
}
