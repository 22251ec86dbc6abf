// Provably fair deals in the browser (docs/fairness.md): the commitment the table publishes
// before a hand, this seat's own random client seed, and at the hand's end a check that the
// revealed server seed gives the commitment shown before the deal (SHA-256 in WebCrypto).
// The full check of the wall and every draw is `python -m clients.verify_deal`.

const TAG = new TextEncoder().encode("paiju/fair/v1/commit");

export const fair = {
  commitments: new Map(),   // hand_no -> commitment hex shown before the deal
  sent: new Map(),          // hand_no -> the client seed (hex) this page sent for it
  last: null,               // {hand_no, text, ok} of the newest check, for the page
};

function hex(bytes) {
  return Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
}

function fromHex(text) {
  const out = new Uint8Array(text.length / 2);
  for (let i = 0; i < out.length; i++) out[i] = parseInt(text.substr(2 * i, 2), 16);
  return out;
}

function u64(value) {
  const out = new Uint8Array(8);
  let v = BigInt(value);
  for (let i = 7; i >= 0; i--) { out[i] = Number(v & 0xffn); v >>= 8n; }
  return out;
}

// SHA-256(TAG || 0x00 || room_id u64 BE || hand_no u64 BE || server_seed), lowercase hex.
export async function commitmentOf(roomId, handNo, serverSeedHex) {
  const seed = fromHex(serverSeedHex);
  const data = new Uint8Array(TAG.length + 1 + 16 + seed.length);
  data.set(TAG, 0);
  data.set(u64(roomId), TAG.length + 1);
  data.set(u64(handNo), TAG.length + 9);
  data.set(seed, TAG.length + 17);
  return hex(new Uint8Array(await crypto.subtle.digest("SHA-256", data)));
}

export function onCommitment(body) {
  fair.commitments.set(Number(body.hand_no || 0), body.commitment || "");
}

// This seat's entropy for the next hand: 32 random bytes, base64 as proto3 JSON writes bytes.
export function clientSeed(handNo) {
  const seed = crypto.getRandomValues(new Uint8Array(32));
  fair.sent.set(handNo, hex(seed));
  return btoa(String.fromCharCode(...seed));
}

export function nextHand() {
  return Math.max(0, ...fair.commitments.keys());
}

// The hand is over: does its revealed server seed give the commitment shown before it, and
// was our own seed mixed in? Resolves to {hand_no, ok, text}.
export async function checkReveal(roomId, body) {
  const handNo = Number(body.hand_no || 0);
  const shown = fair.commitments.get(handNo) || body.commitment || "";
  const made = await commitmentOf(roomId, handNo, body.server_seed || "");
  const mine = fair.sent.get(handNo);
  let ok = made === shown && made === body.commitment;
  let text = ok ? `hand ${handNo}: deal verified (commitment ${made.slice(0, 12)}…)`
    : `hand ${handNo}: the revealed seed does NOT match the commitment ${shown.slice(0, 12)}…`;
  if (ok && mine && !(body.client_seeds || []).includes(mine)) {
    ok = false;
    text = `hand ${handNo}: our client seed was not used`;
  }
  fair.last = {hand_no: handNo, ok, text};
  return fair.last;
}
