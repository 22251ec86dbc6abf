"""The client IP behind trusted proxies (services/lobby/client_ip.py) and the
``lobby.trusted_proxies`` configuration key."""

from __future__ import annotations

from pathlib import Path

import pytest

from services.common.config import ConfigError, load_config
from services.lobby.client_ip import (
    MAX_HOPS,
    client_ip,
    grpc_peer_ip,
    parse_ip,
    parse_networks,
)

PROXIES = parse_networks(["10.0.0.0/8", "fd00::/8", "192.0.2.7"])


# -- the pure function ----------------------------------------------------------------------

def test_no_trusted_proxy_means_the_peer_whatever_the_header() -> None:
    assert client_ip("10.1.1.1", ["203.0.113.5"], ()) == "10.1.1.1"
    assert client_ip("", ["203.0.113.5"], ()) == ""


def test_an_untrusted_peer_header_is_ignored() -> None:
    assert client_ip("198.51.100.9", ["203.0.113.5"], PROXIES) == "198.51.100.9"
    assert client_ip("2001:db8::9", ["203.0.113.5"], PROXIES) == "2001:db8::9"


def test_a_trusted_peer_names_the_client() -> None:
    assert client_ip("10.0.0.2", ["203.0.113.5"], PROXIES) == "203.0.113.5"
    assert client_ip("192.0.2.7", ["203.0.113.5"], PROXIES) == "203.0.113.5"   # a bare host


def test_the_right_most_untrusted_entry_wins_over_what_the_client_wrote() -> None:
    # the client forged "1.1.1.1"; its real address was appended by the first proxy, then a
    # second trusted proxy appended the first one's address
    header = ["1.1.1.1, 203.0.113.5, 10.9.9.9"]
    assert client_ip("10.0.0.2", header, PROXIES) == "203.0.113.5"


def test_several_header_values_count_as_one_list() -> None:
    assert client_ip("10.0.0.2", ["1.1.1.1", "203.0.113.5,10.9.9.9"], PROXIES) == "203.0.113.5"


def test_every_entry_trusted_means_the_left_most() -> None:
    assert client_ip("10.0.0.2", ["10.3.3.3, 10.9.9.9"], PROXIES) == "10.3.3.3"


def test_a_missing_or_empty_header_falls_back_to_the_peer() -> None:
    assert client_ip("10.0.0.2", [], PROXIES) == "10.0.0.2"
    assert client_ip("10.0.0.2", [""], PROXIES) == "10.0.0.2"
    assert client_ip("10.0.0.2", [" , ,"], PROXIES) == "10.0.0.2"


@pytest.mark.parametrize("garbage", [
    "unknown", "not an ip", "999.1.1.1", "1.2.3", "_hidden", "1.2.3.4:port", "[::1",
    "[::1]x", "::g", "x" * 500, "\x00\xff", "1.2.3.4/8",
])
def test_garbage_stops_the_walk_and_never_crashes(garbage: str) -> None:
    assert client_ip("10.0.0.2", [garbage], PROXIES) == "10.0.0.2"
    # garbage behind the real client (written by the client) does not matter
    assert client_ip("10.0.0.2", [f"{garbage}, 203.0.113.5"], PROXIES) == "203.0.113.5"
    # garbage between trusted hops: the last address reached stands
    assert client_ip("10.0.0.2", [f"203.0.113.5, {garbage}, 10.9.9.9"], PROXIES) == "10.9.9.9"


def test_ipv6_ports_brackets_quotes_and_mapped_addresses() -> None:
    assert client_ip("fd00::1", ["2001:db8::5"], PROXIES) == "2001:db8::5"
    assert client_ip("fd00::1", ['"[2001:db8::5]:4711"'], PROXIES) == "2001:db8::5"
    assert client_ip("10.0.0.2", ["203.0.113.5:4711"], PROXIES) == "203.0.113.5"
    assert client_ip("::ffff:10.0.0.2", ["::ffff:203.0.113.5"], PROXIES) == "203.0.113.5"
    assert client_ip("10.0.0.2", ["2001:db8::5, fd00::3"], PROXIES) == "2001:db8::5"


