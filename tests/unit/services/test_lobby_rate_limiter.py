"""The rate limiter (limits.RateLimiter): a sliding window per user, and state
bounded by the users active lately (idle ones are forgotten by a sweep once per window)."""

from __future__ import annotations

from services.lobby.limits import RateLimiter


def test_rate_limiter_limits_within_the_window() -> None:
    rl = RateLimiter(2, window=60.0)
    assert rl.allow(1, now=0.0) and rl.allow(1, now=1.0)
    assert not rl.allow(1, now=59.0)
    assert rl.allow(1, now=60.5)             # the first event left the window
    assert not rl.allow(1, now=60.9)
    assert RateLimiter(0).allow(1, now=0.0) is False
    assert len(RateLimiter(0)) == 0


def test_rate_limiter_state_is_bounded_by_recent_users() -> None:
    rl = RateLimiter(3, window=60.0)
    for user in range(1000):
        assert rl.allow(user, now=user * 0.01)
    assert len(rl) == 1000
    # a minute later the sweep drops everyone whose events left the window
    assert rl.allow(5000, now=200.0)
    assert len(rl) == 1
    # a refused user is kept (still limited), then forgotten once idle
    rl2 = RateLimiter(1, window=10.0)
    assert rl2.allow(7, now=0.0) and not rl2.allow(7, now=5.0)
    assert len(rl2) == 1
    rl2.sweep(now=10.0, force=True)
    assert len(rl2) == 0
    assert rl2.allow(7, now=10.0)


def test_rate_limiter_sweeps_at_most_once_per_window() -> None:
    rl = RateLimiter(5, window=10.0)
    rl.allow(1, now=0.0)                     # first sweep (nothing); the next at 10
    rl.allow(2, now=8.0)
    rl.allow(3, now=10.0)                    # sweep: 1 has left the window, 2 has not
    assert len(rl) == 2
    rl.allow(4, now=19.0)                    # 2 has left the window, but no sweep until 20
    assert len(rl) == 3
    rl.allow(4, now=20.0)                    # sweep: 2 and 3 go
    assert len(rl) == 1
