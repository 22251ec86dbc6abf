"""arbiter: stateless resolution of mahjong response windows (seed 002)."""
