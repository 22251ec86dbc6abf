"""What the terminal keeps in view, as pure state (no I/O): the status line shown as the
input prompt (the room, the seat, the hand, whose decision, and the entrust state, always),
the room-list changes of other rooms summarised instead of streamed, and one same-IP alert
per room instead of one per pair of players."""

from __future__ import annotations

import time
from collections import Counter
from dataclasses import dataclass, field

from games import registry
from paiju.v1 import common_pb2
from paiju.v1 import lobby_msgs_pb2 as lm

SUMMARY_SECONDS = 10.0      # room-list summaries at most this often
REASONS = {lm.RoomChange.CREATED: "created", lm.RoomChange.UPDATED: "updated",
           lm.RoomChange.STARTED: "started", lm.RoomChange.DISMISSED: "closed"}
GAMES = {spec.game_type: spec.name for spec in registry.all()}   # paiju.v1.Game -> name


@dataclass
class Focus:
    entrusted: bool = False
    cancels_left: int | None = None
    changes: Counter[str] = field(default_factory=Counter)
    changed_rooms: set[int] = field(default_factory=set)
    last_summary: float = 0.0
    same_ip: set[int] = field(default_factory=set)
    same_ip_room: int = 0
    same_ip_told: int = 0           # how many players the last same-IP line named
    moment: bool = False            # a command answered "a moment" waits for its next try

    # ------------------------------------------------------------------ room list
    def room_change(self, change: lm.RoomChange) -> None:
        """Another room changed: counted for the next summary, not printed."""
        self.changes[REASONS.get(change.reason, "updated")] += 1
        self.changed_rooms.add(change.room.room_id)

    def room_summary(self, now: float | None = None, force: bool = False) -> str | None:
        """One line for the changes since the last summary (at most every SUMMARY_SECONDS)."""
        now = time.monotonic() if now is None else now
        if not self.changes or (not force and now - self.last_summary < SUMMARY_SECONDS):
            return None
        parts = ", ".join(f"{n} {reason}" for reason, n in sorted(self.changes.items()))
        rooms = len(self.changed_rooms)
        line = (f"(room list: {parts} in {rooms} room{'s' if rooms != 1 else ''}; "
                "'list' shows them)")
        self.clear_changes(now)
        return line

    def clear_changes(self, now: float | None = None) -> None:
        self.changes.clear()
        self.changed_rooms.clear()
        self.last_summary = time.monotonic() if now is None else now

    # ------------------------------------------------------------------ alerts
    def alert(self, alert: lm.DistanceAlert, room_id: int, name: dict[int, str]) -> str | None:
        """The line to print for a DistanceAlert, or None when this room's same-IP alert
        already named these players. Distance alerts (too close) print each time."""
        if "IP" not in alert.alert or not alert.user_ids:
            return f"geo alert (距离警告): {alert.alert}"
        if room_id != self.same_ip_room:
            self.same_ip, self.same_ip_room, self.same_ip_told = set(), room_id, 0
        self.same_ip.update(alert.user_ids)
        if self.same_ip_told:   # told once for this room: the status line keeps the count
            return None
        self.same_ip_told = len(self.same_ip)
        return f"geo alert (同IP): {alert.alert}; further players on that address are counted, not repeated"

    def same_ip_line(self, name: dict[int, str]) -> str | None:
        """The room's same-IP players in one line, when more joined since the alert."""
        if len(self.same_ip) <= self.same_ip_told:
            return None
        self.same_ip_told = len(self.same_ip)
        names = sorted(name.get(u, str(u)) for u in self.same_ip)
        return f"geo alert (同IP): {', '.join(names)} share an IP address"

    def left_room(self) -> None:
        self.same_ip, self.same_ip_room, self.same_ip_told = set(), 0, 0
        self.entrusted, self.cancels_left = False, None

    # ------------------------------------------------------------------ entrust
    def set_entrust(self, on: bool, cancels_left: int | None = None) -> None:
        self.entrusted = on
        if cancels_left is not None:
            self.cancels_left = cancels_left

    # ------------------------------------------------------------------ the prompt
    def status(self, room: common_pb2.RoomInfo | None, seat: int, deciding: bool,
               hand_no: int = 0) -> str:
        """The input prompt: ``[room 123 xuezhan hand 1/4 · seat 2 · your move · 托管 ON] > ``."""
        # a command sent again after "a moment" (the room moving between tables): quiet
        moment = " · reconnecting… a moment" if self.moment else ""
        if room is None:
            return f"[lobby{moment}] > "
        hand = hand_no or room.cur_hand
        parts = [f"room {room.room_id} {GAMES.get(room.game, '?')} hand {hand}/{room.total_hands}",
                 f"seat {seat}"]
        if deciding:
            parts.append("your move")
        if self.entrusted:
            left = "" if self.cancels_left is None else f", {self.cancels_left} cancels left"
            parts.append(f"托管 entrust ON{left}: 'entrust-cancel'")
        else:
            parts.append("entrust off")
        if len(self.same_ip) > 1:
            parts.append(f"same IP: {len(self.same_ip)}")
        return "[" + " · ".join(parts) + moment + "] > "
