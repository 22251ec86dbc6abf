"""Room option tables of the two mahjong variants (rules/mahjong.md §A11, §B8), their
DEFAULT values, and validation. ``on/off`` options are booleans; ``cap_fan`` "none" is None."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from games.engine import BadInput
from games.mahjong.score_changsha import ALL_OPENING_HU_TYPES, OPENING_HU_TYPES


@dataclass(frozen=True, slots=True)
class OptionSpec:
    """One room option: its DEFAULT and its allowed values (``subset_of``: a list option whose
    items must come from ``allowed``; ``int_min``: any integer >= that bound)."""

    default: Any
    allowed: tuple[Any, ...] = ()
    subset_of: bool = False
    int_min: int | None = None

    def check(self, key: str, value: Any) -> Any:
        if self.int_min is not None:
            if isinstance(value, bool) or not isinstance(value, int) or value < self.int_min:
                raise BadInput(f"option {key!r} must be an integer >= {self.int_min}, got {value!r}")
            return value
        if self.subset_of:
            if isinstance(value, str) or not isinstance(value, list | tuple):
                raise BadInput(f"option {key!r} must be a list drawn from {list(self.allowed)}")
            bad = [v for v in value if v not in self.allowed]
            if bad or len(set(value)) != len(value):
                raise BadInput(f"option {key!r}: {bad or 'duplicates'} not in {list(self.allowed)}")
            return list(value)
        if self.allowed == ON_OFF and value in ("on", "off"):
            value = value == "on"
        if not any(value is a or (type(value) is type(a) and value == a) for a in self.allowed):
            raise BadInput(f"option {key!r} must be one of {list(self.allowed)}, got {value!r}")
        return value


ON_OFF = (True, False)

XUEZHAN_TABLE: dict[str, OptionSpec] = {
    "base": OptionSpec(1, int_min=1),
    "exchange_three": OptionSpec("same_suit", ("off", "same_suit", "any")),
    "exchange_direction": OptionSpec("random3", ("random3", "dice_mod3", "fixed_cw")),
    "multi_ron": OptionSpec(True, ON_OFF),
    "pass_ron_rule": OptionSpec(
        "until_next_draw", ("until_next_draw", "same_tile_only", "allow_if_higher_fan", "off")
    ),
    "pass_peng_rule": OptionSpec(False, ON_OFF),
    "self_draw_bonus": OptionSpec("add_fan", ("add_fan", "add_base")),
    "dian_gang_hua": OptionSpec("as_self_draw", ("as_self_draw", "discarder_pays")),
    "yaojiu_jiangdui": OptionSpec(True, ON_OFF),
    "menqing_zhongzhang": OptionSpec(False, ON_OFF),
    "tian_di_hu": OptionSpec(True, ON_OFF),
    "haidi_pao_counts": OptionSpec(True, ON_OFF),
    "cap_fan": OptionSpec(4, (2, 3, 4, 5, 6, None, "none")),
    "bugang_needs_fresh_tile": OptionSpec(True, ON_OFF),
    "call_transfer": OptionSpec(True, ON_OFF),
    "pigs_pay_winners": OptionSpec(False, ON_OFF),
    "next_dealer": OptionSpec("first_winner", ("first_winner", "rotate")),
}

# Opening-win types (§B3): the DEFAULT four, and the optional extras
# 节节高/三同/一枝花/中途四喜/中途六六顺 (see games.mahjong.score_changsha_opening).
OPENING_TYPES = ALL_OPENING_HU_TYPES

CHANGSHA_TABLE: dict[str, OptionSpec] = {
    "base": OptionSpec(1, int_min=1),
    "opening_hu_types": OptionSpec(list(OPENING_HU_TYPES), OPENING_TYPES, subset_of=True),
    "opening_hu_repeat": OptionSpec("once_per_type", ("once_per_type", "count_repeats")),
    "opening_hu_birds": OptionSpec("none", ("none", "two_dice")),
    "dealer_bonus": OptionSpec(True, ON_OFF),
    "bird_count": OptionSpec(2, (0, 1, 2, 4, 6)),
    "bird_origin": OptionSpec("winner", ("winner", "dealer")),
    "bird_mode": OptionSpec("add_double", ("add_double", "mul_double", "add_points")),
    "big_hu_stack": OptionSpec("additive", ("additive", "multiplicative")),
    "kaigang_reveal": OptionSpec(2, (1, 2, 3, 4)),
    # 双杠上开花: two 开杠 reveals that both complete the hand count 杠上开花 twice.
    "double_kong_bloom": OptionSpec(False, ON_OFF),
    "multi_ron": OptionSpec(True, ON_OFF),
    "missed_ron": OptionSpec("until_next_draw", ("until_next_draw", "same_tile_only")),
    "haidi_compulsory": OptionSpec(False, ON_OFF),
    "gang_points": OptionSpec(False, ON_OFF),
    "menqing_big_hu": OptionSpec(False, ON_OFF),
    "next_dealer_on_multi_ron": OptionSpec("discarder", ("discarder", "discarder_next")),
}


def defaults(table: Mapping[str, OptionSpec], scoring: Mapping[str, Any]) -> dict[str, Any]:
    """All DEFAULT values: the scoring module's defaults, then this table's."""
    out = dict(scoring)
    out.update({key: spec.default for key, spec in table.items()})
    return out


def validate(
    table: Mapping[str, OptionSpec], scoring: Mapping[str, Any], given: Mapping[str, Any]
) -> dict[str, Any]:
    """Merge ``given`` over the defaults. An unknown key or a bad value raises BadInput.
    Scoring-only keys (known to the scoring module, not to the table) must keep the type of
    their default; the scoring module judges their value."""
    if not isinstance(given, Mapping):
        raise BadInput("options must be a mapping of option names to values")
    out = defaults(table, scoring)
    for key, value in given.items():
        if key in table:
            out[key] = table[key].check(key, value)
        elif key in scoring:
            default = scoring[key]
            if default is not None and type(value) is not type(default):
                raise BadInput(f"option {key!r} must be a {type(default).__name__}, got {value!r}")
            out[key] = value
        else:
            raise BadInput(f"unknown option {key!r}; known: {sorted(out)}")
    return out
