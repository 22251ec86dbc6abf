"""lobby: the players' front door (login, sessions, the room list, quick start, chat,
spectators, the operator console); room commands go to the table that owns the room."""
