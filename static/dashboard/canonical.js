// RFC 8785 (JSON Canonicalization Scheme) and the sha256 digests of wire.md §1, in the browser.
//
// JCS is defined on ECMAScript's own JSON serialisation: numbers and strings come out of
// JSON.stringify already canonical; what JCS adds is object keys sorted by UTF-16 code units,
// which is what Array.prototype.sort does to strings by default.

export function canonicalize(value) {
  if (value === null || typeof value !== "object") {
    if (typeof value === "number" && !Number.isFinite(value)) {
      throw new TypeError("JCS cannot represent " + value);
    }
    return JSON.stringify(value);
  }
  if (Array.isArray(value)) {
    return "[" + value.map(canonicalize).join(",") + "]";
  }
  const keys = Object.keys(value).sort();
  return "{" + keys.map((key) => JSON.stringify(key) + ":" + canonicalize(value[key])).join(",") + "}";
}

// crypto.subtle exists only in secure contexts (https, or http on localhost / 127.0.0.1).
export const canDigest = Boolean(globalThis.crypto && globalThis.crypto.subtle);

export async function sha256Digest(text) {
  const bytes = new TextEncoder().encode(text);
  const buffer = await crypto.subtle.digest("SHA-256", bytes);
  const hex = Array.from(new Uint8Array(buffer), (byte) => byte.toString(16).padStart(2, "0"));
  return "sha256:" + hex.join("");
}

// wire.md §6: an event's hash is the digest of the canonical event without "hash".
export function eventHash(event) {
  const { hash: _ignored, ...rest } = event;
  return sha256Digest(canonicalize(rest));
}
