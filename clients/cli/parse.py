"""Pure parsing of what the person types: commands of the loop and answers to a Prompt
(a number from the printed list or a shorthand such as ``d 5m``)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from clients.cli.games import game_ui
from games import registry
from paiju.v1 import game_msgs_pb2 as g

COMMANDS = {
    "list": "list                   the room list (房间列表)",
    "create": "create [game] [hands] create a room and sit in it (开房)",
    "join": "join <room> [password] join a room by its id",
    "quick": "quick [game]           quick start: any waiting room of the game (快速开始)",
    "ready": "ready                  ready for the next hand (准备)",
    "robots": "robots [n]             start n robots (default --robots) that join your room",
    "geo": "geo                    distances between the room's players",
    "chat": "chat <text>            say something to the room",
    "history": "history                the room's scores per hand (战绩)",
    "match": "match [game] [stake] [ranked] [with ID,ID] find a match (匹配); friends too",
    "cancel": "cancel                 cancel your waiting match request",
    "rating": "rating [game] [season|now] your rating and rank (all-time by default)",
    "top": "top [game] [season|now] the leaderboard's first ten",
    "dismiss": "dismiss                ask to dismiss the room (申请解散)",
    "vote": "vote yes|no            answer a dismiss request",
    "entrust-cancel": "entrust-cancel         take your seat back from entrust (取消托管)",
    "room": "room                   refresh and show your room",
    "help": "help                   this list",
    "quit": "quit                   leave the client",
}
GAMES = tuple(spec.name for spec in registry.all())
# the games played with cards (Dadun's words and layout), the others with mahjong tiles
CARD_GAMES = frozenset(spec.name for spec in registry.all() if spec.family == "dadun")

# Shorthands per game family: typed word -> canonical action kinds it may mean.
MAHJONG_ALIASES = {"d": ("discard",), "c": ("chi",), "p": ("peng",), "h": ("hu",),
                   "x": ("pass",), "e": ("exchange_three",), "v": ("declare_void",),
                   "g": ("zhigang", "angang", "bugang", "kaigang", "buzhang"),
                   "gang": ("zhigang", "angang", "bugang", "kaigang", "buzhang")}
DADUN_ALIASES = {"p": ("play",), "x": ("pass",), "a": ("choose_alone",),
                 "alone": ("choose_alone",), "f": ("choose_friend_card",),
                 "friend": ("choose_friend_card",)}


class InputError(ValueError):
    """What the person typed is not a command or not one of the legal actions."""


@dataclass(frozen=True, slots=True)
class Command:
    name: str
    args: tuple[str, ...] = ()


def parse_command(line: str, default_game: str = "xuezhan") -> Command | None:
    """A loop command, or ``None`` when the line is no command (maybe a game answer).
    Raises InputError for a known command with bad arguments. ``create`` and ``quick``
    always come back with a game (``default_game`` when none is typed)."""
    words = line.split()
    if not words or words[0].lower() not in COMMANDS:
        return None
    name, args = words[0].lower(), tuple(words[1:])
    if name == "chat":
        text = line.strip()[len(words[0]):].strip()
        if not text:
            raise InputError("chat needs some text")
        return Command(name, (text,))
    if name in ("create", "quick"):
        return _game_command(name, args, default_game)
    if name in ("rating", "top"):
        return _rating_command(name, args, default_game)
    if name == "match":
        return _match_command(args, default_game)
    if name == "join" and (not args or not _positive(args[0])):
        raise InputError("join needs a room id, e.g. 'join 123456'")
    if name == "vote" and (len(args) != 1 or args[0].lower() not in ("yes", "no")):
        raise InputError("vote yes | vote no")
    if name == "robots" and args and not _positive(args[0]):
        raise InputError("robots takes a positive count, e.g. 'robots 3'")
    return Command(name, tuple(a.lower() if name == "vote" else a for a in args))


def _game_command(name: str, args: tuple[str, ...], default_game: str) -> Command:
    game = default_game
    if args and not _decimal(args[0]):
        game, args = args[0].lower(), args[1:]
        if game not in GAMES:
            raise InputError(f"unknown game '{game}': {' | '.join(GAMES)}")
    if name == "quick" and args:
        raise InputError(f"quick takes only a game: quick [{'|'.join(GAMES)}]")
    if args and not _positive(args[0]):
        raise InputError("the number of hands must be a positive number")
    return Command(name, (game, *args[:1]))


def _rating_command(name: str, args: tuple[str, ...], default_game: str) -> Command:
    """``rating|top [game] [season|now]``: always (game, season) with season "0" (all-time)
    when none is typed, a number, or "now" (the running season)."""
    game = default_game
    if args and not _decimal(args[0]) and args[0].lower() != "now":
        game, args = args[0].lower(), args[1:]
        if game not in GAMES:
            raise InputError(f"unknown game '{game}': {' | '.join(GAMES)}")
    season = args[0].lower() if args else "0"
    if len(args) > 1 or not (season == "now" or _decimal(season)):
        raise InputError(f"{name} [game] [season|now], e.g. '{name} xuezhan now'")
    return Command(name, (game, season))


def _match_command(args: tuple[str, ...], default_game: str) -> Command:
    """``match [game] [stake] [ranked] [with ID,ID]``: always (game, stake, "ranked" or "",
    the friends' ids comma-separated or "")."""
    game = default_game
    words = list(args)
    if words and not _decimal(words[0]) and words[0].lower() not in ("ranked", "with"):
        game = words.pop(0).lower()
        if game not in GAMES:
            raise InputError(f"unknown game '{game}': {' | '.join(GAMES)}")
    stake = words.pop(0) if words and _decimal(words[0]) else "1"
    ranked = words.pop(0).lower() if words and words[0].lower() == "ranked" else ""
    party = ""
    if len(words) == 2 and words[0].lower() == "with":
        party = words[1]
        words = []
        ids = party.split(",")
        if not 1 <= len(ids) <= 2 or not all(_positive(i) for i in ids):
            raise InputError("with takes one or two friends' user ids, e.g. 'with 1002,1003'")
    if words or not _positive(stake):
        raise InputError("match [game] [stake] [ranked] [with ID,ID], e.g. "
                         "'match changsha 2 ranked'")
    return Command("match", (game, stake, ranked, party))


def _decimal(text: str) -> bool:
    """ASCII digits only (``str.isdigit`` accepts '²', which ``int`` refuses)."""
    return text.isascii() and text.isdigit()


def _positive(text: str) -> bool:
    return _decimal(text) and int(text) > 0


def split_tiles(text: str) -> list[str]:
    """Tiles or cards in any spacing: ``5m``, ``123m 55p``, ``3s 3s``, ``3s3s``, ``SJ``."""
    out: list[str] = []
    for word in text.split():
        if word[-1] in "mps" and _decimal(word[:-1]):
            out.extend(d + word[-1] for d in word[:-1])  # mahjong compact form 123m
        else:
            out.extend(word[i:i + 2] for i in range(0, len(word), 2))
    return out


def choose_action(text: str, game: str, actions: Sequence[g.ActionSpec]) -> int:
    """The index of the action the person means; raises InputError with a reason."""
    text = text.strip()
    if not actions:
        raise InputError("there is nothing to decide right now")
    if _decimal(text):
        n = int(text)
        if not 1 <= n <= len(actions):
            raise InputError(f"pick a number from 1 to {len(actions)}")
        return n - 1
    word, _, rest = text.partition(" ")
    ui = game_ui(game)
    aliases: Mapping[str, Sequence[str]] = (ui.ALIASES if ui is not None else DADUN_ALIASES
                                            if game in CARD_GAMES else MAHJONG_ALIASES)
    kinds = aliases.get(word.lower(), (word.lower(),))
    matches = [i for i, a in enumerate(actions) if a.kind in kinds]
    if not matches:
        raise InputError(f"'{word}' is not a legal action now; type a number from the list")
    rest = rest.strip()
    if rest:
        matches = [i for i in matches if _matches(actions[i], rest)]
    if len(matches) == 1:
        return matches[0]
    if not matches:
        raise InputError(f"no legal '{word}' with '{rest}'")
    raise InputError(f"'{text}' fits {len(matches)} actions; add the tiles or type a number")


def _matches(action: g.ActionSpec, rest: str) -> bool:
    if action.choice and rest.lower() == action.choice.lower():
        return True
    wanted = sorted(t.lower() for t in split_tiles(rest))
    return bool(wanted) and wanted == sorted(t.lower() for t in action.tiles)
