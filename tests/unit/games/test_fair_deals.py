"""Provably fair deals (issue 14, docs/fairness.md): the known-answer vectors of the spec,
determinism, input checks, the generator's unbiasedness, whole hands of all three games
verified from their replays, tampering caught by the right check, and no seed in any view."""

from __future__ import annotations

import io
import json
from collections import Counter
from typing import Any

import pytest

from games import fair, registry
from games.arbitration import resolve
from games.engine import State
from games.fair import FairError, FairStream
from games.mahjong.wall import shuffled_wall
from games.rng import Stream, derive
from games.tools import verify_deal
from games.tools.verify_deal import deal_layout, verify

# The worked example of docs/fairness.md.
ROOM, HAND = 123456, 3
SERVER = bytes(range(32))
CLIENTS = (b"alice", b"", b"\x00\xff", b"bob")
COMMIT_INPUT = ("7061696a752f666169722f76312f636f6d6d697400000000000001e2400000000000000003"
                "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f")
COMMITMENT = "82d6eb5a5b82d73d331a550b92da208939f859ef3d7824cfc4415763039c08e2"
HAND_INPUT = ("7061696a752f666169722f76312f68616e6400000000000001e2400000000000000003"
              "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f"
              "05616c696365000200ff03626f62")
HAND_SEED = "664ef27cd340e1eb73eda2dbad5b84494e7b984192e9865f51a7eaeed08743ae"
WALL_BLOCK0 = "7e984de676a2d19d8043fa358d039e3374703a82e9c3b6b64bee953d28cab7a6"
WALL_WORDS = [0x7E984DE676A2D19D, 0x8043FA358D039E33, 0x74703A82E9C3B6B6, 0x4BEE953D28CAB7A6,
              0xE634980F7E62D263]
WALL = ("7s 7m 4s 5p 7s 4m 4p 5m 4p 6m 5m 8s 8s 7m 1p 9p 2p 7m 8m 2s 9m 9p 5s 2m 5p 7p 7p 8p "
        "8p 9s 1s 6m 7s 4s 9s 5s 5s 2p 6p 6s 3p 1p 3s 6s 3m 1s 2s 4m 1s 2p 3p 2m 4m 9m 5m 8p "
        "4s 9p 6m 5m 6m 3p 1s 1m 2p 3m 8m 2s 4p 7m 4m 3p 3s 2m 3m 9m 2m 1m 7p 8m 7s 9s 7p 1m "
        "3s 3m 8m 1m 6p 8s 6s 2s 6p 9p 6s 5p 6p 3s 5p 1p 1p 8s 9m 5s 9s 8p 4s 4p")
DECK = ("9c 5s 2s Jh Qd Qc Jh 6h 7c Tc 2d 2c Js 6c 2d 6d 4c 5c 7s Qh 6s Td 7h Ah 2h 7c 9d BJ "
        "Kd 9h Jc Qs 2s Kd Kc 7d 5h 7d Ts 3h Qh Ks SJ 4d 8d 5d 4c 3s 8c 8s 6d 9d 3s Jc 8d Ac "
        "Js SJ 9s BJ Kh 3d 9c Kc 3c 8c Tc 8h 4h Th As Jd 8h Ts 4s 4s 5c 2c Qd Ad 5s Th Td 4h "
        "Ac 5h Ah 6s 9h 3c 2h Qs Qc 3d 7h 4d As 7s 9s 8s 3h Jd Ks Ad 6c Kh 5d 6h")


# ---------------------------------------------------------------------- known answers


def test_commitment_known_answer():
    assert fair.commitment_input(ROOM, HAND, SERVER).hex() == COMMIT_INPUT
    assert fair.commitment(ROOM, HAND, SERVER) == COMMITMENT


def test_hand_seed_known_answer():
    assert fair.hand_seed_input(ROOM, HAND, SERVER, CLIENTS).hex() == HAND_INPUT
    assert fair.hand_seed(ROOM, HAND, SERVER, CLIENTS).hex() == HAND_SEED


def test_generator_known_answer():
    s = FairStream(bytes.fromhex(HAND_SEED), "wall")
    assert s.block(0).hex() == WALL_BLOCK0
    assert [s.next64() for _ in range(5)] == WALL_WORDS
    assert s.state == 5


