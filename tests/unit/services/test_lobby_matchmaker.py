"""The matchmaker's pure parts (services/lobby/matchmaker.py): a request's rule set is the
options that differ from the game's defaults, in one canonical spelling; a ticket's bucket
value reads back as the matcher's ticket; a loopback address counts as no address."""

from __future__ import annotations

import json
import time

import pytest

from paiju.contracts.lobby import MatchTicket
from paiju.contracts.typed import BadContract
from paiju.v1 import common_pb2
from services.lobby.errors import Reject
from services.lobby.matchmaker import _loopback, parties, queue_name, rule_set_of, ticket_of


def test_the_rule_set_is_what_differs_from_the_defaults_in_one_spelling() -> None:
    assert rule_set_of("changsha", "") == ("", "{}")
    assert rule_set_of("changsha", '{"bird_count": 2}') == ("", "{}")      # the default
    key, options = rule_set_of("changsha", '{ "bird_mode": "add_double", "bird_count": 4 }')
    assert key == '{"bird_count":4}' and options == '{"bird_count": 4}'
    assert rule_set_of("xuezhan", '{"cap_fan": 3, "multi_ron": false}')[0] == \
        rule_set_of("xuezhan", '{"multi_ron": false, "cap_fan": 3}')[0]


@pytest.mark.parametrize("game, options", [
    ("poker", ""), ("", ""), ("changsha", '{"no_such_rule": 1}'), ("xuezhan", "[1]"),
    ("xuezhan", "{not json"), ("dadun", '{"deal_cards": "many"}'),
])
def test_unknown_games_and_rules_are_bad_options(game: str, options: str) -> None:
    with pytest.raises(Reject) as refused:
        rule_set_of(game, options)
    assert refused.value.code == common_pb2.ERR_BAD_OPTIONS


VALUE = {"ticket_id": "abc", "user_id": 7, "session_id": "s7", "lobby": "l1", "game": "dadun",
         "rule_set": "", "options_json": "{}", "stake": 2, "region": "eu", "ranked": True,
         "mu": 27.5, "sigma": 3.0, "ip": "10.0.0.7", "lat": 28.2, "lng": 112.9,
         "enqueued_at": 100.5, "state": "waiting", "party": []}


def test_a_bucket_value_reads_back_as_the_matchers_ticket() -> None:
    ticket = ticket_of(MatchTicket.decode(json.dumps(VALUE)))
    assert (ticket.ticket_id, ticket.game, ticket.stake, ticket.region, ticket.ranked,
            ticket.enqueued_at) == ("abc", "dadun", 2, "eu", True, 100.5)
    (p,) = ticket.players
    assert (p.user_id, p.mu, p.sigma, p.ip, p.lat, p.lng) == (7, 27.5, 3.0, "10.0.0.7",
                                                              28.2, 112.9)
    assert queue_name(ticket.key) == "dadun||2|eu|1"
    with pytest.raises(BadContract, match=r"MatchTicket: .*`mu`"):
        MatchTicket.decode(json.dumps({k: v for k, v in VALUE.items() if k != "mu"}))
    with pytest.raises(BadContract, match=r"MatchTicket: .*\$\.state"):
        MatchTicket.decode(json.dumps({**VALUE, "state": "lost"}))


def test_a_party_is_one_ticket_once_all_its_members_wait() -> None:
    members = [MatchTicket.decode(json.dumps({**VALUE, "ticket_id": f"t{u}", "user_id": u,
                                              "party": [7, 8], "enqueued_at": 100.0 + u}))
               for u in (8, 7)]
    alone = MatchTicket.decode(json.dumps({**VALUE, "ticket_id": "t9", "user_id": 9}))
    waiting = {v.ticket_id: (f"t.{v.user_id}", 1, v) for v in [*members, alone]}
    units = parties(waiting)
    assert sorted(units) == ["t7+t8", "t9"]
    assert [v.user_id for *_, v in units["t7+t8"]] == [7, 8]
    ticket = ticket_of(*(v for *_, v in units["t7+t8"]))
    assert ticket.ticket_id == "t7+t8" and ticket.enqueued_at == 108.0
    del waiting["t8"]        # one member has not asked yet: the other waits for him
    assert sorted(parties(waiting)) == ["t9"]


def test_loopback_says_nothing_of_where_a_player_is() -> None:
    assert _loopback("127.0.0.1") and _loopback("::1") and _loopback("")
    assert not _loopback("10.1.2.3") and not _loopback("2001:db8::1")


def test_a_new_matcher_recalls_the_days_rooms_from_the_encounter_slots() -> None:
    """``e.<slot>`` entries as the watch keeps them: rooms older than a day are skipped,
    the rest noted oldest first (a party's members never count as met); an unreadable
    entry is skipped whole (logged)."""
    from types import SimpleNamespace

    from services.common.config import LobbyConfig
    from services.lobby.matching import DAY_SECONDS, Matcher
    from services.lobby.matchmaker import MET_PREFIX, MET_SLOTS, Matchmaking

    now = time.time()
    mm = Matchmaking(SimpleNamespace(lobby=LobbyConfig(match_stranger_tables_per_day=1)))
    assert mm._match_config().stranger_tables_per_day == 1
    def room(at: float, groups: list[list[int]]) -> dict:
        return {"at": at, "groups": groups, "game": "changsha", "by": "m1"}

    for key, value in [
            (f"{MET_PREFIX}3", {"slot": 3, "rooms": [
                room(now - 30, [[1, 2], [3], [4]]),
                room(now - DAY_SECONDS - 5, [[5], [6]])]}),        # a day ago: gone
            (f"{MET_PREFIX}{MET_SLOTS - 1}", {"slot": 9, "rooms": [room(now - 90, [[1], [3]])]}),
            (f"{MET_PREFIX}4", {"slot": 4, "rooms": [              # bad: skipped whole
                room(now - 20, [[7], [8]]), {**room(now, [[7], [8]]), "at": "when"}]})]:
        mm._heard_entry(key, 5, json.dumps(value).encode())
    assert set(mm.met) == {f"{MET_PREFIX}3", f"{MET_PREFIX}{MET_SLOTS - 1}"}
    matcher = Matcher(mm._match_config())
    mm._recall(matcher)
    enc = matcher.encounters
    assert enc.count(1, 3) == 2 and enc.count(2, 4) == 1 and enc.count(1, 2) == 0
    assert enc.count(5, 6) == 0 and enc.count(7, 8) == 0
    enc.expire(now + DAY_SECONDS - 60)            # the older room's day is over first
    assert enc.count(1, 3) == 1
