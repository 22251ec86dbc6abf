"""Room options of a Dadun deal (../shared/rules/dadun.md §9) and their validation.

Every [D] default of the ruleset is one key here (``bully_points``, the N of 霸奖 candidate
(b) in §8.2, is ours: the rules name no value). ``base`` (the key every engine shares) and
``base_score`` (the §9 name) are synonyms for the base score B: give either one; giving both
with different values is an error.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from games.dadun.combos import DEFAULT_BOMB_ODDS
from games.engine import BadInput

DEFAULT_OPTIONS: dict[str, Any] = {
    "base": 1,
    "base_score": 1,
    "deal_cards": 27,
    "play_timeout_s": 20,
    "alone_timeout_s": 15,
    "entrust_cancels": 3,
    "alone_askers": "all",
    "alone_leads": True,
    "alone_open_hands": True,
    "alone_mult": 2,
    "double_surround_mult": 2,
    "bully_rule": "all_points",
    "bully_mult": 2,
    "bully_points": 150,
    "win_threshold": 100,
    "tie_goes_to_first_place": True,
    "leftover_points_to": "opponents",
    "last_gives_catch_to_first": False,
    "jiefeng": "partner_if_known",
    "both_copies": "reject",
    "pure510k_suit_order": False,
    "bomb_payers": "all_others",
    "bomb_odds": {str(cls): odds for cls, odds in sorted(DEFAULT_BOMB_ODDS.items())},
    "fry_rule": "dealt_hand",
    "fry_small": 2,
    "fry_large": 4,
    "rest_num_visible_at": 5,
}


def _int_at_least(low: int) -> Callable[[Any], bool]:
    return lambda v: isinstance(v, int) and not isinstance(v, bool) and v >= low


def _one_of(*choices: Any) -> Callable[[Any], bool]:
    return lambda v: any(v == c and type(v) is type(c) for c in choices)


_BOOL = _one_of(True, False)

_CHECKS: dict[str, Callable[[Any], bool]] = {
    "base": _int_at_least(1),
    "base_score": _int_at_least(1),
    "deal_cards": _one_of(27),
    "play_timeout_s": _int_at_least(1),
    "alone_timeout_s": _int_at_least(1),
    "entrust_cancels": _int_at_least(0),
    "alone_askers": _one_of("all", "banker_only"),
    "alone_leads": _BOOL,
    "alone_open_hands": _BOOL,
    "alone_mult": _int_at_least(0),
    "double_surround_mult": _int_at_least(1),
    # 霸奖, §8.2: (a) all_points, (b) player_points (one winner caught >= bully_points),
    # (d) alone_clean (alone win as 头游, opponents caught 0); (c) "top bomb" is not defined.
    "bully_rule": _one_of("all_points", "player_points", "alone_clean", "off"),
    "bully_mult": _int_at_least(1),
    "bully_points": _int_at_least(1),
    "win_threshold": _int_at_least(0),
    "tie_goes_to_first_place": _BOOL,
    "leftover_points_to": _one_of("opponents", "first_place_team"),
    "last_gives_catch_to_first": _BOOL,
    "jiefeng": _one_of("partner_if_known", "partner_always", "next_player"),
    "both_copies": _one_of("reject", "play_alone_dark"),
    # True: pure 510Ks rank by suit, spades > hearts > clubs > diamonds (combos.beats).
    "pure510k_suit_order": _BOOL,
    "bomb_payers": _one_of("all_others", "opponents"),
    # 原炸, §6.5/§8.3: held in the dealt hand, or played whole at its dealt size.
    "fry_rule": _one_of("dealt_hand", "played_intact", "off"),
    "fry_small": _int_at_least(0),
    "fry_large": _int_at_least(0),
    "rest_num_visible_at": _int_at_least(0),
}


def _bomb_odds(value: Any) -> dict[str, int]:
    """Merge a partial ``{class number: odds}`` map over the defaults (keys as strings)."""
    if not isinstance(value, Mapping):
        raise BadInput("option 'bomb_odds' must map class numbers to odds")
    merged = dict(DEFAULT_OPTIONS["bomb_odds"])
    for key, odds in value.items():
        name = str(key)
        if not name.isdigit() or not 1 <= int(name) <= 27:
            raise BadInput(f"option 'bomb_odds': {key!r} is not a card class number 1..27")
        if not _int_at_least(0)(odds):
            raise BadInput(f"option 'bomb_odds': odds for class {name} must be an int >= 0")
        merged[name] = odds
    return merged


def normalize_options(options: Mapping[str, Any] | None) -> dict[str, Any]:
    """The full option dict: defaults overridden by ``options``; BadInput on any unknown key
    or bad value. ``base`` and ``base_score`` come out equal."""
    given = dict(options or {})
    unknown = sorted(set(given) - set(DEFAULT_OPTIONS))
    if unknown:
        raise BadInput(f"unknown Dadun option(s): {', '.join(unknown)}")
    out = dict(DEFAULT_OPTIONS)
    for key, value in given.items():
        if key == "bomb_odds":
            out[key] = _bomb_odds(value)
        elif not _CHECKS[key](value):
            raise BadInput(f"bad value {value!r} for Dadun option {key!r}")
        else:
            out[key] = value
    if "base" in given and "base_score" in given and given["base"] != given["base_score"]:
        raise BadInput("options 'base' and 'base_score' are synonyms but differ")
    base = given.get("base", given.get("base_score", 1))
    out["base"] = out["base_score"] = base
    return out

