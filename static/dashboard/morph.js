// Bring a live section up to date in place: the nodes that stay the same stay the same
// nodes, so the element a person focused keeps the focus, the page does not jump, and the
// disclosures they opened stay open (issue 34 §5). Replacing the section (replaceWith)
// would drop the focus to <body> on every live update.
//
// Children are matched by key (an id, or data-key: an entry that moved is moved, not
// rebuilt), else by position when they are the same kind of node. What differs is
// rewritten: attributes and text. What the person or another module owns is kept: a
// <details>' open state, and a <time> that local-time.js has already written in the
// viewer's own zone for the same moment.

function keyOf(node) {
  if (node.nodeType !== Node.ELEMENT_NODE) return null;
  return node.id || node.getAttribute("data-key") || null;
}

function sameKind(a, b) {
  if (a.nodeType !== b.nodeType) return false;
  return a.nodeType !== Node.ELEMENT_NODE || a.tagName === b.tagName;
}

function syncAttributes(from, to) {
  for (const { name } of [...from.attributes]) {
    if (to.hasAttribute(name)) continue;
    if (name === "open" && from.tagName === "DETAILS") continue; // the person's choice
    if (name === "data-localized") continue; // local-time.js's mark
    from.removeAttribute(name);
  }
  for (const { name, value } of [...to.attributes]) {
    if (from.getAttribute(name) !== value) from.setAttribute(name, value);
  }
}

function morphNode(from, to) {
  if (from.nodeType !== Node.ELEMENT_NODE) {
    if (from.nodeValue !== to.nodeValue) from.nodeValue = to.nodeValue;
    return;
  }
  const localized =
    from.tagName === "TIME" &&
    from.dataset.localized &&
    from.dataset.localized === to.getAttribute("datetime");
  syncAttributes(from, to);
  if (!localized) morphChildren(from, to);
}

export function morphChildren(fromParent, toParent) {
  const keyed = new Map();
  for (const child of fromParent.childNodes) {
    const key = keyOf(child);
    if (key) keyed.set(key, child);
  }
  let cursor = fromParent.firstChild;
  for (const toChild of [...toParent.childNodes]) {
    const key = keyOf(toChild);
    let match = null;
    if (key) {
      match = keyed.get(key) || null;
      if (match && !sameKind(match, toChild)) match = null;
      if (match) keyed.delete(key);
    } else if (cursor && !keyOf(cursor) && sameKind(cursor, toChild)) {
      match = cursor;
    }
    if (!match) {
      fromParent.insertBefore(toChild, cursor);
      continue;
    }
    if (match === cursor) cursor = cursor.nextSibling;
    else fromParent.insertBefore(match, cursor);
    morphNode(match, toChild);
  }
  while (cursor) {
    const next = cursor.nextSibling;
    cursor.remove();
    cursor = next;
  }
}

// `current` becomes `fresh` in place (same root element, same id).
export function morph(current, fresh) {
  syncAttributes(current, fresh);
  morphChildren(current, fresh);
}