def test_wall_deck_dealer_dice_token_known_answers():
    seed = bytes.fromhex(HAND_SEED)
    assert " ".join(deal_layout("xuezhan", seed)["wall"]) == WALL
    assert deal_layout("changsha", seed) == deal_layout("xuezhan", seed)
    assert " ".join(deal_layout("dadun", seed)["deck"]) == DECK
    assert fair.first_dealer(seed) == 3
    dice = FairStream(seed, "dice")
    assert [dice.below(6) + 1 for _ in range(6)] == [1, 3, 1, 3, 1, 2]
    assert fair.sub_seed(seed, "token") & 0xFFFFFF == 0x12AAA1
    state = registry.get("dadun").new_hand({}, seed, 0)
    assert state.deal.token_salt == "t12aaa1."  # type: ignore[attr-defined]


def test_reveal_fields():
    assert fair.reveal(ROOM, HAND, SERVER, [b"alice", None, b"\x00\xff", b"bob"]) == {
        "fair_version": 1, "room_id": ROOM, "hand_no": HAND, "commitment": COMMITMENT,
        "server_seed": SERVER.hex(), "client_seeds": ["616c696365", "", "00ff", "626f62"]}


# ---------------------------------------------------------------------- determinism, inputs


def test_same_inputs_same_wall_and_every_input_matters():
    seed = fair.hand_seed(ROOM, HAND, SERVER, CLIENTS)
    assert shuffled_wall(seed) == shuffled_wall(fair.hand_seed(ROOM, HAND, SERVER, CLIENTS))
    others = [
        fair.hand_seed(ROOM + 1, HAND, SERVER, CLIENTS),
        fair.hand_seed(ROOM, HAND + 1, SERVER, CLIENTS),
        fair.hand_seed(ROOM, HAND, bytes(32), CLIENTS),
        fair.hand_seed(ROOM, HAND, SERVER, (b"alicf", b"", b"\x00\xff", b"bob")),
        # the length prefix: moving a byte from one seat to the next changes the seed
        fair.hand_seed(ROOM, HAND, SERVER, (b"alic", b"e", b"\x00\xff", b"bob")),
    ]
    assert len({seed, *others}) == 6
    assert len({tuple(shuffled_wall(s)) for s in [seed, *others]}) == 6
    assert fair.commitment(ROOM + 1, HAND, SERVER) != COMMITMENT
    assert fair.commitment(ROOM, HAND + 1, SERVER) != COMMITMENT


def test_an_int_seed_s_sub_streams_are_its_splitmix_streams_by_label():
    for seed in (0, 42, 2**63 - 1):
        for label in fair.LABELS:
            assert fair.stream(seed, label).state == Stream(derive(seed, label)).state
        assert fair.sub_seed(seed, "token") == derive(seed, "token")
    tiles = list(range(27)) * 4
    tiles.sort()
    Stream(derive(42, "wall")).shuffle(tiles)
    assert shuffled_wall(42) == tiles


@pytest.mark.parametrize("bad, message", [
    (b"x" * 65, "at most 64 bytes, got 65"),
    ("abc", "a client seed is bytes, got str"),
])
def test_client_seed_checks(bad, message):
    with pytest.raises(FairError, match=message):
        fair.check_client_seed(bad)
    with pytest.raises(FairError):
        fair.hand_seed(ROOM, HAND, SERVER, (bad, b"", b"", b""))


def test_seed_shape_checks():
    assert fair.check_client_seed(b"y" * 64) == b"y" * 64
    assert fair.check_client_seeds([None, b"", b"a", None]) == (b"", b"", b"a", b"")
    with pytest.raises(FairError, match="one per seat"):
        fair.check_client_seeds([b"", b""])
    with pytest.raises(FairError, match="32 bytes"):
        fair.commitment(ROOM, HAND, bytes(31))
    with pytest.raises(FairError, match="room_id"):
        fair.commitment(-1, HAND, SERVER)
    with pytest.raises(FairError):
        FairStream(SERVER, "")
    for game in ("xuezhan", "changsha", "dadun"):
        with pytest.raises(FairError):
            registry.get(game).new_hand({}, bytes(31), 0)
        with pytest.raises(FairError):
            registry.get(game).new_hand({}, "seed", 0)  # type: ignore[arg-type]
    assert fair.seed_from_json(fair.seed_to_json(SERVER)) == SERVER
    assert fair.seed_from_json(fair.seed_to_json(7)) == 7


# ---------------------------------------------------------------------- unbiasedness


class _Scripted(FairStream):
    """A stream that returns the given words (to see rejection at work)."""

    __slots__ = ("words",)

    def __init__(self, words: list[int]) -> None:
        super().__init__(SERVER, "test")
        self.words = list(words)

    def next64(self) -> int:
        return self.words.pop(0)


