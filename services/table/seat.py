"""A seat of a room as the fold keeps it: who sits there, his profile, and where he stands
(ready, online, entrusted, score, the lobby session that speaks for him)."""

from __future__ import annotations

from dataclasses import dataclass

from services.table.logrec import Profile


@dataclass
class Seat:
    user_id: int
    profile: Profile
    cancels_left: int
    ready: bool = False
    online: bool = True
    entrusted: bool = False
    entrust_offline: bool = False  # entrusted because the connection went away
    total: int = 0
    session: str = ""              # the lobby session that last came online here ("" unknown)
    session_at: float = 0.0        # its login time (wall clock), orders sessions of one user
    robot: bool = False            # seated by the table (AddRobots): ready and entrusted for good

    @property
    def nickname(self) -> str:
        return self.profile.nickname or f"player{self.user_id}"

    @property
    def ip(self) -> str:
        return self.profile.ip

    @property
    def lat(self) -> float:
        return self.profile.lat

    @property
    def lng(self) -> float:
        return self.profile.lng
