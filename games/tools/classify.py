"""Dadun rules tool: classify a play and say whether it beats the previous one.

Reads one JSON object per line on standard input, writes one per line on standard output:

    in:  {"cards": "5h Td Ks", "previous": "Ah Ad" or null, "hand_size": 10,
          "options": {"pure510k_suit_order": true}}
    out: {"valid": true, "class": 9, "class_name": "five_ten_king", "pure": false, "beats": true}

``hand_size`` defaults to the number of cards given (so a bare triple is a last play);
``previous`` is read as a full last play of its own size (it was legal when played).
``options`` (optional) are room options by the keys of rules/dadun.md §9, checked as a room
would check them; of those only ``pure510k_suit_order`` changes the answer (pure 510Ks rank
by suit: spades > hearts > clubs > diamonds).
``beats`` is null without a previous play. An invalid play gets ``"valid": false`` and a
``reason``; a malformed line (or a bad option) gets ``{"error": "..."}`` and the tool goes on.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping
from typing import Any, TextIO

from games.dadun.cards import parse_cards
from games.dadun.combos import InvalidCombo, beats_rule, classify
from games.dadun.options import normalize_options
from games.engine import BadInput


def answer(request: Any) -> dict[str, Any]:
    """The output object for one decoded input object."""
    if not isinstance(request, Mapping):
        return {"error": "each line must be a JSON object"}
    cards_text = request.get("cards")
    if not isinstance(cards_text, str):
        return {"error": "'cards' must be a string of space-separated cards"}
    try:
        cards = parse_cards(cards_text)
        previous_text = request.get("previous")
        previous_cards = None if previous_text is None else parse_cards(previous_text)
    except ValueError as exc:
        return {"error": str(exc)}
    options = request.get("options")
    if options is not None and not isinstance(options, Mapping):
        return {"error": "'options' must be an object of Dadun room options"}
    try:
        suit_order = bool(normalize_options(options)["pure510k_suit_order"])
    except BadInput as exc:
        return {"error": str(exc)}
    hand_size = request.get("hand_size", len(cards))
    if not isinstance(hand_size, int) or isinstance(hand_size, bool) or hand_size < len(cards):
        return {"error": f"hand_size must be an integer >= the {len(cards)} cards played"}
    previous = None
    if previous_cards is not None:
        try:
            previous = classify(previous_cards, len(previous_cards))
        except InvalidCombo as exc:
            return {"error": f"previous play is no combination: {exc}"}
    try:
        combo = classify(cards, hand_size, against=previous, suit_order=suit_order)
    except InvalidCombo as exc:
        return {"valid": False, "reason": str(exc), "beats": None if previous is None else False}
    return {
        "valid": True,
        "class": combo.cls,
        "class_name": combo.name,
        "pure": combo.pure,
        "beats": None if previous is None else beats_rule(suit_order)(combo, previous),
    }


def run(stdin: TextIO, stdout: TextIO) -> None:
    for line in stdin:
        if not line.strip():
            continue
        try:
            out = answer(json.loads(line))
        except json.JSONDecodeError as exc:
            out = {"error": f"bad JSON: {exc}"}
        stdout.write(json.dumps(out, ensure_ascii=False) + "\n")
        stdout.flush()


def main() -> None:
    run(sys.stdin, sys.stdout)


if __name__ == "__main__":
    main()
