"""The web client's own deal verifier (clients/web/fair.js: WebCrypto SHA-256 and HMAC-SHA256,
the algorithm of games/tools/verify_deal.py) in Chromium.

* Cross-check on data the Python side produced: hands of each game folded as the table folds
  them (tests/unit/test_fairness_doc.py), their reveal given to the page's verifier, which
  must derive the same commitment, hand seed, wall or deck, first dealer and dice as
  games.fair; every frame a seat received (the table's codec) fed to the page, whose check
  must pass, and fail when one dealt or drawn tile is changed.
* A hand played in the page against the table's robots on a real stack: the page says
  "deal verified", naming the checks of the dealt tiles and the draws."""

from __future__ import annotations

import contextlib
import json
import time
from typing import Any

from google.protobuf.json_format import MessageToDict

from games import fair, registry
from services.table import logrec as lr
from services.table.codec import event_frame
from tests.browser.webpage import open_page
from tests.unit.test_fairness_doc import Log, fair_hand_ended

DESKTOP = {"width": 1280, "height": 800}


def hand_of(game: str, hands: int = 1) -> tuple[list[Any], int]:
    """The HandEnded facts of ``hands`` hands of ``game`` (seat 2 sends a client seed)."""
    log = Log(game, total_hands=hands)
    for seat in range(registry.get(game).seats):
        log.add(lr.Join(seat, 21 + seat, lr.Profile(nickname=f"p{seat}", coins=1000)))
    return [fair_hand_ended(log, {2: b"two"}) for _ in range(hands)], log.room.room_id


def frames_for(game: str, ended: Any, seat: int) -> list[list[Any]]:
    """[kind, body] of every frame ``seat`` received in the hand, in order (proto3 JSON)."""
    out = []
    for e in ended.events:
        if e.event.to is not None and e.event.to != seat:
            continue
        frame = event_frame(game, e.event, f"1:{ended.hand_no}:{e.index}")
        kind = frame.WhichOneof("payload")
        out.append([kind, MessageToDict(getattr(frame, kind), preserving_proto_field_name=True)])
    return out


def reveal_of(ended: Any) -> dict[str, Any]:
    """What a FairReveal frame tells of the hand, from its fair-deal record's JSON."""
    record = json.loads(ended.fair.encode())
    return {k: record[k] for k in ("hand_no", "commitment", "server_seed", "client_seeds")}


VERIFY = """async ({room, game, seat, frames, reveal}) => {
  const f = await import("/static/fair.js");
  f.fair.seen = null;
  f.fair.commitments.clear();
  f.onCommitment({hand_no: reveal.hand_no, commitment: reveal.commitment});
  for (const [kind, body] of frames) f.observe(kind, body, game, seat);
  return await f.checkReveal(room, reveal);
}"""


async def test_the_page_verifier_agrees_with_python_on_recorded_hands(browser: Any) -> None:
    context, page, errors = await open_page(browser, DESKTOP)
    try:
        for spec in registry.all():   # every game of the registry
            game, seats = spec.name, spec.seats
            (layout,) = spec.deal_layout(0)   # "wall" or "deck"
            (first, second), room_id = hand_of(game, hands=2)
            seats_with_draws = 0
            for ended in (first, second):
                rec = json.loads(ended.fair.encode())   # the record as the replay holds it
                seed = bytes.fromhex(rec["hand_seed"])
                dice = fair.stream(seed, "dice")
                derived = await page.evaluate(
                    """async ([room, hand, server, clients, game]) =>
                         (await import("/static/fair.js")).derive(room, hand, server, clients, game)""",
                    [room_id, rec["hand_no"], rec["server_seed"], rec["client_seeds"], game])
                assert derived == {
                    "commitment": rec["commitment"], "handSeed": rec["hand_seed"],
                    "layout": rec[layout],
                    "dealer": fair.first_dealer(seed, seats),
                    "dice": [dice.below(6) + 1 for _ in range(6)]}, (game, rec["hand_no"])
                reveal = reveal_of(ended)
                for seat in range(seats):
                    frames = frames_for(game, ended, seat)
                    got = await page.evaluate(VERIFY, {"room": room_id, "game": game,
                                                       "seat": seat, "frames": frames,
                                                       "reveal": reveal})
                    names = [c["name"] for c in got["checks"] if c["pass"]]
                    assert got["ok"], (game, seat, got)
                    assert "deal" in names and "deal verified" in got["text"], got
                    assert ("dealer" in names) == (rec["hand_no"] == 1), got
                    # a seat's own draws from the front of the wall are checked; a dealer
                    # out at once (heavenly hand, 天胡) draws none
                    drew = any(k == "mj_draw" and b.get("tile") and not b.get("from_back")
                               for k, b in frames)
                    assert ("draws" in names) == drew, (seat, got)
                    seats_with_draws += drew
            # a hand can end before anyone draws (a Changsha win on the dealer's first
            # discard), two hands in a row all but never do
            assert (seats_with_draws > 0) == (spec.family == "mahjong"), game
            # one tile of seat 0's deal changed: the page says it
            frames = frames_for(game, first, 0)
            change_one_dealt(spec.family, frames)
            reveal = reveal_of(first)
            got = await page.evaluate(VERIFY, {"room": room_id, "game": game, "seat": 0,
                                               "frames": frames, "reveal": reveal})
            assert not got["ok"] and "NOT verified: deal" in got["text"], got
            if spec.family == "mahjong":   # a drawn tile changed (from the front: the page checks those)
                ended, seat, frames, body = next(
                    (ended, seat, frames, b)
                    for ended in (first, second) for seat in range(4)
                    for frames in [frames_for(game, ended, seat)] for k, b in frames
                    if k == "mj_draw" and b.get("tile") and not b.get("from_back"))
                body["tile"] = "9m" if body["tile"] != "9m" else "1m"
                drawn = reveal_of(ended)
                got = await page.evaluate(VERIFY, {"room": room_id, "game": game, "seat": seat,
                                                   "frames": frames, "reveal": drawn})
                assert not got["ok"] and "NOT verified: draws" in got["text"], got
            forged = {**reveal, "server_seed": "00" * 32}
            got = await page.evaluate(VERIFY, {"room": room_id, "game": game, "seat": 0,
                                               "frames": frames_for(game, first, 0),
                                               "reveal": forged})
            assert not got["ok"] and "NOT verified: commitment" in got["text"], got
    finally:
        await context.close()
    assert errors == []