def test_rejection_sampling_refuses_the_biased_tail():
    top = 2**64 - 1
    # 2**64 % 3 == 1: only the single word 2**64 - 1 lies in the biased tail
    assert _Scripted([top, 5]).below(3) == 2
    assert _Scripted([top - 1]).below(3) == (top - 1) % 3
    # n = 6: the tail is the top 2**64 % 6 == 4 words
    s = _Scripted([top, top - 1, top - 2, top - 3, top - 4])
    assert s.below(6) == (top - 4) % 6 and not s.words
    assert _Scripted([123]).below(1) == 0
    with pytest.raises(ValueError):
        _Scripted([1]).below(0)


def _chi_square(counts: Counter, cells: int, total: int) -> float:
    expected = total / cells
    return sum((counts.get(k, 0) - expected) ** 2 / expected for k in range(cells))


def test_small_draws_are_uniform():
    # Fixed seeds, so this is deterministic; the bounds are the 99.99th percentiles.
    stream = FairStream(bytes.fromhex(HAND_SEED), "dice")
    total = 60_000
    dice = Counter(stream.below(6) for _ in range(total))
    assert _chi_square(dice, 6, total) < 25.7          # 5 degrees of freedom
    seats = Counter(fair.first_dealer(fair.hand_seed(1, h, SERVER, CLIENTS))
                    for h in range(4000))
    assert _chi_square(seats, 4, 4000) < 21.1          # 3 degrees of freedom
    perms: Counter = Counter()
    shuffler = FairStream(SERVER, "perm")
    for _ in range(24_000):
        items = [0, 1, 2, 3]
        shuffler.shuffle(items)
        perms[tuple(items)] += 1
    index = {p: i for i, p in enumerate(sorted(perms))}
    assert len(index) == 24
    assert _chi_square(Counter({index[p]: n for p, n in perms.items()}), 24, 24_000) < 52.6


# ---------------------------------------------------------------------- whole hands


def _cell(i: int, event: Any) -> dict[str, Any]:
    """An event as the table stores it in the settlement (services/table/room.py)."""
    return {"i": i, "kind": event.kind, "to": event.to, "event_id": 0, "frame": "",
            "json": json.dumps(event.to_dict(), ensure_ascii=False, sort_keys=True)}


def play_hand(game: str, room_id: int, hand_no: int, server: bytes,
              clients: tuple[bytes, ...], options: dict[str, Any] | None = None,
              dealer: int | None = None,
              watch: Any = None) -> dict[str, Any]:
    """One hand the way the table plays it (greedy bots at every seat, windows answered with
    record_response and decided by the arbitration function), as a replay dict."""
    spec = registry.get(game)
    options = dict(options or {})
    seed = fair.hand_seed(room_id, hand_no, server, clients)
    from_seed = dealer is None
    dealer = fair.first_dealer(seed, spec.seats) if dealer is None else dealer
    state = spec.new_hand(options, seed, dealer)
    events = list(state.deal_events())
    actions: list[dict[str, Any]] = []
    for _ in range(3000):
        if watch is not None:
            watch(state, events)
        if state.is_over():
            break
        seat = state.to_act()[0]
        action = spec.greedy_policy(state, seat)
        if state.pending_window() is not None:
            actions.append({"t": "act", "seat": seat, "action": action.to_dict(),
                            "response": True})
            events += state.record_response(seat, action)
            window = state.pending_window()
            rules = state.arbitration_rules()
            assert window is not None and rules is not None
            decision = resolve(window, rules)
            if decision.final:
                actions.append({"t": "resolve", "decision": decision.to_dict()})
                events += state.resolve_window(decision)
        else:
            actions.append({"t": "act", "seat": seat, "action": action.to_dict(),
                            "response": False})
            events += state.apply(seat, action)
    assert state.is_over()
    return {
        **fair.reveal(room_id, hand_no, server, clients),
        "game": game, "options": options, "dealer": dealer, "dealer_from_seed": from_seed,
        **deal_layout(game, seed),
        "actions": actions,
        "events": [_cell(i, e) for i, e in enumerate(events)],
        "deltas": list(state.settlement().deltas),
    }


# the options that roll dice (test_dice_and_birds_are_in_the_checked_events)
DICE = [
    ("xuezhan", {"exchange_direction": "dice_mod3"}),
    ("changsha", {}),
    ("changsha", {"opening_hu_birds": "two_dice", "bird_count": 4}),
]
GAMES = [(spec.name, {}) for spec in registry.all()] + DICE   # every game of the registry


def _server(n: int) -> bytes:
    return bytes((n * 37 + i) % 256 for i in range(32))


