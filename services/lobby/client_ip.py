"""The IP address of a client, as used for same-IP alerts and shown to the room owner.

By default it is the direct peer of the connection (the TCP peer of the WebSocket, the gRPC
peer of a ``Connect`` stream) and no header is believed. Behind a reverse proxy or an
ingress, every direct peer is the proxy, so ``lobby.trusted_proxies`` lists the proxies'
networks: when the direct peer is inside one of them, the client is taken from
``X-Forwarded-For`` (the HTTP header, or the ``x-forwarded-for`` gRPC metadata key).

The walk is the usual one: from the right-most entry leftwards, each entry is the hop that
reached the one to its right; the first address that is not itself a trusted proxy is the
client. If the header is missing, or an entry is not an IP address (``unknown``, garbage),
the walk stops and the last address reached stands (the direct peer if the header gives
nothing usable). If every entry is a trusted proxy, the left-most one is the client (e.g. a
robot running inside the cluster). Entries left of the client are never believed: they
come from the client itself.

Pure functions, no I/O: ``client_ip`` is shared by the WebSocket front door (ws.py) and the
gRPC adapter (server.py).
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable, Sequence
from urllib.parse import unquote

Network = ipaddress.IPv4Network | ipaddress.IPv6Network
Address = ipaddress.IPv4Address | ipaddress.IPv6Address

HEADER = "X-Forwarded-For"
METADATA_KEY = "x-forwarded-for"   # gRPC metadata keys are lower case
MAX_HOPS = 32                      # entries looked at, from the right; a longer chain stops


def parse_networks(cidrs: Iterable[str]) -> tuple[Network, ...]:
    """``lobby.trusted_proxies`` as networks (a bare address is a /32 or /128 network).
    ValueError on anything that is not a CIDR, host bits set included (``10.0.0.1/8`` is a
    typo for a host or for ``10.0.0.0/8``; guessing could trust far too much)."""
    return tuple(ipaddress.ip_network(cidr.strip(), strict=True) for cidr in cidrs)


def parse_ip(text: str) -> Address | None:
    """An address from a peer or a header entry, or None. Accepts an optional port
    (``1.2.3.4:5``, ``[2001:db8::1]:5``), brackets, quotes; an IPv4-mapped IPv6 address is
    its IPv4 address."""
    text = text.strip().strip('"').strip()
    if not text or len(text) > 64:
        return None
    if text.startswith("["):
        end = text.find("]")
        if end < 0 or (end + 1 < len(text) and not _is_port(text[end + 1:])):
            return None
        text = text[1:end]
    elif text.count(":") == 1:            # IPv4 with a port (an IPv6 address has 2+ colons)
        host, _, port = text.partition(":")
        if not (port.isascii() and port.isdigit()):
            return None
        text = host
    try:
        addr = ipaddress.ip_address(text)
    except ValueError:
        return None
    if isinstance(addr, ipaddress.IPv6Address) and addr.ipv4_mapped is not None:
        return addr.ipv4_mapped
    return addr


def _is_port(rest: str) -> bool:
    return rest.startswith(":") and rest[1:].isascii() and rest[1:].isdigit()


def grpc_peer_ip(peer: str) -> str:
    """The IP of a gRPC peer string: ``ipv4:1.2.3.4:5``, ``ipv6:[::1]:5`` or its URL-encoded
    form ``ipv6:%5B::1%5D:5`` (what grpcio reports) -> the address; "" for anything else
    (``unix:...``)."""
    kind, _, rest = peer.partition(":")
    if kind not in ("ipv4", "ipv6"):
        return ""
    addr = parse_ip(unquote(rest))
    return str(addr) if addr is not None else ""


def _trusted(addr: Address, networks: Sequence[Network]) -> bool:
    return any(addr.version == net.version and addr in net for net in networks)


def client_ip(peer: str, forwarded_for: Iterable[str], trusted: Sequence[Network]) -> str:
    """The client's IP: ``peer`` (the direct peer's address) unless it is a trusted proxy,
    in which case the right-most ``forwarded_for`` entry that is not a trusted proxy (see the
    module docstring). ``forwarded_for`` holds the header's values in the order received
    (several headers count as one comma-separated list). Never raises."""
    if not trusted:
        return peer                       # the default: no header is believed
    current = parse_ip(peer)
    if current is None or not _trusted(current, trusted):
        return peer
    entries = [e for value in forwarded_for for e in str(value).split(",") if e.strip()]
    for entry in reversed(entries[-MAX_HOPS:]):
        addr = parse_ip(entry)
        if addr is None:
            break                         # garbage: nothing further left can be believed
        current = addr
        if not _trusted(addr, trusted):
            break
    return str(current)
