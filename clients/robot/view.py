"""What a client knows when it must decide: the server's Prompt (legal actions and the
seat's own observation). The bot policies in games/bots only ever call ``legal_actions``
and ``observation``, so this view is all a robot needs to play like entrust does."""

from __future__ import annotations

import json
from typing import Any

from games import registry
from games.engine import Action
from paiju.v1 import game_msgs_pb2 as g


class PromptView:
    def __init__(self, prompt: g.Prompt) -> None:
        self.prompt = prompt
        self.seat = prompt.seat
        self._actions = [Action(a.kind, tuple(a.tiles), a.ref, a.choice) for a in prompt.actions]
        self._observation: dict[str, Any] = json.loads(prompt.observation_json or "{}")

    def legal_actions(self, seat: int) -> list[Action]:
        return list(self._actions) if seat == self.seat else []

    def observation(self, seat: int) -> dict[str, Any]:
        return self._observation if seat == self.seat else {}


def choose(game: str, prompt: g.Prompt, policy: str = "greedy", stream: Any = None) -> Action:
    """The robot's move for a prompt, with the same policies entrust uses."""
    view = PromptView(prompt)
    spec = registry.get(game)
    if policy == "random" and stream is not None:
        return spec.random_policy(view, view.seat, stream)
    return spec.greedy_policy(view, view.seat)
