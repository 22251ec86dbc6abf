"""The mahjong rules tool: ``python -m games.tools.score``.

Reads one JSON object per line on stdin and writes one JSON object per line on stdout, in
the same order (blank lines are skipped). A scoring line names the variant, the concealed
tiles without the winning tile, the melds, the winning tile, how it was won, flags, the
XueZhan void suit and room options; ``{"op": "waits", ...}`` lists the waits of a 13-tile
hand. A bad line gets ``{"error": "..."}`` and the tool goes on. Formats:
../shared/rules/README.md ("The rules tools").
"""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping
from typing import Any, TextIO

from games.engine import BadInput, RuleError
from games.mahjong.meld import Meld
from games.mahjong.score_changsha import changsha_waits, score_changsha
from games.mahjong.score_common import WinContext
from games.mahjong.score_xuezhan import score_xuezhan, xuezhan_waits
from games.mahjong.tiles import SUITS, parse_tile_list, parse_tiles, tile_index, tile_name

KEYS = frozenset(
    {"variant", "op", "concealed", "melds", "win_tile", "win", "flags", "void", "options"}
)


def main(stdin: TextIO = sys.stdin, stdout: TextIO = sys.stdout) -> int:
    for line in stdin:
        if line.strip():
            stdout.write(json.dumps(answer(line), ensure_ascii=False) + "\n")
            stdout.flush()
    return 0


def answer(line: str) -> dict[str, Any]:
    """The reply to one input line; never raises for bad input."""
    try:
        request = json.loads(line)
    except json.JSONDecodeError as exc:
        return {"error": f"bad JSON: {exc}"}
    try:
        return handle(request)
    except (RuleError, ValueError, TypeError) as exc:
        return {"error": str(exc)}


def handle(request: Any) -> dict[str, Any]:
    if not isinstance(request, Mapping):
        raise BadInput("each line must be a JSON object")
    unknown = request.keys() - KEYS
    if unknown:
        raise BadInput(f"unknown keys {sorted(unknown)}")
    variant = request.get("variant")
    if variant not in ("xuezhan", "changsha"):
        raise BadInput(f"unknown variant {variant!r}: expected 'xuezhan' or 'changsha'")
    op = request.get("op", "score")
    if op not in ("score", "waits"):
        raise BadInput(f"unknown op {op!r}: expected 'score' or 'waits'")
    concealed = parse_tiles(_text(request.get("concealed"), "concealed"))
    melds = [_meld(m) for m in _list(request.get("melds", []), "melds")]
    options = request.get("options") or {}
    void = _void(request.get("void"), variant)
    if op == "waits":
        return _waits(variant, concealed, melds, void, options)
    flags = frozenset(_text(f, "flag") for f in _list(request.get("flags", []), "flags"))
    win_tile = tile_index(_text(request.get("win_tile"), "win_tile"))
    ctx = WinContext(win_tile, request.get("win", "discard"), flags, void)
    if variant == "xuezhan":
        xz = score_xuezhan(concealed, melds, ctx, options)
        out = {
            "winning": xz.winning,
            "patterns": list(xz.patterns),
            "roots": xz.roots,
            "fan": xz.fan,
            "per_payer": xz.per_payer,
        }
        return _with_reason(out, xz.reason)
    cs = score_changsha(concealed, melds, ctx, options)
    out = {
        "winning": cs.winning,
        "patterns": list(cs.patterns),
        "big_hu": cs.big_hu,
        "per_payer": cs.x,
    }
    return _with_reason(out, cs.reason)


def _waits(
    variant: str, concealed: list[int], melds: list[Meld], void: int | None, options: Any
) -> dict[str, Any]:
    if variant == "xuezhan":
        found = xuezhan_waits(concealed, melds, void, options)
        best_key = "best_fan"
    else:
        found = changsha_waits(concealed, melds, options)
        best_key = "best_big_hu"
    best = max((value for _, value in found), default=None)
    return {"waits": [tile_name(t) for t, _ in found], best_key: best}


def _meld(data: Any) -> Meld:
    if not isinstance(data, Mapping):
        raise BadInput("each meld must be an object {kind, tiles}")
    kind = _text(data.get("kind"), "meld kind")
    tiles = tuple(parse_tile_list(_text(data.get("tiles"), "meld tiles")))
    concealed = data.get("concealed", kind == "angang")
    if not isinstance(concealed, bool):
        raise BadInput("meld 'concealed' must be true or false")
    return Meld(kind, tiles, None, concealed)


def _void(value: Any, variant: str) -> int | None:
    if value is None:
        return None
    if variant != "xuezhan":
        raise BadInput("void is a XueZhan setting")
    if value not in tuple(SUITS):
        raise BadInput(f"void must be one of 'm', 'p', 's', got {value!r}")
    return SUITS.index(value)


def _text(value: Any, what: str) -> str:
    if not isinstance(value, str):
        raise BadInput(f"{what} must be a string, got {value!r}")
    return value


def _list(value: Any, what: str) -> list[Any]:
    if not isinstance(value, list):
        raise BadInput(f"{what} must be a list")
    return value


def _with_reason(out: dict[str, Any], reason: str) -> dict[str, Any]:
    if reason:
        out["reason"] = reason
    return out


if __name__ == "__main__":
    sys.exit(main())
