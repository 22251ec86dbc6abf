"""The matchmaker's pure parts (services/lobby/matchmaker.py): a request's rule set is the
options that differ from the game's defaults, in one canonical spelling; a ticket's bucket
value reads back as the matcher's ticket; a loopback address counts as no address."""

from __future__ import annotations

import time

import pytest

from paiju.v1 import common_pb2
from services.lobby.errors import Reject
from services.lobby.matchmaker import _loopback, queue_name, rule_set_of, ticket_of


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


def test_a_bucket_value_reads_back_as_the_matchers_ticket() -> None:
    value = {"ticket_id": "abc", "user_id": 7, "game": "dadun", "rule_set": "",
             "stake": 2, "region": "eu", "ranked": True, "mu": 27.5, "sigma": 3.0,
             "ip": "10.0.0.7", "lat": 28.2, "lng": 112.9, "enqueued_at": 100.5}
    ticket = ticket_of(value)
    assert (ticket.ticket_id, ticket.game, ticket.stake, ticket.region, ticket.ranked,
            ticket.enqueued_at) == ("abc", "dadun", 2, "eu", True, 100.5)
    (p,) = ticket.players
    assert (p.user_id, p.mu, p.sigma, p.ip, p.lat, p.lng) == (7, 27.5, 3.0, "10.0.0.7",
                                                              28.2, 112.9)
    assert queue_name(ticket.key) == "dadun||2|eu|1"
    with pytest.raises(KeyError):
        ticket_of({k: v for k, v in value.items() if k != "mu"})


def test_loopback_says_nothing_of_where_a_player_is() -> None:
    assert _loopback("127.0.0.1") and _loopback("::1") and _loopback("")
    assert not _loopback("10.1.2.3") and not _loopback("2001:db8::1")


def test_a_new_matcher_recalls_the_days_rooms_from_the_encounter_slots() -> None:
    """``e.<slot>`` entries as the watch keeps them: rooms older than a day and bad rooms
    are skipped, the rest noted oldest first (a party's members never count as met)."""
    from types import SimpleNamespace

    from services.common.config import LobbyConfig
    from services.lobby.matching import DAY_SECONDS, Matcher
    from services.lobby.matchmaker import MET_PREFIX, MET_SLOTS, Matchmaking

    now = time.time()
    mm = Matchmaking(SimpleNamespace(lobby=LobbyConfig(match_stranger_tables_per_day=1)))
    assert mm._match_config().stranger_tables_per_day == 1
    mm.view = {
        f"{MET_PREFIX}3": (5, {"slot": 3, "rooms": [
            {"at": now - 30, "groups": [[1, 2], [3], [4]]},
            {"at": now - DAY_SECONDS - 5, "groups": [[5], [6]]},      # a day ago: gone
            {"at": "when", "groups": [[7], [8]]}]}),                   # bad: skipped
        f"{MET_PREFIX}{MET_SLOTS - 1}": (6, {"slot": 9, "rooms": [
            {"at": now - 90, "groups": [[1], [3]]}]}),
        "t.1": (7, {"state": "waiting"})}
    matcher = Matcher(mm._match_config())
    mm._recall(matcher)
    enc = matcher.encounters
    assert enc.count(1, 3) == 2 and enc.count(2, 4) == 1 and enc.count(1, 2) == 0
    assert enc.count(5, 6) == 0 and enc.count(7, 8) == 0
    enc.expire(now + DAY_SECONDS - 60)            # the older room's day is over first
    assert enc.count(1, 3) == 1
