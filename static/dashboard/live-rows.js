// A server-rendered list that follows the log row by row (issue 13 §5). When events arrive,
// the list asks the server for the rows they touched — and only those — and swaps each in by
// its id, so a live update costs what changed, never the whole list. New rows appear at the
// top of an unfiltered first page (the oldest fall off the bottom, so the page never grows);
// anywhere else a notice counts them. When the viewer's own membership changes, every row on
// the page is asked for again: what they may do in it may have changed.

import { debouncedOneAtATime, fetchFragment, leavingTracker, replacePreserving } from "./live-section.js";
// Events of these families may change a row; the rest (budgets, sessions…) never do.
const FAMILIES = new Set(["work", "mission", "approval", "lease", "evidence", "review", "membership"]);
// The event that brings a new row into each kind of list, and the payload field naming it.
const CREATED = { missions: ["mission.created", "mission"], "work-items": ["work.authorized", "work_item"] };

function familyOf(type) {
  return String(type).split(".", 1)[0];
}

function named(value) {
  if (typeof value === "string") return [value];
  return Array.isArray(value) ? value.filter((v) => typeof v === "string") : [];
}

export class LiveRows {
  // element: the <ul data-live-rows=KIND data-rows-url=URL>. liveInserts: new rows go on top
  // (an unfiltered first page). perPage: the most rows the list shows. principal: the viewer.
  // onNew(count): told how many new rows arrived that this page does not show.
  constructor({ element, liveInserts = false, perPage = 25, principal = "", onNew = () => {} }) {
    this.element = element;
    this.kind = element.dataset.liveRows;
    this.url = element.dataset.rowsUrl;
    this.liveInserts = liveInserts;
    this.perPage = perPage;
    this.principal = principal;
    this.onNew = onNew;
    this.pending = { mission: new Set(), work_item: new Set() };
    this.created = new Set();
    this.everything = false;
    this.newCount = 0;
    this.page = leavingTracker();
    this.schedule = debouncedOneAtATime(() => this.refresh());
  }

  rowIds() {
    return [...this.element.children].map((row) => row.dataset[this.kind === "missions" ? "mission" : "workItem"]);
  }

  notify(event) {
    const family = familyOf(event.type);
    if (!FAMILIES.has(family)) return;
    const payload = event.payload || {};
    if (family === "membership") {
      if (payload.principal === this.principal) this.everything = true;
      else return;
    }
    const [createdType, createdField] = CREATED[this.kind];
    if (event.type === createdType) {
      for (const id of named(payload[createdField])) this.created.add(id);
    }
    for (const id of named(payload.mission)) this.pending.mission.add(id);
    for (const id of named(payload.work_item)) this.pending.work_item.add(id);
    this.schedule();
  }

  // The query for the rows to ask for; null when nothing on this page can have changed.
  query() {
    const shown = new Set(this.rowIds());
    const params = new URLSearchParams();
    const created = [...this.created];
    this.created.clear();
    if (!this.liveInserts && created.length) {
      this.newCount += created.length;
      this.onNew(this.newCount);
    }
    const wanted = this.liveInserts ? created : [];
    if (this.kind === "missions") {
      // A WorkItem's mission is the server's to know: it maps the items to their missions.
      for (const id of new Set([...this.pending.mission, ...wanted])) params.append("mission", id);
      for (const id of this.pending.work_item) params.append("work_item", id);
    } else {
      for (const id of new Set([...this.pending.work_item, ...wanted])) {
        if (shown.has(id) || wanted.includes(id)) params.append("work_item", id);
      }
    }
    if (this.everything) {
      for (const id of shown) params.append(this.kind === "missions" ? "mission" : "work_item", id);
    }
    this.pending.mission.clear();
    this.pending.work_item.clear();
    this.everything = false;
    this.inserting = new Set(wanted);
    if (![...params.keys()].length) return null;
    params.set("next", window.location.pathname + window.location.search);
    return params;
  }

  async refresh() {
    const params = this.query();
    if (!params) return;
    const html = await fetchFragment(this.url + "?" + params);
    if (html !== null && !this.page.leaving) this.swap(html);
  }

  swap(html) {
    const holder = document.createElement("template");
    holder.innerHTML = html;
    const inserts = [];
    for (const fresh of [...holder.content.children]) {
      const current = document.getElementById(fresh.id);
      if (current && this.element.contains(current)) {
        replacePreserving(current, fresh);
        fresh.dataset.refreshedAt = new Date().toISOString();
      } else if (this.inserting.has(fresh.dataset.mission ?? fresh.dataset.workItem)) {
        inserts.push(fresh);
      }
    }
    // The response is newest first: the newest ends on top.
    for (const fresh of inserts.reverse()) {
      this.element.prepend(fresh);
      fresh.dataset.refreshedAt = new Date().toISOString();
    }
    while (this.element.children.length > this.perPage) this.element.lastElementChild.remove();
  }
}
