"""records: settlements, the coin ledger, history scores, replays and profiles in SQL."""