@pytest.mark.parametrize("game, options", GAMES, ids=[f"{g}-{i}" for i, (g, _) in
                                                      enumerate(GAMES)])
def test_whole_hands_verify_from_their_replays(game, options):
    for hand_no in (1, 2, 3):
        seats = registry.get(game).seats
        clients = (b"seat0", b"", hand_no.to_bytes(2, "big"), b"\xff" * 64)[:seats]
        replay = play_hand(game, 900 + hand_no, hand_no, _server(hand_no), clients, options)
        report = verify(json.loads(json.dumps(replay)))
        assert report.ok, report.text()
        layout, = registry.get(game).deal_layout(0)   # "wall" or "deck"
        assert {c.name: c.status for c in report.checks} == {
            "reveal": "pass", "commitment": "pass", "hand_seed": "skip", "dealer": "pass",
            layout: "pass", "deal": "pass", "events": "pass", "result": "pass"}


def test_dice_and_birds_are_in_the_checked_events():
    """The options that roll dice do roll them in these hands, so "events" covers them."""
    kinds: Counter = Counter()
    for hand_no in range(1, 13):
        for game, options in DICE:
            replay = play_hand(game, 77, hand_no, _server(hand_no), CLIENTS, options)
            for cell in replay["events"]:
                event = json.loads(cell["json"])
                kinds[event["kind"] + ("_dice" if "dice" in event["data"] else "")] += 1
    assert kinds["exchange_done"] > 0 and kinds["draw"] > 0
    assert kinds["birds"] > 0 and kinds["birds_dice"] > 0


def test_a_players_filtered_replay_verifies_too():
    replay = play_hand("changsha", 5, 1, _server(5), CLIENTS)
    mine = [c for c in replay["events"] if c["to"] in (None, 2)]
    report = verify({**replay, "events": mine})
    assert report.ok, report.text()


def test_a_replay_without_actions_checks_the_deal_only():
    replay = play_hand("xuezhan", 5, 1, _server(5), CLIENTS)
    del replay["actions"], replay["wall"]
    report = verify(replay)
    assert report.ok
    assert report.status("events") == "skip" and report.status("wall") == "skip"
    assert report.status("deal") == "pass"


def test_a_stated_hand_seed_is_checked():
    replay = play_hand("dadun", 5, 1, _server(5), CLIENTS)
    seed = fair.hand_seed(5, 1, _server(5), CLIENTS)
    assert verify({**replay, "hand_seed": seed.hex()}).status("hand_seed") == "pass"
    bad = verify({**replay, "hand_seed": bytes(32).hex()})
    assert bad.failed == ["hand_seed"]


# ---------------------------------------------------------------------- tampering


@pytest.fixture(scope="module")
def replays() -> dict[str, dict[str, Any]]:
    return {game: play_hand(game, 4242, 2, _server(9), CLIENTS, dealer=1)
            for game in ("xuezhan", "changsha", "dadun")}


def _copy(replay: dict[str, Any]) -> dict[str, Any]:
    result: dict[str, Any] = json.loads(json.dumps(replay))
    return result


@pytest.mark.parametrize("game", ["xuezhan", "changsha", "dadun"])
def test_tampering_fails_the_right_check(replays, game):
    good = replays[game]
    report = verify(good)
    assert report.ok and report.status("dealer") == "skip", report.text()
    layout = "deck" if game == "dadun" else "wall"

    bad = _copy(good)  # one tile (card) of the stored wall (deck) changed
    k = next(i for i, name in enumerate(bad[layout]) if name != bad[layout][50])
    bad[layout][50] = bad[layout][k]
    assert verify(bad).failed == [layout]

    bad = _copy(good)  # one bit of the revealed server seed
    seed = bytearray(bytes.fromhex(bad["server_seed"]))
    seed[7] ^= 1
    bad["server_seed"] = seed.hex()
    failed = verify(bad).failed
    assert failed[0] == "commitment" and layout in failed

    bad = _copy(good)  # one client seed
    bad["client_seeds"][3] = b"mallory".hex()
    failed = verify(bad).failed
    assert failed[0] == layout and "commitment" not in failed

    bad = _copy(good)  # a seat's dealt hand
    cell = next(c for c in bad["events"] if c["kind"] == "hand" and c["to"] == 2)
    event = json.loads(cell["json"])
    key = "cards" if game == "dadun" else "tiles"
    event["data"][key] = event["data"][key][::-1] + " "
    cell["json"] = json.dumps(event)
    assert verify(bad).failed[0] == "deal"  # "events" (which re-checks the deal) fails too

    bad = _copy(good)  # the dealer
    bad["dealer"] = (bad["dealer"] + 1) % 4
    assert "deal" in verify(bad).failed
    assert verify({**good, "dealer_from_seed": True}).failed in ([], ["dealer"])


