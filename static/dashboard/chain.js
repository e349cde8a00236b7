// Re-verifies the hash chain of wire.md §6 in the browser, one event at a time, in order.
//
// The browser does not take the server's word for it: each event's hash is recomputed from
// its canonical form and its prev_hash must be the hash of the event before it.

import { canDigest, eventHash } from "./canonical.js";

export async function verdictOf(event, previous) {
  if (!canDigest) return "unavailable";
  const hashOk = typeof event.hash === "string" && event.hash === (await eventHash(event));
  if (!hashOk) return "hash-mismatch";
  const linkOk = event.sequence === previous.sequence + 1 && event.prev_hash === previous.hash;
  return linkOk ? "verified" : "broken-link";
}

// Follows the chain from an anchor (the event before the first one it will be given).
export class ChainFollower {
  constructor(anchorSequence, anchorHash) {
    this.last = { sequence: anchorSequence, hash: anchorHash };
    this.firstBreak = null;
  }

  async next(event) {
    const verdict = await verdictOf(event, this.last);
    if (verdict !== "verified" && verdict !== "unavailable" && this.firstBreak === null) {
      this.firstBreak = event.sequence;
    }
    this.last = { sequence: event.sequence, hash: event.hash };
    return verdict;
  }
}
