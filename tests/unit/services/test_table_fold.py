"""A room is a fold of its log records (services/table/room.py): records in, state and
facts out, no NATS, no clock. Folding the same records again gives the same room."""

from __future__ import annotations

from games.arbitration import resolve
from paiju.v1 import common_pb2
from paiju.v1 import lobby_msgs_pb2 as lm
from services.table import checks
from services.table import facts as ft
from services.table import logrec as lr
from services.table import room as r
from services.table.room import Room

CHENGDU = (30.6598, 104.0633)


def profile(uid: int, lat: float = 0.0, lng: float = 0.0, ip: str = "") -> lr.Profile:
    return lr.Profile(nickname=f"u{uid}", coins=1000, ip=ip, lat=lat, lng=lng)


def create(game: str = "xuezhan", total_hands: int = 1, **options: object) -> lr.Create:
    return lr.Create(12345678, game, options, {"turn_seconds": 20.0}, total_hands=total_hands)


class Log:
    """Records as the actor appends them: stamped with their index, folded in order."""

    def __init__(self, first: lr.Create, settings: r.RoomSettings | None = None) -> None:
        self.records: list[lr.Record] = []
        self.room = Room(first, settings or r.RoomSettings())
        self.add(first)

    def add(self, rec: lr.Record) -> list[ft.Fact]:
        rec = lr.stamp(rec, len(self.records))
        self.records.append(rec)
        return self.room.apply(rec)


def seated(game: str = "xuezhan", total_hands: int = 1) -> Log:
    log = Log(create(game, total_hands))
    for seat, uid in enumerate((11, 12, 13, 14)):
        log.add(lr.Join(seat, uid, profile(uid)))
    return log


def play_hand(log: Log) -> list[ft.Fact]:
    """Ready every seat, start, and let the greedy bot play every seat to the hand's end
    (window answers recorded, then resolved, as the actor does)."""
    room = log.room
    facts: list[ft.Fact] = []
    for seat in range(4):
        facts += log.add(lr.Ready(seat, True))
    assert checks.can_start(room)
    facts += log.add(lr.Start(room.hand_no + 1, (20261202).to_bytes(32, "big").hex(), room.dealer))
    return facts + play_rest(log)


def play_rest(log: Log) -> list[ft.Fact]:
    """The rest of a started hand, the greedy bot playing every seat (facts of every record)."""
    room = log.room
    facts: list[ft.Fact] = []
    for _ in range(3000):
        if not room.in_hand():
            return facts
        assert room.state is not None
        seat = room.to_act()[0]
        response = room.is_response(seat)
        action = room.spec.greedy_policy(room.state, seat)
        facts += log.add(lr.Act(seat, action, "entrust", response))
        window, rules = room.pending_window(), room.arbitration_rules()
        if response and window is not None and rules is not None:
            decision = resolve(window, rules)
            if decision.final:
                facts += log.add(lr.Resolve(decision))
    raise AssertionError("the hand did not end")


def test_create_sets_the_rules_and_keeps_room_options_from_the_engine() -> None:
    room = Room(create("dadun", total_hands=8, turn_seconds=12, entrust_cancels=1))
    assert (room.game, room.total_hands, room.base_score, room.entrust_cancels) == ("dadun", 8, 1, 1)
    assert room.room_options == {"turn_seconds": 12, "entrust_cancels": 1}
    assert "turn_seconds" not in room.engine_options
    assert room.engine_options["play_timeout_s"] == 12   # Dadun shows the timer that runs
    assert room.status == common_pb2.ROOM_WAITING and room.free_seats() == 4


def test_a_join_seats_the_player_and_says_so() -> None:
    log = Log(create())
    facts = log.add(lr.Join(2, 11, profile(11, *CHENGDU), "s-1", 100.0))
    seat = log.room.seats[2]
    assert seat is not None and seat.user_id == 11 and seat.session == "s-1"
    assert log.room.positions == {11: CHENGDU}
    change = facts[0]
    assert isinstance(change, ft.PlayerChanged) and change.change == "join"
    assert [i for i, _ in change.players] == [2]
    assert facts[1:] == [ft.SatDown(2), ft.SeatMoved(11, 2), ft.Changed()]


