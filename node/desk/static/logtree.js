// logtree.js: what the Log page checks in the browser, with the browser's
// own WebCrypto: a histor.sth/v1 head's Ed25519 signature over the RFC 8785
// (JCS) bytes of every member but "signature", exactly as the log signs it,
// and RFC 9162 consistency proofs with SHA-256. Nothing here walks the tree:
// a check costs one signature and about two hashes per proof line, so it is
// the same few milliseconds at a thousand leaves or a billion.

const STH_TYPE = "histor.sth/v1";
const DID_KEY_RE = /^did:key:z[1-9A-HJ-NP-Za-km-z]{40,60}$/;
const ROOT_RE = /^[0-9a-f]{64}$/;
const TIME_RE = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/;
const SIG_RE = /^[A-Za-z0-9_-]{86}$/;
// A consistency proof has at most about two lines per tree level.
const MAX_PROOF = 128;

// HeadError is a refused head or proof; reason says why, in words a reader
// of the page can act on.
export class HeadError extends Error {
  constructor(reason) {
    super(reason);
    this.name = "HeadError";
    this.reason = reason;
  }
}

// jcs is RFC 8785 for JSON values: object members sorted by UTF-16 code
// units (what Array.prototype.sort does with strings), strings and numbers
// as ECMAScript's JSON.stringify writes them, which is what RFC 8785 asks.
export function jcs(v) {
  if (v === null || typeof v !== "object") {
    if (typeof v === "number" && !Number.isFinite(v)) throw new HeadError("a number that JSON cannot hold");
    return JSON.stringify(v);
  }
  if (Array.isArray(v)) return "[" + v.map(jcs).join(",") + "]";
  return "{" + Object.keys(v).sort().map((k) => JSON.stringify(k) + ":" + jcs(v[k])).join(",") + "}";
}

// parseSTH reads a head strictly: exactly HISTOR's members, in their
// canonical forms, as the node's own parser does.
export function parseSTH(text) {
  let v;
  try {
    v = JSON.parse(text);
  } catch {
    throw new HeadError("the head is not JSON");
  }
  const exact = (o, names) =>
    o !== null && typeof o === "object" && !Array.isArray(o) &&
    Object.keys(o).length === names.length && names.every((n) => Object.hasOwn(o, n));
  if (!exact(v, ["type", "log", "treeSize", "rootHash", "timestamp", "signature"])) throw new HeadError("the head does not have exactly the members of a histor.sth/v1 head");
  if (v.type !== STH_TYPE) throw new HeadError("the head's type is not " + STH_TYPE);
  if (typeof v.log !== "string" || !DID_KEY_RE.test(v.log)) throw new HeadError("the head's log is not a did:key");
  if (!Number.isSafeInteger(v.treeSize) || v.treeSize < 0) throw new HeadError("the head's treeSize is not a whole number");
  if (typeof v.rootHash !== "string" || !ROOT_RE.test(v.rootHash)) throw new HeadError("the head's rootHash is not 64 lowercase hex digits");
  if (typeof v.timestamp !== "string" || !TIME_RE.test(v.timestamp)) throw new HeadError("the head's timestamp is not YYYY-MM-DDTHH:MM:SSZ");
  const s = v.signature;
  if (!exact(s, ["alg", "verificationMethod", "value"]) || s.alg !== "Ed25519") throw new HeadError("the head's signature is not an Ed25519 signature object");
  if (s.verificationMethod !== v.log + "#" + v.log.slice("did:key:".length)) throw new HeadError("the head's signature names another key than its log");
  if (typeof s.value !== "string" || !SIG_RE.test(s.value)) throw new HeadError("the head's signature value is not 64 bytes of base64url");
  return v;
}

// signedBytes is what the log signs: the JCS of the head without signature.
export function signedBytes(sth) {
  const body = {};
  for (const k of Object.keys(sth)) if (k !== "signature") body[k] = sth[k];
  return new TextEncoder().encode(jcs(body));
}

