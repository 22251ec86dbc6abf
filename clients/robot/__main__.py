"""``python -m clients.robot --game xuezhan --tables 3``: robot tables over the real lobby."""

from __future__ import annotations

import argparse
import logging
import os
import sys

from clients.robot.robot import GAMES, RobotStats, play_rounds, run_matched, run_tables
from clients.session import DEFAULT_LOBBY
from games import registry
from paiju.loop import run


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m clients.robot")
    parser.add_argument("--game", choices=sorted(GAMES), default="xuezhan")
    parser.add_argument("--tables", type=int, default=1, help="rooms of robots, one a seat")
    parser.add_argument("--hands", type=int, default=4, help="hands per room")
    parser.add_argument("--rounds", type=int, default=0,
                        help="rooms to play one after another per table (0 = forever)")
    parser.add_argument("--lobby", default=os.environ.get("PAIJU_LOBBY_ADDR", DEFAULT_LOBBY),
                        help="lobby address (ws://host:port/ws, or host:port for gRPC), or several comma-separated: the robots are "
                             "spread over them and fail over to the others")
    parser.add_argument("--secret", default=os.environ.get("PAIJU_LOBBY__TOKEN_SECRET",
                                                           "dev-secret-change-me"))
    parser.add_argument("--ca", default=os.environ.get("PAIJU_LOBBY_CA", ""),
                        help="PEM file of the CA that signed a TLS lobby's certificate")
    parser.add_argument("--tls", action="store_true",
                        help="the lobby serves TLS with a certificate from a public CA")
    parser.add_argument("--policy", choices=("greedy", "random"), default="greedy")
    parser.add_argument("--first-uid", type=int, default=0)
    parser.add_argument("--match", action="store_true",
                        help="seated by matchmaking (AskMatch), a table's seats of robots, instead "
                             "of creating and joining rooms; the hands are the lobby's "
                             "lobby.match_total_hands")
    args = parser.parse_args()
    logging.basicConfig(level="INFO", stream=sys.stderr,
                        format='{"ts":"%(asctime)s","level":"%(levelname)s","msg":"%(message)s"}')
    first = args.first_uid or 900000 + 1000 * sorted(GAMES).index(args.game)

    async def play() -> list[RobotStats]:
        if args.match:
            return await run_matched(args.lobby, args.game,
                                     registry.get(args.game).seats * args.tables, args.secret,
                                     first_uid=first, policy=args.policy,
                                     ca_file=args.ca or None, tls=args.tls)
        return await run_tables(args.lobby, args.game, args.tables, args.secret,
                                hands=args.hands, first_uid=first, policy=args.policy,
                                ca_file=args.ca or None, tls=args.tls)

    try:
        run(play_rounds(play, args.rounds, args.game))
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