def test_a_rejoin_keeps_the_first_position_and_is_no_new_player() -> None:
    log = Log(create())
    log.add(lr.Join(0, 11, profile(11, *CHENGDU)))
    facts = log.add(lr.Join(0, 11, lr.Profile(nickname="again", lat=1.0, lng=2.0)))
    seat = log.room.seats[0]
    assert seat is not None and (seat.lat, seat.lng) == CHENGDU and seat.nickname == "again"
    assert facts == [ft.SeatMoved(11, 0), ft.Changed()]


def test_a_leave_reports_the_players_as_they_were() -> None:
    log = seated()
    facts = log.add(lr.Leave(1))
    change = facts[0]
    assert isinstance(change, ft.PlayerChanged) and change.change == "leave"
    assert [i for i, _ in change.players] == [0, 1, 2, 3]
    assert log.room.seats[1] is None and facts[1:] == [ft.SeatMoved(12, None), ft.Changed()]


def test_going_offline_in_a_hand_entrusts_the_seat_after_reporting_it() -> None:
    log = seated()
    for seat in range(4):
        log.add(lr.Ready(seat, True))
    log.add(lr.Start(1, (7).to_bytes(32, "big").hex(), 0))
    facts = log.add(lr.Offline(2))
    change, entrusted = facts
    assert isinstance(change, ft.PlayerChanged) and change.change == "offline"
    snap = dict(change.players)[2]
    assert not snap.online and not snap.entrusted       # the moment of the change
    assert entrusted == ft.Entrusted(2, True, 3)
    seat = log.room.seats[2]
    assert seat is not None and seat.entrusted and seat.entrust_offline
    facts = log.add(lr.Online(2, "s-9", 5.0))           # back: entrust for being away ends
    assert facts[0] == ft.Entrusted(2, False, 3)
    assert isinstance(facts[1], ft.PlayerChanged) and facts[1].change == "online"


def test_a_later_session_replaces_the_recorded_one_an_older_does_not() -> None:
    log = seated()
    log.add(lr.Online(0, "new", 200.0))
    log.add(lr.Online(0, "old", 100.0))
    seat = log.room.seats[0]
    assert seat is not None and (seat.session, seat.session_at) == ("new", 200.0)
    assert not log.room.session_is_current(0, "old", 100.0)


def test_cancel_entrust_uses_up_a_cancel() -> None:
    log = seated()
    log.add(lr.Entrust(1, "exit"))
    assert log.add(lr.CancelEntrust(1)) == [ft.Entrusted(1, False, 2)]
    seat = log.room.seats[1]
    assert seat is not None and not seat.entrusted and seat.cancels_left == 2


def test_a_hand_is_dealt_played_settled_and_the_last_one_closes_the_room() -> None:
    log = seated("xuezhan", total_hands=1)
    facts = play_hand(log)
    room = log.room
    dealt = next(f for f in facts if isinstance(f, ft.EngineEvents))
    assert any(e.event.kind == "deal" for e in dealt.events)
    ended = [f for f in facts if isinstance(f, ft.HandEnded)]
    assert len(ended) == 1 and ended[0].hand_no == 1 and sum(ended[0].deltas) == 0
    assert [s.total for _, s in room.seated()] == list(ended[0].deltas)
    assert ended[0].events == tuple(room.hand_events) and ended[0].user_ids == (11, 12, 13, 14)
    closed = [f for f in facts if isinstance(f, ft.Closed)]
    assert closed == [ft.Closed(lm.NoticeDismiss.ALL_HANDS_PLAYED, "all hands have been played",
                               ended[0].deltas, 1)]
    assert room.closed and room.status == common_pb2.ROOM_FINISHED
    assert {f for f in facts if isinstance(f, ft.SeatMoved)} == {
        ft.SeatMoved(uid, None) for uid in (11, 12, 13, 14)}


def test_a_room_between_hands_waits_for_ready_with_the_next_dealer() -> None:
    log = seated("dadun", total_hands=2)
    facts = play_hand(log)
    ended = next(f for f in facts if isinstance(f, ft.HandEnded))
    room = log.room
    assert room.status == common_pb2.ROOM_HAND_OVER and not room.closed
    assert room.dealer == ended.next_dealer and not checks.can_start(room)
    assert not any(s.ready for _, s in room.seated())