// checkSignature refuses a head whose signature does not verify under the
// Ed25519 key of did (a did:key).
export async function checkSignature(sth, did) {
  if (sth.log !== did) throw new HeadError("the head names another log key (" + sth.log + ") than the one kept (" + did + ")");
  const key = await crypto.subtle.importKey("raw", didKeyPublic(did), { name: "Ed25519" }, false, ["verify"]);
  const ok = await crypto.subtle.verify({ name: "Ed25519" }, key, base64urlDecode(sth.signature.value), signedBytes(sth));
  if (!ok) throw new HeadError("the head's signature does not verify under the log's key: it was not signed by this log");
}

// checkConsistency refuses unless proof shows the tree of first leaves with
// root firstRoot is a prefix of the tree of second leaves with root
// secondRoot (RFC 9162 §2.1.4.2). Sizes are JS numbers (heads keep them
// below 2^53); the bit arithmetic is on BigInt.
export async function checkConsistency(first, second, firstRoot, secondRoot, proof) {
  if (!(first >= 1) || first > second) throw new HeadError("the sizes are out of order");
  if (first === second) {
    if (proof.length !== 0) throw new HeadError("a proof between equal sizes must be empty");
    if (!equal(firstRoot, secondRoot)) throw new HeadError("a fork: today's head has the kept head's size but another root");
    return;
  }
  if (proof.length === 0 || proof.length > MAX_PROOF) throw new HeadError("the consistency proof has " + proof.length + " hashes");
  const path = isPowerOfTwo(first) ? [firstRoot, ...proof] : proof;
  let fn = BigInt(first - 1), sn = BigInt(second - 1);
  while (fn & 1n) { fn >>= 1n; sn >>= 1n; }
  let fr = path[0], sr = path[0];
  for (const c of path.slice(1)) {
    if (sn === 0n) throw new HeadError("the consistency proof is too long");
    if ((fn & 1n) === 1n || fn === sn) {
      [fr, sr] = await Promise.all([nodeHash(c, fr), nodeHash(c, sr)]);
      while ((fn & 1n) === 0n && fn !== 0n) { fn >>= 1n; sn >>= 1n; }
    } else {
      sr = await nodeHash(sr, c);
    }
    fn >>= 1n; sn >>= 1n;
  }
  if (sn !== 0n) throw new HeadError("the consistency proof is too short");
  if (!equal(fr, firstRoot)) throw new HeadError("a fork: the consistency proof does not lead back to the kept head's root");
  if (!equal(sr, secondRoot)) throw new HeadError("the consistency proof does not lead to today's root");
}

// nodeHash is SHA-256(0x01 ‖ l ‖ r).
export async function nodeHash(l, r) {
  const b = new Uint8Array(65);
  b[0] = 1;
  b.set(l, 1);
  b.set(r, 33);
  return new Uint8Array(await crypto.subtle.digest("SHA-256", b));
}

function isPowerOfTwo(n) {
  const b = BigInt(n);
  return (b & (b - 1n)) === 0n;
}

function equal(a, b) {
  if (a.length !== b.length) return false;
  let d = 0;
  for (let i = 0; i < a.length; i++) d |= a[i] ^ b[i];
  return d === 0;
}

export function hexDecode(s) {
  if (typeof s !== "string" || !ROOT_RE.test(s)) throw new HeadError("a hash that is not 64 lowercase hex digits");
  const out = new Uint8Array(32);
  for (let i = 0; i < 32; i++) out[i] = parseInt(s.slice(2 * i, 2 * i + 2), 16);
  return out;
}

export function base64urlDecode(s) {
  const b = atob(s.replace(/-/g, "+").replace(/_/g, "/") + "=".repeat((4 - (s.length % 4)) % 4));
  return Uint8Array.from(b, (c) => c.charCodeAt(0));
}

const B58 = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz";

// didKeyPublic is the Ed25519 key a did:key names: base58btc, multicodec
// 0xed 0x01, then 32 key bytes.
export function didKeyPublic(did) {
  if (!DID_KEY_RE.test(did)) throw new HeadError("not a did:key");
  let n = 0n;
  for (const c of did.slice("did:key:z".length)) n = n * 58n + BigInt(B58.indexOf(c));
  const bytes = [];
  while (n > 0n) { bytes.unshift(Number(n & 0xffn)); n >>= 8n; }
  if (bytes.length !== 34 || bytes[0] !== 0xed || bytes[1] !== 0x01) throw new HeadError("the did:key is not an Ed25519 key");
  return new Uint8Array(bytes.slice(2));
}
