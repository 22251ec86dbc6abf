"""lobby: login, sessions, rooms, matchmaking, chat, geo, dismiss voting; the front door."""
