// log.js: the Log page's check in the browser. It keeps one head in
// localStorage ("Keep this head"); on every visit it fetches today's head,
// checks its signature under the kept head's log key (the node's issuer key
// when none is kept), and checks the consistency proof from the kept size to
// today's. A head that fails is refused with the reason, and the kept head
// is never replaced by it. Only the head and one proof are fetched, so the
// check costs the same at any log size.
import { HeadError, checkConsistency, checkSignature, hexDecode, parseSTH } from "./logtree.js";

const KEPT = "histor.log.kept";
const $ = (id) => document.getElementById(id);
const fmt = (n) => n.toLocaleString("en-US");

// today is the head of the last check that passed; only it can be kept.
let today = null;

function keptHead() {
  const text = localStorage.getItem(KEPT);
  if (!text) return null;
  try {
    return parseSTH(text);
  } catch {
    localStorage.removeItem(KEPT); // not a head this page wrote
    return null;
  }
}

async function fetchText(url) {
  const r = await fetch(url, { cache: "no-store", headers: { Accept: "application/json" } });
  if (!r.ok) throw new Error(url + " answered " + r.status);
  return r.text();
}

function setStatus(state, text, ms) {
  const s = $("check-status");
  s.dataset.state = state;
  if (ms !== undefined) s.dataset.ms = ms.toFixed(1);
  s.textContent = text;
}

function showKept(k) {
  const dl = $("kept");
  dl.replaceChildren();
  const add = (term, value, code) => {
    const dt = document.createElement("dt");
    dt.textContent = term;
    const dd = document.createElement("dd");
    if (code) {
      const c = document.createElement("code");
      c.textContent = value;
      dd.append(c);
    } else dd.textContent = value;
    dl.append(dt, dd);
  };
  if (!k) {
    add("Kept", "none");
  } else {
    add("Size", fmt(k.treeSize) + " labels");
    add("Root hash", k.rootHash, true);
    add("Signed at", k.timestamp);
    add("Log key", k.log, true);
  }
  dl.dataset.size = k ? String(k.treeSize) : "0";
  $("forget").disabled = !k;
}

// check fetches today's head and holds it against the kept one.
async function check() {
  const t0 = performance.now();
  today = null;
  $("keep").disabled = true;
  $("recheck").disabled = true;
  setStatus("checking", "Checking today's head…");
  const kept = keptHead();
  showKept(kept);
  try {
    const text = await fetchText("/api/v1/log/sth");
    const sth = parseSTH(text);
    const did = kept ? kept.log : JSON.parse(await fetchText("/api/v1/issuer")).did;
    await checkSignature(sth, did);
    const lines = kept ? await checkAgainst(kept, sth) : 0;
    today = { text, sth };
    const ms = performance.now() - t0;
    if (!kept) {
      setStatus("signed", `Today's head (${fmt(sth.treeSize)} labels, signed ${sth.timestamp}) is signed by the log's key. No head is kept in this browser yet: keep this one, and later visits check that the log extends it.`, ms);
    } else {
      setStatus("proven", `Consistent: today's head (${fmt(sth.treeSize)} labels, signed ${sth.timestamp}) is signed by the log's key and extends the kept head (${fmt(kept.treeSize)} labels); a consistency proof of ${lines} hashes checked in ${ms.toFixed(1)} ms.`, ms);
    }
    $("keep").disabled = kept !== null && kept.treeSize === sth.treeSize && kept.timestamp === sth.timestamp;
  } catch (e) {
    const ms = performance.now() - t0;
    if (e instanceof HeadError) {
      const stays = kept ? ` The kept head (${fmt(kept.treeSize)} labels) stays.` : "";
      setStatus("refused", `Refused: ${e.reason}.${stays}`, ms);
    } else {
      setStatus("error", `The check could not run: ${e.message}. Nothing was kept or replaced.`, ms);
    }
  } finally {
    $("recheck").disabled = false;
  }
}

// checkAgainst proves sth extends kept and returns the proof's length.
async function checkAgainst(kept, sth) {
  if (sth.treeSize < kept.treeSize) {
    throw new HeadError(`today's head has ${fmt(sth.treeSize)} labels, fewer than the kept head's ${fmt(kept.treeSize)}, and the log only grows`);
  }
  const [a, b] = [hexDecode(kept.rootHash), hexDecode(sth.rootHash)];
  if (sth.treeSize === kept.treeSize) {
    await checkConsistency(kept.treeSize, sth.treeSize, a, b, []);
    return 0;
  }
  const url = `/api/v1/log/proof/consistency?first=${kept.treeSize}&second=${sth.treeSize}`;
  const p = JSON.parse(await fetchText(url));
  if (p.first !== kept.treeSize || p.second !== sth.treeSize || !Array.isArray(p.proof)) {
    throw new HeadError("the consistency proof answered for other sizes");
  }
  await checkConsistency(kept.treeSize, sth.treeSize, a, b, p.proof.map(hexDecode));
  return p.proof.length;
}

function keep() {
  if (!today) return;
  localStorage.setItem(KEPT, today.text);
  showKept(today.sth);
  $("keep").disabled = true;
  setStatus("kept", `Kept the head of ${fmt(today.sth.treeSize)} labels (signed ${today.sth.timestamp}) in this browser. Later visits check that the log extends it.`);
}

function forget() {
  localStorage.removeItem(KEPT);
  showKept(null);
  setStatus("idle", "Forgot the kept head. Check again to start from today's head.");
}

$("keep").addEventListener("click", keep);
$("recheck").addEventListener("click", check);
$("forget").addEventListener("click", forget);
if ($("head").dataset.size === "0") {
  showKept(keptHead());
  setStatus("idle", "The log is empty: there is no head to check yet.");
} else {
  check();
}