def test_a_peer_that_is_no_address_is_kept_as_is() -> None:
    assert client_ip("", ["203.0.113.5"], PROXIES) == ""
    assert client_ip("unix:/tmp/x", ["203.0.113.5"], PROXIES) == "unix:/tmp/x"


def test_a_very_long_chain_is_cut() -> None:
    chain = ["203.0.113.5"] + ["10.0.0.1"] * (MAX_HOPS + 5)
    assert client_ip("10.0.0.2", [", ".join(chain)], PROXIES) == "10.0.0.1"
    short = ["203.0.113.5"] + ["10.0.0.1"] * (MAX_HOPS - 1)
    assert client_ip("10.0.0.2", [", ".join(short)], PROXIES) == "203.0.113.5"


def test_parse_ip_and_grpc_peers() -> None:
    assert str(parse_ip(" 1.2.3.4 ")) == "1.2.3.4"
    assert parse_ip("") is None and parse_ip("[]") is None
    assert grpc_peer_ip("ipv4:127.0.0.1:5000") == "127.0.0.1"
    assert grpc_peer_ip("ipv6:[::1]:5000") == "::1"
    assert grpc_peer_ip("ipv6:%5B::1%5D:5000") == "::1"      # what grpcio actually reports
    assert grpc_peer_ip("ipv6:%5B::ffff:10.0.0.1%5D:5000") == "10.0.0.1"
    assert grpc_peer_ip("unix:/tmp/x") == "" and grpc_peer_ip("") == ""
    assert grpc_peer_ip("ipv4:garbage") == ""


def test_parse_networks_refuses_what_is_no_cidr() -> None:
    assert [str(n) for n in parse_networks([" 10.0.0.0/8", "::1"])] == ["10.0.0.0/8", "::1/128"]
    for bad in ("10.0.0.1/8", "10.0.0.0/33", "ingress", ""):
        with pytest.raises(ValueError):
            parse_networks([bad])


# -- the configuration key ------------------------------------------------------------------

def test_trusted_proxies_default_to_none_in_every_environment() -> None:
    for env in ("dev", "test", "prod"):
        assert load_config(env, environ={}).lobby.trusted_proxies == ()


def test_trusted_proxies_from_the_file_and_the_environment(tmp_path: Path) -> None:
    cfg = load_config("dev", environ={"PAIJU_LOBBY__TRUSTED_PROXIES": "10.0.0.0/8, fd00::/8"})
    assert cfg.lobby.trusted_proxies == ("10.0.0.0/8", "fd00::/8")
    assert load_config("dev", environ={"PAIJU_LOBBY__TRUSTED_PROXIES": ""}
                       ).lobby.trusted_proxies == ()
    good = tmp_path / "good.toml"
    good.write_text('[lobby]\ntrusted_proxies = ["192.0.2.0/24", "2001:db8::/32"]\n')
    assert load_config(path=good, environ={}).lobby.trusted_proxies == (
        "192.0.2.0/24", "2001:db8::/32")


@pytest.mark.parametrize("value", ["10.0.0.1/8", "10.0.0.0/8,nope", "10.0.0.0/40"])
def test_a_bad_cidr_is_a_config_error_naming_the_key(value: str) -> None:
    with pytest.raises(ConfigError, match=r"lobby\.trusted_proxies: .* is not a CIDR"):
        load_config("dev", environ={"PAIJU_LOBBY__TRUSTED_PROXIES": value})


def test_a_bad_type_is_a_config_error_naming_the_key(tmp_path: Path) -> None:
    for text in ("trusted_proxies = 10", 'trusted_proxies = ["10.0.0.0/8", 3]'):
        bad = tmp_path / "bad.toml"
        bad.write_text(f"[lobby]\n{text}\n")
        with pytest.raises(ConfigError, match=r"bad\.toml\.lobby\.trusted_proxies: .* not a list"):
            load_config(path=bad, environ={})
