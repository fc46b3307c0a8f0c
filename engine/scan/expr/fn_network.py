"""``cidr*`` functions: IPv4 octets read as Terraform's parser reads them
(decimal, leading zeros allowed)."""

from __future__ import annotations

import ipaddress
from typing import Any

from .errors import EvalError, Unevaluable
from .fn_args import int_arg, str_arg


def _ipv4(text: str) -> int:
    """An IPv4 address as Terraform's parser reads it: four decimal octets,
    leading zeros allowed (``010`` is ten)."""
    parts = text.split(".")
    if len(parts) != 4 or not all(p.isascii() and p.isdigit() for p in parts):
        raise EvalError(f"invalid IP address {text!r}")
    if any(len(p) > 3 for p in parts):
        raise Unevaluable("an IPv4 octet written with more than three digits")
    octets = [int(p) for p in parts]
    if any(o > 255 for o in octets):
        raise EvalError(f"invalid IP address {text!r}")
    return int.from_bytes(bytes(octets), "big")


def fn_cidr(prefix: Any) -> ipaddress.IPv4Network | ipaddress.IPv6Network:
    text = str_arg("cidr", prefix)
    addr, slash, bits = text.partition("/")
    if not slash or not bits.isascii() or not bits.isdigit() or len(bits) > 3:
        raise EvalError(f"invalid CIDR prefix {text!r}")
    plen = int(bits)
    if ":" in addr:
        if "." in addr or "%" in addr:
            raise Unevaluable("IPv6 prefix with an embedded IPv4 address or zone")
        try:
            net6 = ipaddress.IPv6Network(f"{addr}/{plen}", strict=False)
        except ValueError as e:
            raise EvalError(f"invalid CIDR prefix {text!r}: {e}") from None
        if net6.network_address in ipaddress.IPv6Network("::ffff:0:0/96"):
            raise Unevaluable("IPv4-mapped IPv6 prefix")
        return net6
    if plen > 32:
        raise EvalError(f"invalid CIDR prefix {text!r}")
    value = _ipv4(addr)
    return ipaddress.IPv4Network((value, plen), strict=False)


def fn_cidrhost(prefix: Any, hostnum: Any) -> str:
    net = fn_cidr(prefix)
    n = int_arg("cidrhost", hostnum)
    if n < 0:
        raise Unevaluable("cidrhost with a negative host number")
    if n >= net.num_addresses:
        raise EvalError(f"prefix of {net.prefixlen} bits cannot accommodate a host numbered {n}")
    return str(net.network_address + n)


def fn_cidrnetmask(prefix: Any) -> str:
    net = fn_cidr(prefix)
    if net.version != 4:
        raise Unevaluable("netmask of an IPv6 prefix")
    return str(net.netmask)


def fn_cidrsubnet(prefix: Any, newbits: Any, netnum: Any) -> str:
    net = fn_cidr(prefix)
    nb, nn = int_arg("cidrsubnet", newbits), int_arg("cidrsubnet", netnum)
    if nb < 0 or nn < 0:
        raise Unevaluable("cidrsubnet with negative numbers")
    new_len = net.prefixlen + nb
    if new_len > net.max_prefixlen or nn >= 2**nb:
        raise EvalError("insufficient address space for the requested subnet")
    size = 2 ** (net.max_prefixlen - new_len)
    base = int(net.network_address) + nn * size
    return str(ipaddress.ip_network((base, new_len)))