def test_folding_the_same_records_again_gives_the_same_room() -> None:
    log = seated("changsha", total_hands=2)
    play_hand(log)
    first = log.records[0]
    assert isinstance(first, lr.Create)
    again = Room(first)
    for rec in log.records:
        again.apply(lr.decode(lr.encode(rec)))   # through the log's JSON form, as a rebuild
    a, b = log.room, again
    assert (a.hand_no, a.dealer, a.status, a.history, a.decision) == \
        (b.hand_no, b.dealer, b.status, b.history, b.decision)
    assert [(s.user_id, s.total, s.ready) for _, s in a.seated()] == \
        [(s.user_id, s.total, s.ready) for _, s in b.seated()]
    assert a.state is not None and b.state is not None
    assert a.state.observation(0) == b.state.observation(0)


def test_a_dismiss_vote_closes_the_room_when_the_majority_agrees() -> None:
    log = seated()
    assert log.add(lr.DismissApply(1, 60, 1e9)) == [ft.DismissAsked(60)]
    room = log.room
    assert room.status == common_pb2.ROOM_DISMISSING and room.dismiss_until == 1e9
    log.add(lr.DismissVote(2, True, 50))
    assert checks.dismiss_outcome(room) is None
    log.add(lr.DismissVote(3, True, 40))
    assert checks.dismiss_outcome(room) is True
    facts = log.add(lr.DismissResult(True))
    assert facts[0] == ft.Closed(lm.NoticeDismiss.PLAYER_VOTE,
                                "the players voted to dismiss the room", (0, 0, 0, 0), 0)
    assert room.closed and room.dismiss is None


def test_a_refused_dismiss_vote_reopens_the_room() -> None:
    log = seated()
    log.add(lr.DismissApply(0, 60, 1e9))
    log.add(lr.DismissVote(1, False, 50))
    log.add(lr.DismissVote(2, False, 40))
    assert checks.dismiss_outcome(log.room) is False
    assert log.add(lr.DismissResult(False)) == [ft.DismissRefused()]
    assert log.room.status == common_pb2.ROOM_WAITING and not log.room.closed


def test_an_owner_record_changes_nothing() -> None:
    log = seated()
    before = [(s.user_id, s.online) for _, s in log.room.seated()]
    assert log.add(lr.Owner("table-b", "boot")) == []
    assert [(s.user_id, s.online) for _, s in log.room.seated()] == before


def test_the_timer_of_a_decision_comes_from_the_room_then_the_creation_then_the_table() -> None:
    defaults = {"turn_seconds": 30.0, "window_seconds": 9.0, "alone_seconds": 15.0}
    assert Room(create()).decision_seconds(defaults) == 20.0        # the create record's
    assert Room(create(turn_seconds=5)).decision_seconds(defaults) == 5.0
    assert Room(lr.Create(1, "xuezhan")).decision_seconds(defaults) == 30.0


def test_client_seeds_are_taken_between_hands_after_the_commitment_only() -> None:
    log = seated()
    room = log.room
    assert checks.needs_commitment(room)
    try:
        checks.next_hand_seedable(room)
        raise AssertionError("a seed before the commitment must be refused")
    except r.RoomError as err:
        assert err.code == common_pb2.ERR_HAND_IN_PROGRESS
    facts = log.add(lr.Commit(1, "ab" * 32, "cd" * 32))
    assert ft.Committed(1, "cd" * 32) in facts and not checks.needs_commitment(room)
    assert checks.next_hand_seedable(room) == 1
    log.add(lr.ClientSeed(2, 1, "0f0f"))
    log.add(lr.ClientSeed(2, 1, "1e"))      # the last one before the hand counts
    assert room.fair.next is not None and room.fair.next.client_seeds == [None, None, b"\x1e", None]
    seed = room.fair.hand_seed(room.room_id, 1)
    assert seed is not None and room.fair.hand_seed(room.room_id, 2) is None
    for seat in range(4):
        log.add(lr.Ready(seat, True))
    log.add(lr.Start(1, seed.hex(), 2, dealer_from_seed=True))
    assert room.in_hand() and room.seed == seed and room.fair.next is None
    try:
        checks.next_hand_seedable(room)
        raise AssertionError("a seed during the hand must be refused")
    except r.RoomError as err:
        assert err.code == common_pb2.ERR_HAND_IN_PROGRESS
    ended = [f for f in play_rest(log) if isinstance(f, ft.HandEnded)]
    fair = ended[0].fair
    assert fair is not None and fair.client_seeds == ("", "", "1e", "")
    assert fair.server_seed == "ab" * 32 and fair.hand_seed == seed.hex()
    assert fair.actions and all(a["t"] in ("act", "resolve") for a in fair.actions)
