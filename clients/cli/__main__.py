"""``python -m clients.cli [--lobby ADDRESS[,ADDRESS...]] [--user N] [--game G] [--script "a; b"]
[--auto] [--ca CA.pem | --tls]``"""

from __future__ import annotations

import argparse
import os
import sys

from clients.cli.app import CliApp, Options
from clients.cli.parse import GAMES
from clients.session import DEFAULT_LOBBY
from paiju.loop import run


def parse_args(argv: list[str] | None = None) -> Options:
    p = argparse.ArgumentParser(prog="python -m clients.cli",
                                description="Play a Paiju seat in the terminal.")
    p.add_argument("--lobby", default=os.environ.get("PAIJU_LOBBY_ADDR", DEFAULT_LOBBY),
                   help="lobby address (ws://host:port/ws, or host:port for gRPC), or several comma-separated: when one goes away the "
                        "client logs in again on the next and resumes your seat")
    p.add_argument("--user", type=int, default=1001, help="your user id")
    p.add_argument("--secret", default=os.environ.get("PAIJU_LOBBY__TOKEN_SECRET",
                                                      "dev-secret-change-me"),
                   help="the lobby's token secret (dev tokens are minted locally)")
    p.add_argument("--game", choices=GAMES, default="xuezhan",
                   help="the game of 'create' and 'quick' when none is typed")
    p.add_argument("--robots", type=int, default=3, help="robots the 'robots' command starts")
    p.add_argument("--script", default="",
                   help="commands separated by ';' run without a terminal, e.g. "
                        "\"create xuezhan 1; robots; ready\"")
    p.add_argument("--auto", action="store_true",
                   help="answer your prompts with the greedy robot policy")
    p.add_argument("--ca", default=os.environ.get("PAIJU_LOBBY_CA", ""),
                   help="PEM file of the CA that signed a TLS lobby's certificate")
    p.add_argument("--tls", action="store_true",
                   help="the lobby serves TLS with a certificate from a public CA")
    a = p.parse_args(argv)
    script = [c.strip() for c in a.script.split(";") if c.strip()]
    return Options(lobby=a.lobby, user=a.user, secret=a.secret, game=a.game, robots=a.robots,
                   script=script, auto=a.auto, ca=a.ca, tls=a.tls)


def main(argv: list[str] | None = None) -> int:
    try:
        return run(CliApp(parse_args(argv)).run())
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
