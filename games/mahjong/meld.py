"""Melds (副露): sets a player has declared, shared by both mahjong variants."""

from __future__ import annotations

from dataclasses import dataclass

# Canonical meld kinds (../shared/rules/README.md, "Actions").
MELD_KINDS = frozenset({"chi", "peng", "zhigang", "angang", "bugang", "kaigang", "buzhang"})


@dataclass(frozen=True, slots=True)
class Meld:
    """A declared set. ``tiles`` are tile indices 0..26 (3 for chi/peng, 4 for kongs);
    ``source`` is the seat whose tile was claimed (None for a concealed kong or an added kong
    made with the player's own tile); ``concealed`` is True only for 暗杠 (angang) and for a
    Changsha kong made entirely from the player's own four tiles."""

    kind: str
    tiles: tuple[int, ...]
    source: int | None = None
    concealed: bool = False

    def __post_init__(self) -> None:
        if self.kind not in MELD_KINDS:
            raise ValueError(f"unknown meld kind {self.kind!r}")
        want = 3 if self.kind in ("chi", "peng") else 4
        if len(self.tiles) != want:
            raise ValueError(f"a {self.kind} has {want} tiles, got {len(self.tiles)}")
