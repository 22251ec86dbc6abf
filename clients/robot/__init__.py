"""Robot players: real clients of the lobby's Connect stream that play with games/bots."""