def change_one_dealt(family: str, frames: list[list[Any]]) -> None:
    """Seat 0's first dealt tile or card changed in its frames: the deal frame of its family
    (mahjong ``mj_hand``, Dadun ``dd_assign``, a game without typed frames its private
    ``game_event`` "hand", the cards in its JSON)."""
    if family in ("mahjong", "dadun"):
        kind, key = ("mj_hand", "tiles") if family == "mahjong" else ("dd_assign", "cards")
        body = next(b for k, b in frames if k == kind)
        other = ("9m", "1m") if family == "mahjong" else ("BJ", "3s")
        body[key][0] = other[0] if body[key][0] != other[0] else other[1]
        return
    # the first hand of the deal that stands: a redeal (every seat passed the bidding) deals
    # again; a later hand event (the landlord's, with the bottom cards) is not the deal
    body = None
    for k, b in frames:
        if k != "game_event":
            continue
        if b["kind"] == "deal" and json.loads(b.get("json") or "{}").get("deal_no"):
            body = None
        elif b["kind"] == "hand" and body is None:
            body = b
    assert body is not None, "no dealt hand in seat 0's frames"
    data = json.loads(body["json"])
    cards = data["cards"].split()
    cards[0] = "BJ" if cards[0] != "BJ" else "3s"
    body["json"] = json.dumps({**data, "cards": " ".join(cards)})


async def click_any(page: Any) -> bool:
    """One decision: the first action button of the pending prompt (every legal action is
    one, pictured or not); False when there is none."""
    with contextlib.suppress(Exception):
        return bool(await page.evaluate(
            "() => { const b = document.querySelector('#actions button');"
            " if (!b) return false; b.click(); return true; }"))
    return False


async def test_a_hand_played_in_the_page_shows_its_deal_verified(browser: Any,
                                                                 web_stack: Any) -> None:
    _, ws_port = web_stack
    context = await browser.new_context(viewport=DESKTOP, locale="en-US")
    context.set_default_timeout(20_000)
    page = await context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(f"pageerror: {e}"))
    try:
        await page.goto(f"http://127.0.0.1:{ws_port}/")
        await page.fill("#nickname", "Yan")
        await page.click("#guest-login")
        await page.wait_for_selector("#lobby-panel:not([hidden])")
        await page.select_option("#game", "XUEZHAN")
        await page.fill("#hands", "1")
        await page.click("#create")
        await page.wait_for_selector("#room-panel:not([hidden])")
        await page.click("#fill-robots")
        await page.wait_for_selector("#fill-robots", state="hidden")
        await page.click("#ready")
        deadline = time.monotonic() + 120
        while not await page.is_visible("#settlement-panel"):
            assert time.monotonic() < deadline, await page.locator("#log li").all_inner_texts()
            if not await click_any(page):
                await page.wait_for_timeout(60)
        await page.wait_for_function(
            "document.getElementById('fair').textContent.includes('deal verified')",
            timeout=10_000)
        text = await page.text_content("#fair") or ""
        assert "fair ok" in (await page.get_attribute("#fair", "class") or "")
    finally:
        await context.close()
    print(f"the page says: {text}")
    assert "the shuffle's" in text and "draws are the wall's" in text, text
    assert "first dealer" in text, text   # hand 1: the dealer drawn from the seed
    assert errors == [], errors
