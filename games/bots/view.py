"""What a policy may see of a game: the protocol both bot modules take as ``state``."""

from __future__ import annotations

from typing import Any, Protocol

from games.engine import Action


class PlayerView(Protocol):
    """A seat's legal actions and observation, and nothing else: an engine state
    (:class:`games.engine.State`) or a client's prompt both provide it."""

    def legal_actions(self, seat: int) -> list[Action]: ...

    def observation(self, seat: int) -> dict[str, Any]: ...
