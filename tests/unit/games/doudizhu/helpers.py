"""Shared by the Dou Dizhu tests: fixed deals, bids that make a chosen landlord, and text
helpers (``ranks("33345")`` -> rank counts)."""

from __future__ import annotations

from games.dadun.cards import parse_cards
from games.doudizhu import game
from games.doudizhu.cards import RANK_CHARS, full_deck
from games.engine import Action

CALL = Action("call_landlord", choice="yes")
NO_CALL = Action("call_landlord", choice="no")
ROB = Action("rob_landlord", choice="yes")
NO_ROB = Action("rob_landlord", choice="no")
PASS = Action("pass")


def ranks(text: str) -> list[int]:
    """Rank counts of a rank text: "3334BR" -> [3, 1, 0, ..., 1, 1]."""
    counts = [0] * 15
    for ch in text:
        counts[RANK_CHARS.index(ch)] += 1
    return counts


def make_deal(fixed: dict[int, str], bottom: str = "") -> tuple[list[list[int]], list[int]]:
    """Three hands of 17 and a bottom of 3: the fixed cards, the rest dealt round-robin in
    code order (fillers hold about one or two of each rank: no bombs, no rocket)."""
    hands = {s: parse_cards(fixed.get(s, "")) for s in range(3)}
    low = parse_cards(bottom)
    used = set(low) | {c for h in hands.values() for c in h}
    rest = [c for c in full_deck() if c not in used]
    while len(low) < 3:
        low.append(rest.pop())  # the highest free cards fill the bottom
    seat = 0
    for code in rest:
        while len(hands[seat]) >= 17:
            seat = (seat + 1) % 3
        hands[seat].append(code)
        seat = (seat + 1) % 3
    return [hands[s] for s in range(3)], low


def started(fixed: dict[int, str], bottom: str = "", first: int = 0,
            options: dict[str, object] | None = None) -> game.DoudizhuState:
    hands, low = make_deal(fixed, bottom)
    state = game.new_hand_from_deal(options or {}, hands, low, first)
    state.deal_events()
    return state


def make_landlord(state: game.DoudizhuState, landlord: int) -> None:
    """Bid so that ``landlord`` calls and nobody robs."""
    while state.phase() in ("call", "rob"):
        (seat,) = state.to_act()
        if state.phase() == "call":
            state.apply(seat, CALL if seat == landlord else NO_CALL)
        else:
            state.apply(seat, NO_ROB)
    assert state.deal.landlord == landlord


def cards(text: str) -> Action:
    """A play of the cards in notation: cards("3s 3h")."""
    return Action("play", tiles=tuple(text.split()))


LANDLORD_17 = "SJ BJ 2s 2h 2c 2d 3s 4s 5s 6s 7s 8s 9s Ts Js Qs Ks"


def spring_hand(options: dict[str, object] | None = None) -> game.DoudizhuState:
    """Seat 0 calls, lands the bottom As 3h 3c and holds a 12-straight, the bomb of 2s, the
    rocket and a pair of 3s; the farmers share the rest (no bomb, no rocket)."""
    state = started({0: LANDLORD_17}, bottom="As 3h 3c", options=options)
    make_landlord(state, 0)
    return state