def test_a_changed_draw_fails_the_events_check(replays):
    bad = _copy(replays["xuezhan"])
    cell = next(c for c in bad["events"] if c["kind"] == "draw" and c["to"] is not None)
    event = json.loads(cell["json"])
    event["data"]["tile"] = "1m" if event["data"]["tile"] != "1m" else "2m"
    cell["json"] = json.dumps(event)
    report = verify(bad)
    assert report.failed == ["events"] and "recorded" in report.text()


def test_malformed_replays_fail_cleanly(replays):
    good = replays["changsha"]
    for broken in ({**good, "server_seed": "zz"}, {**good, "client_seeds": ["00"] * 3},
                   {**good, "client_seeds": ["00" * 65] * 4}, {**good, "game": "poker"},
                   {k: v for k, v in good.items() if k != "commitment"},
                   {**good, "dealer": 7}):
        report = verify(broken)
        assert not report.ok and report.failed == ["reveal"], report.text()
    assert verify({**good, "actions": [{"t": "act", "seat": 9, "action": {"kind": "x"}}]}
                  ).failed == ["events"]
    assert verify({**good, "deltas": [1, -1, 0, 0]}).failed == ["result"]


def test_command_line(tmp_path, replays):
    good, bad = tmp_path / "good.json", tmp_path / "bad.json"
    good.write_text(json.dumps(replays["dadun"]))
    tampered = _copy(replays["dadun"])
    tampered["client_seeds"][0] = "ff"
    bad.write_text(json.dumps(tampered))
    out = io.StringIO()
    assert verify_deal.main([str(good)], stdout=out) == 0
    assert "PASS commitment" in out.getvalue() and out.getvalue().rstrip().endswith("VERIFIED")
    out = io.StringIO()
    assert verify_deal.main([str(good), str(bad)], stdout=out) == 1
    assert "NOT VERIFIED: deck" in out.getvalue()
    out = io.StringIO()
    assert verify_deal.main(["--json", "-"], stdin=io.StringIO(json.dumps(tampered)),
                            stdout=out) == 1
    assert json.loads(out.getvalue())["failed"][0] == "deck"
    out = io.StringIO()
    assert verify_deal.main([str(tmp_path / "missing.json")], stdout=out) == 1
    assert "cannot read" in out.getvalue()


# ---------------------------------------------------------------------- hidden information


@pytest.mark.parametrize("game", ["xuezhan", "changsha", "dadun"])
def test_no_seed_in_any_view_or_event_during_the_hand(game):
    server = _server(3)
    seed = fair.hand_seed(31, 1, server, CLIENTS)
    secrets = [server.hex(), seed.hex(), str(int.from_bytes(seed, "big")),
               str(int.from_bytes(server, "big"))]
    seen: list[str] = []

    def watch(state: State, events: list[Any]) -> None:
        if state.is_over():
            return
        texts = [json.dumps(state.public_view())]
        texts += [json.dumps(state.observation(s)) for s in range(4)]
        texts += [json.dumps(e.to_dict()) for e in events]
        for text in texts:
            assert not any(s in text for s in secrets)
        seen.append(texts[0])

    play_hand(game, 31, 1, server, CLIENTS, watch=watch)
    assert len(seen) > 10


@pytest.mark.parametrize("game", ["xuezhan", "changsha", "dadun"])
def test_a_fair_hand_survives_serialize_round_trips(game):
    """The table rebuilds hands from serialized state: a fair seed (kept as hex) and the
    dice stream's position survive, so a restored hand goes on exactly like the original."""
    spec = registry.get(game)
    options = {"exchange_direction": "dice_mod3"} if game == "xuezhan" else (
        {"opening_hu_birds": "two_dice"} if game == "changsha" else {})
    seed = fair.hand_seed(8, 1, _server(8), CLIENTS)
    state = spec.new_hand(options, seed, 0)
    for _ in range(3000):
        if state.is_over():
            break
        copy = spec.deserialize(state.serialize())
        seat = state.to_act()[0]
        action = spec.greedy_policy(state, seat)
        assert [e.to_dict() for e in copy.apply(seat, action)] == \
               [e.to_dict() for e in state.apply(seat, action)]
    assert state.is_over()
    assert seed.hex() in state.serialize()  # the log (table only) holds it; views do not
