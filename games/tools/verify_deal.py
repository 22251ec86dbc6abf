"""Check a hand's deal from its replay: ``python -m games.tools.verify_deal REPLAY.json``.

The replay is the settlement message the table publishes (docs/services.md, "A settlement
message") plus the fields of docs/fairness.md, "The replay": ``game``, ``room_id``,
``hand_no``, ``options``, ``dealer``, the reveal (``commitment``, ``server_seed``,
``client_seeds``), optionally ``dealer_from_seed``, the stored ``wall`` (mahjong) or ``deck``
(Dadun), the engine inputs ``actions`` and the recorded ``events``. Checks, in order:

* ``reveal`` - the fields are present and well formed (hex, 32-byte seed, <= 64-byte client
  seeds, one per seat);
* ``commitment`` - SHA-256 of the committed layout equals the published commitment;
* ``hand_seed`` - only when the replay states one: it equals the derivation;
* ``dealer`` - when ``dealer_from_seed``: the dealer is the "dealer" draw of the hand seed;
* ``wall`` / ``deck`` - the stored layout is the derived shuffle, tile for tile;
* ``deal`` - the deal events in the replay (the public "deal", every seat's dealt hand)
  are those of the derived deal;
* ``events`` - the engine re-run from the derived seed and the replay's ``actions``
  reproduces every recorded event (draws and their order, dice, birds, reveals);
* ``result`` - when the replay states ``deltas``: the re-run's settlement has them.

A check is "pass", "fail" or "skip" (nothing in the replay to check it against). The verdict
is positive when no check fails and the commitment passed. Exit code 0 on a positive verdict
for every file, 1 otherwise. :func:`verify` is the same as a function, for services and
clients.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TextIO

from games import registry
from games.arbitration import Decision, InvalidWindow
from games.engine import Action, Event, RuleError, State
from games.fair import (
    FairError,
    commitment,
    first_dealer,
    hand_seed,
    parse_hex,
    parse_reveal,
)

PASS, FAIL, SKIP = "pass", "fail", "skip"


@dataclass(frozen=True, slots=True)
class Check:
    name: str
    status: str  # PASS / FAIL / SKIP
    detail: str

    def to_dict(self) -> dict[str, str]:
        return {"name": self.name, "status": self.status, "detail": self.detail}


@dataclass(frozen=True, slots=True)
class Report:
    """The checks of one replay, in the order they ran."""

    checks: tuple[Check, ...]

    @property
    def ok(self) -> bool:
        """No check failed, and the commitment was checked and matched."""
        return not self.failed and any(c.name == "commitment" and c.status == PASS
                                       for c in self.checks)

    @property
    def failed(self) -> list[str]:
        """Names of the failed checks, first failure first."""
        return [c.name for c in self.checks if c.status == FAIL]

    def status(self, name: str) -> str | None:
        return next((c.status for c in self.checks if c.name == name), None)

    def to_dict(self) -> dict[str, Any]:
        return {"ok": self.ok, "failed": self.failed, "checks": [c.to_dict() for c in self.checks]}

    def text(self) -> str:
        lines = [f"{c.status.upper():4} {c.name}: {c.detail}" for c in self.checks]
        lines.append("VERIFIED" if self.ok else "NOT VERIFIED: " + (
            ", ".join(self.failed) or "the commitment was not checked"))
        return "\n".join(lines)


def deal_layout(game: str, seed: bytes | int) -> dict[str, list[str]]:
    """What the replay stores of a hand's shuffle: ``{"wall": tile names}`` (mahjong, in
    draw order from the front) or ``{"deck": card names}`` (the card games, in deal order):
    the game's own layout (its registry entry's ``deal_layout``)."""
    return dict(registry.get(game).deal_layout(seed))


def verify(replay: Mapping[str, Any]) -> Report:
    """Run every check on one replay (a dict shaped as in the module doc); never raises for
    bad input - a malformed replay is a failed check."""
    checks: list[Check] = []
    try:
        room_id, hand_no, server, clients, commit = parse_reveal(replay)
        spec = registry.get(_str(replay, "game"))
        if len(clients) != spec.seats:
            raise FairError(f"client seeds: expected one per seat ({spec.seats}), "
                            f"got {len(clients)}")
        dealer = replay.get("dealer")
        if isinstance(dealer, bool) or not isinstance(dealer, int) or not 0 <= dealer < spec.seats:
            raise FairError(f"dealer: expected a seat, got {dealer!r}")
        options = replay.get("options") or {}
        if not isinstance(options, Mapping):
            raise FairError("options: expected an object")
    except (FairError, KeyError) as exc:
        return Report((Check("reveal", FAIL, _msg(exc)),))
    checks.append(Check("reveal", PASS, f"{spec.name} room {room_id} hand {hand_no}, "
                        f"{sum(1 for c in clients if c)} client seed(s)"))
    expected = commitment(room_id, hand_no, server)
    checks.append(Check("commitment", PASS if expected == commit else FAIL,
                        f"sha256 = {expected}" if expected == commit else
                        f"published {commit}, the revealed seed gives {expected}"))
    seed = hand_seed(room_id, hand_no, server, clients)
    checks.append(_check_hand_seed(replay, seed))
    checks.append(_check_dealer(replay, seed, dealer))
    checks.append(_check_layout(spec.name, replay, seed))
    try:
        state = spec.new_hand(options, seed, dealer)
    except RuleError as exc:
        checks.append(Check("deal", FAIL, f"the engine refuses the hand: {exc}"))
        return Report(tuple(checks))
    events = _recorded(replay)
    if isinstance(events, str):
        checks.append(Check("deal", FAIL, events))
        return Report(tuple(checks))
    opening = [_plain(e) for e in state.deal_events()]
    checks.append(_compare("deal", opening, {i: e for i, e in events.items()
                                             if i < len(opening)}, "deal event"))
    checks.extend(_rerun(replay, state, opening, events))
    return Report(tuple(checks))


# ---------------------------------------------------------------------- checks


def _check_hand_seed(replay: Mapping[str, Any], seed: bytes) -> Check:
    if "hand_seed" not in replay:
        return Check("hand_seed", SKIP, f"derived {seed.hex()}")
    try:
        stated = parse_hex(replay["hand_seed"], "hand_seed")
    except FairError as exc:
        return Check("hand_seed", FAIL, _msg(exc))
    if stated != seed:
        return Check("hand_seed", FAIL, f"stated {stated.hex()}, derived {seed.hex()}")
    return Check("hand_seed", PASS, seed.hex())


def _check_dealer(replay: Mapping[str, Any], seed: bytes, dealer: int) -> Check:
    if not replay.get("dealer_from_seed"):
        return Check("dealer", SKIP, f"seat {dealer}, carried over from the previous hand")
    drawn = first_dealer(seed, registry.get(str(replay.get("game"))).seats)
    if drawn != dealer:
        return Check("dealer", FAIL, f"the seed draws seat {drawn}, the replay has {dealer}")
    return Check("dealer", PASS, f"seat {dealer} drawn from the seed")


def _check_layout(game: str, replay: Mapping[str, Any], seed: bytes) -> Check:
    derived = deal_layout(game, seed)
    (name, want), = derived.items()
    stored = replay.get(name)
    if stored is None:
        return Check(name, SKIP, f"not in the replay; derived {' '.join(want)}")
    if not isinstance(stored, list) or len(stored) != len(want):
        return Check(name, FAIL, f"expected {len(want)} names, got {stored!r:.80}")
    for i, (got, exp) in enumerate(zip(stored, want, strict=True)):
        if got != exp:
            return Check(name, FAIL, f"position {i}: stored {got!r}, derived {exp!r}")
    return Check(name, PASS, f"{len(want)} {'tiles' if name == 'wall' else 'cards'} match")


def _rerun(replay: Mapping[str, Any], state: State, opening: list[dict[str, Any]],
           events: dict[int, dict[str, Any]]) -> list[Check]:
    actions = replay.get("actions")
    if actions is None:
        return [Check("events", SKIP, "no actions in the replay: only the deal was checked")]
    produced = list(opening)
    if not isinstance(actions, list):
        return [Check("events", FAIL, "actions: expected a list")]
    for k, rec in enumerate(actions):
        try:
            produced += [_plain(e) for e in _step(state, rec)]
        except (RuleError, InvalidWindow, KeyError, TypeError, ValueError) as exc:
            return [Check("events", FAIL, f"actions[{k}] {rec!r:.120} is refused: {_msg(exc)}")]
    out = [_compare("events", produced, events, "event")]
    deltas = replay.get("deltas")
    if deltas is None:
        out.append(Check("result", SKIP, "no deltas in the replay"))
    elif not state.is_over():
        out.append(Check("result", FAIL, "the actions do not finish the hand"))
    elif list(state.settlement().deltas) != deltas:
        out.append(Check("result", FAIL, f"replay deltas {deltas}, re-run "
                         f"{list(state.settlement().deltas)}"))
    else:
        out.append(Check("result", PASS, f"deltas {deltas}"))
    return out


def _step(state: State, rec: Any) -> list[Event]:
    """Apply one engine input as the table logged it."""
    if not isinstance(rec, Mapping):
        raise TypeError("an action record is an object")
    if rec.get("t") == "resolve":
        return state.resolve_window(Decision.from_dict(rec["decision"]))
    if rec.get("t", "act") != "act":
        raise ValueError(f"unknown record type {rec.get('t')!r}")
    seat, action = rec["seat"], Action.from_dict(rec["action"])
    if rec.get("response"):
        return state.record_response(seat, action)
    return state.apply(seat, action)


def _compare(name: str, produced: Sequence[dict[str, Any]], recorded: Mapping[int, dict[str, Any]],
             what: str) -> Check:
    if not recorded:
        return Check(name, SKIP, f"no {what}s in the replay")
    for i in sorted(recorded):
        if i >= len(produced):
            return Check(name, FAIL, f"{what} {i} is not produced by the derivation "
                         f"(it gives {len(produced)})")
        if recorded[i] != produced[i]:
            return Check(name, FAIL, f"{what} {i}: recorded {_short(recorded[i])}, "
                         f"derived {_short(produced[i])}")
    return Check(name, PASS, f"{len(recorded)} recorded {what}s of {len(produced)} match")


# ---------------------------------------------------------------------- replay parsing


def _recorded(replay: Mapping[str, Any]) -> dict[int, dict[str, Any]] | str:
    """The replay's events by index as ``{"kind", "data", "to"?}`` dicts, or an error."""
    raw = replay.get("events") or []
    if not isinstance(raw, list):
        return "events: expected a list"
    out: dict[int, dict[str, Any]] = {}
    for pos, cell in enumerate(raw):
        if not isinstance(cell, Mapping):
            return f"events[{pos}]: expected an object"
        idx = cell.get("i", cell.get("idx", pos))
        body = cell.get("json")
        try:
            event = json.loads(body) if isinstance(body, str) else body
        except ValueError:
            return f"events[{pos}].json: not JSON"
        if not isinstance(idx, int) or not isinstance(event, dict) or idx in out:
            return f"events[{pos}]: needs a unique index and a JSON event"
        if cell.get("to") is not None and event.get("to") != cell["to"]:
            return f"events[{pos}]: 'to' {cell['to']} disagrees with its JSON"
        out[idx] = event
    return out


