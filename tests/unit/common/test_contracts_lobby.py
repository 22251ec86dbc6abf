"""The lobbies' messages to each other (paiju/contracts/lobby.py): the newest login
(``session.kick.<uid>``) and an operator's mute (``lobby.mute``) decode into the type they
were written as; the released version's bytes read the same; a bad one is a BadContract."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from paiju.contracts.lobby import Mute, SessionKick
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
