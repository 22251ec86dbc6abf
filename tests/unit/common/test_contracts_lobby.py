"""The lobbies' contracts (paiju/contracts/lobby.py): the newest login
(``session.kick.<uid>``), an operator's mute (``lobby.mute``) and the ``match_tickets``
entries decode into the type they were written as; the released version's bytes read the
same; a bad one is a BadContract naming the place; docs/services.md lists the types' keys."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from paiju.contracts.lobby import (
    Encounters,
    LobbyPresence,
    MatchLease,
    MatchTicket,
    MetRoom,
    Mute,
    PresenceAnswer,
    PresenceAsk,
    SessionKick,
    decode_stats,
    encode_stats,
    presence_of,
)
from paiju.contracts.typed import BadContract

ROOT = Path(__file__).resolve().parents[3]

KICK = SessionKick(session_id="5f2a", login_at=1_700_000_000.5, gen=3,
                   expiry=1_700_086_400.0, token_id="9c1e")
MUTE = Mute(user_id=77, until=1_700_000_600.0)


def test_round_trips_with_every_key_written() -> None:
    for value in (KICK, MUTE):
        assert type(value).decode(value.encode()) == value
        assert list(json.loads(value.encode())) == list(type(value).__struct_fields__)


def test_the_released_writers_bytes_decode() -> None:
    # a login (hub.announce) and an operator's kick (no token, expiry written as 0)
    assert SessionKick.decode(json.dumps({
        "session_id": "5f2a", "login_at": 1_700_000_000.5, "gen": 3,
        "expiry": 1_700_086_400.0, "token_id": "9c1e"})) == KICK
    operator = SessionKick.decode(json.dumps({
        "session_id": "operator-ab", "login_at": 1.5, "gen": 2**62, "expiry": 0}))
    assert (operator.token_id, operator.expiry, operator.gen) == ("", 0.0, 2**62)
    assert Mute.decode(json.dumps({"user_id": 77, "until": 1_700_000_600})) == \
        Mute(user_id=77, until=1_700_000_600.0)


def test_unknown_keys_are_ignored() -> None:
    assert Mute.decode(json.dumps({"user_id": 77, "until": 1_700_000_600.0,
                                   "operator": "ops"})) == MUTE


@pytest.mark.parametrize(("raw", "where"), [
    ({"login_at": 1.0, "gen": 1, "expiry": 0}, "session_id"),
    ({"session_id": "s", "gen": 1, "expiry": 0}, "login_at"),
    ({"session_id": "s", "login_at": 1.0, "gen": "1", "expiry": 0}, r"\$\.gen"),
    ({"session_id": 5, "login_at": 1.0, "gen": 1, "expiry": 0}, r"\$\.session_id"),
    ({"session_id": "s", "login_at": 1.0, "gen": True, "expiry": 0}, r"\$\.gen"),
    ({"session_id": "s", "login_at": 1.0, "gen": 1, "expiry": None}, r"\$\.expiry"),
])
def test_a_bad_kick_names_the_field(raw: dict, where: str) -> None:
    with pytest.raises(BadContract, match=rf"SessionKick: .*{where}"):
        SessionKick.decode(json.dumps(raw))


@pytest.mark.parametrize("raw", [b"", b"{", b"[]", b'{"user_id": "77", "until": 1}',
                                 b'{"user_id": 77}', b'{"user_id": 77, "until": "soon"}'])
def test_a_bad_mute_is_a_bad_contract(raw: bytes) -> None:
    with pytest.raises(BadContract, match="Mute"):
        Mute.decode(raw)


@pytest.mark.parametrize(("subject", "kind"), [("session.kick.<uid>", SessionKick),
                                               ("lobby.mute", Mute)])
def test_the_documented_keys_are_the_types_fields(subject: str, kind: type) -> None:
    text = (ROOT / "docs/services.md").read_text(encoding="utf-8")
    row = next(line for line in text.splitlines() if line.startswith(f"| `{subject}` |"))
    assert f"`{kind.__name__}`" in row
    listed = re.search(r"\{([^}]*)\}", row)
    assert listed is not None, row
    assert re.findall(r'"(\w+)"', listed.group(1)) == list(kind.__struct_fields__)


# -- the match_tickets bucket ------------------------------------------------------------

TICKET = MatchTicket(ticket_id="abc", user_id=7, session_id="s7", lobby="l1", game="dadun",
                     rule_set="", options_json="{}", stake=2, region="eu", ranked=True,
                     mu=27.5, sigma=3.0, ip="", lat=28.2, lng=112.9, enqueued_at=100.5,
                     state="waiting", party=[7, 8])
OPTIONAL = ("away_at", "claimed_at", "matcher", "room_id", "password", "robots", "creator",
            "matched_at", "done_at", "message")


def test_a_ticket_leaves_its_unset_optional_keys_out() -> None:
    written = json.loads(TICKET.encode())
    assert set(written) == set(MatchTicket.__struct_fields__) - set(OPTIONAL)
    assert MatchTicket.decode(TICKET.encode()) == TICKET
    matched = TICKET.replace(state="matched", room_id=100001, password="p", robots=1,
                             creator=7, matched_at=110.0, done_at=111.0)
    assert json.loads(matched.encode())["room_id"] == 100001
    assert MatchTicket.decode(matched.encode()) == matched
    back = matched.replace(away_at=120.0).replace(away_at=None)
    assert "away_at" not in json.loads(back.encode())


def test_a_ticket_with_an_unknown_state_or_a_bad_party_is_refused() -> None:
    written = json.loads(TICKET.encode())
    for key, bad in [("state", "lost"), ("party", ["7"]), ("party", None), ("stake", 2.5),
                     ("away_at", "soon"), ("room_id", "100001")]:
        with pytest.raises(BadContract, match=rf"MatchTicket: .*\$\.{key}"):
            MatchTicket.decode(json.dumps({**written, key: bad}))


def test_a_presence_entry_is_an_ask_or_an_answer() -> None:
    ask = PresenceAsk(ask="n1", at=5.0)
    answer = PresenceAnswer(here=True, room_id=0, lobby="l2")
    assert presence_of(ask.encode()) == ask
    assert presence_of(answer.encode()) == answer
    with pytest.raises(BadContract):
        presence_of(b'{"here": true}')


def test_encounters_stats_and_leases_round_trip() -> None:
    met = Encounters(slot=28_333_333, rooms=[MetRoom(at=1.5, groups=[[1, 2], [3]],
                                                     game="changsha", by="m1")])
    assert Encounters.decode(met.encode()) == met
    with pytest.raises(BadContract, match=r"Encounters: .*\$\.rooms\[0\]\.groups"):
        Encounters.decode(b'{"slot": 1, "rooms": [{"at": 1, "groups": [[1, "x"]], '
                          b'"game": "g", "by": "m"}]}')
    assert decode_stats(encode_stats({"dadun||1||0": 4.5})) == {"dadun||1||0": 4.5}
    with pytest.raises(BadContract):
        decode_stats(b'{"dadun||1||0": "slow"}')
    lease = MatchLease(owner="l1", at=3.0)
    assert MatchLease.decode(lease.encode()) == lease
    assert LobbyPresence.decode(b'{"at": 3}') == LobbyPresence(at=3.0)


@pytest.mark.parametrize(("key", "kinds"), [
    ("t.<user id>", [MatchTicket]), ("p.<user id>", [PresenceAsk, PresenceAnswer]),
    ("e.<slot>", [Encounters, MetRoom]), ("lease.<game>", [MatchLease]),
    ("l.<lobby instance>", [LobbyPresence])])
def test_the_documented_match_keys_are_the_types_fields(key: str, kinds: list[type]) -> None:
    """Each type named in the row lists its written keys (a ticket's optional ones are
    named in the row's text)."""
    text = (ROOT / "docs/services.md").read_text(encoding="utf-8")
    row = next(line for line in text.splitlines() if line.startswith(f"| `{key}` |"))
    for kind in kinds:
        listed = re.search(rf"`{kind.__name__}` `\{{([^}}]*)\}}`", row)
        assert listed is not None, f"{kind.__name__} in {row}"
        fields = [f for f in kind.__struct_fields__ if f not in OPTIONAL or kind is not MatchTicket]
        assert re.findall(r'"(\w+)"', listed.group(1)) == fields
    if kinds == [MatchTicket]:
        assert all(f"`{name}`" in row for name in OPTIONAL)