def _plain(event: Event) -> dict[str, Any]:
    """An engine event as it reads back from the replay's JSON."""
    result: dict[str, Any] = json.loads(json.dumps(event.to_dict(), sort_keys=True))
    return result


def _str(data: Mapping[str, Any], name: str) -> str:
    value = data.get(name)
    if not isinstance(value, str):
        raise FairError(f"{name}: expected a string, got {value!r}")
    return value


def _short(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False, sort_keys=True)
    return text if len(text) <= 160 else text[:157] + "..."


def _msg(exc: BaseException) -> str:
    return str(exc.args[0]) if isinstance(exc, KeyError) and exc.args else str(exc)


# ---------------------------------------------------------------------- command line


def main(argv: Sequence[str] | None = None, stdin: TextIO = sys.stdin,
         stdout: TextIO = sys.stdout) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m games.tools.verify_deal",
        description="Verify a hand's deal from its replay (docs/fairness.md).")
    parser.add_argument("replays", nargs="+", help="replay JSON files ('-' reads stdin)")
    parser.add_argument("--json", action="store_true", help="one JSON report per line")
    args = parser.parse_args(argv)
    ok = True
    for name in args.replays:
        report = _verify_file(name, stdin)
        ok = ok and report.ok
        if args.json:
            stdout.write(json.dumps({"file": name, **report.to_dict()}) + "\n")
        else:
            stdout.write(f"== {name}\n{report.text()}\n")
    return 0 if ok else 1


def _verify_file(name: str, stdin: TextIO) -> Report:
    try:
        if name == "-":
            text = stdin.read()
        else:
            with open(name, encoding="utf-8") as fh:
                text = fh.read()
        replay = json.loads(text)
    except (OSError, ValueError) as exc:
        return Report((Check("reveal", FAIL, f"cannot read the replay: {exc}"),))
    if not isinstance(replay, Mapping):
        return Report((Check("reveal", FAIL, "a replay is a JSON object"),))
    return verify(replay)


if __name__ == "__main__":
    sys.exit(main())
