"""Room options of a Dou Dizhu hand (docs/doudizhu.md, "Options") and their validation."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from games.engine import BadInput

DEFAULT_OPTIONS: dict[str, Any] = {
    "base": 1,                # the stake of one unit (底分)
    "bidding": "call_rob",    # 叫地主 then one round of 抢地主; "call_only": the first call wins
    "rob_mult": 2,            # each 抢地主 multiplies the stake
    "all_pass": "redeal",     # nobody calls: "redeal" from the same seed, or "void" (流局)
    "bomb_mult": 2,           # each bomb played (炸弹)
    "rocket_mult": 2,         # the rocket played (王炸)
    "spring_mult": 2,         # spring (春天) or anti-spring (反春)
    "max_mult": 0,            # the cap of the multiplier (封顶); 0: none
    "play_timeout_s": 20,     # the table's turn timer (prompt countdown)
    "bid_timeout_s": 15,      # the table's timer for 叫地主 / 抢地主
}


def _int_at_least(low: int) -> Callable[[Any], bool]:
    return lambda v: isinstance(v, int) and not isinstance(v, bool) and v >= low


def _one_of(*choices: str) -> Callable[[Any], bool]:
    return lambda v: isinstance(v, str) and v in choices


_CHECKS: dict[str, Callable[[Any], bool]] = {
    "base": _int_at_least(1),
    "bidding": _one_of("call_rob", "call_only"),
    "rob_mult": _int_at_least(1),
    "all_pass": _one_of("redeal", "void"),
    "bomb_mult": _int_at_least(1),
    "rocket_mult": _int_at_least(1),
    "spring_mult": _int_at_least(1),
    "max_mult": _int_at_least(0),
    "play_timeout_s": _int_at_least(1),
    "bid_timeout_s": _int_at_least(1),
}


def parse_options(options: Mapping[str, Any] | None) -> dict[str, Any]:
    """The full option dict: the defaults overridden by ``options``; BadInput on an unknown
    key or a bad value."""
    if options is not None and not isinstance(options, Mapping):
        raise BadInput("Dou Dizhu options must be a mapping")
    given = dict(options or {})
    unknown = sorted(str(k) for k in set(given) - set(DEFAULT_OPTIONS))
    if unknown:
        raise BadInput(f"unknown Dou Dizhu option(s): {', '.join(unknown)}")
    for key, value in given.items():
        if not _CHECKS[key](value):
            raise BadInput(f"bad value {value!r} for Dou Dizhu option {key!r}")
    return {**DEFAULT_OPTIONS, **given}
