// Relative times ("3 min ago") next to the absolute UTC ones, kept fresh while the page is open.

const UNITS = [
  [86400, "d"],
  [3600, "h"],
  [60, "min"],
];

export function relativeTime(moment, now = new Date()) {
  const seconds = Math.round((now.getTime() - moment.getTime()) / 1000);
  if (seconds < 5) return "just now";
  for (const [size, unit] of UNITS) {
    if (seconds >= size) return Math.floor(seconds / size) + " " + unit + " ago";
  }
  return seconds + " s ago";
}

// "2026-11-30T10:00:00.123456Z" -> "2026-11-30 10:00:00 UTC", as the server writes it.
export function absoluteTime(text) {
  return text.slice(0, 19).replace("T", " ") + " UTC";
}

export function refreshRelativeTimes(root = document) {
  const now = new Date();
  for (const time of root.querySelectorAll("time[datetime]")) {
    const moment = new Date(time.getAttribute("datetime"));
    const label = time.querySelector('[data-field="relative"]');
    if (label && !Number.isNaN(moment.getTime())) label.textContent = relativeTime(moment, now);
  }
}

export function keepRelativeTimesFresh(intervalMs = 15000) {
  refreshRelativeTimes();
  return setInterval(refreshRelativeTimes, intervalMs);
}
