"""This machine's addresses, for the built-in CA's certificate of a server bound to
``0.0.0.0`` (docs/deploy.md: it covers every address of the machine), against
what iproute2's ``ip`` lists, and the kernel's listings parsed."""

from __future__ import annotations

import ipaddress
import shutil
import subprocess

import pytest
from dreamlake.controlplane.server import builtin_ca
from dreamlake.controlplane.server.local_addresses import _ipv4, _ipv6, local_addresses

FIB_TRIE = """Main:
  +-- 0.0.0.0/0 3 0 5
     +-- 10.0.0.0/24 2 0 2
        |-- 10.0.0.5
           /32 host LOCAL
        |-- 10.0.0.7
           /32 host LOCAL
        |-- 10.0.0.255
           /32 link BROADCAST
Local:
     +-- 10.0.0.0/24 2 0 2
        |-- 10.0.0.5
           /32 host LOCAL
"""
IF_INET6 = """00000000000000000000000000000001 01 80 10 80       lo
fe8000000000000000fc00fffe000001 04 40 20 80     eth0
20010db8000000000000000000000005 04 40 00 80     eth0
20010db80000000012345678abcdef01 04 40 00 01     eth0
20010db80000000012345678abcdef02 04 40 00 20     eth0
"""


def test_the_kernels_listings_are_read() -> None:
    assert _ipv4(FIB_TRIE) == ["10.0.0.5", "10.0.0.7"]  # secondary too, no broadcast
    assert _ipv6(IF_INET6) == ["::1", "2001:db8::5"]  # no link-local, temporary, deprecated
    assert _ipv4("") == [] and _ipv6("not a listing\n") == []


def _ip_addresses() -> set[str]:
    listed = subprocess.run(["ip", "-o", "addr", "show"], capture_output=True, text=True,
                            timeout=30, check=True).stdout  # fmt: skip
    found = set()
    for line in listed.splitlines():
        fields = line.split()
        if {"temporary", "deprecated"} & set(fields):
            continue  # not served: left out on purpose
        if len(fields) > 3 and fields[2] in ("inet", "inet6"):
            address = ipaddress.ip_address(fields[3].split("/")[0])
            if not address.is_loopback and not address.is_link_local:
                found.add(str(address))
    return found


@pytest.mark.skipif(shutil.which("ip") is None, reason="iproute2's ip is not installed")
def test_a_wildcard_servers_certificate_names_every_address_of_the_machine() -> None:
    addresses = _ip_addresses()
    assert addresses <= set(local_addresses())
    names = builtin_ca.served_names("0.0.0.0", ["lake.example"])
    assert addresses <= set(names), names
    assert names[0] == "lake.example" and names[-2:] == ["127.0.0.1", "::1"]
    assert "localhost" in names
    assert "0.0.0.0" not in names and addresses <= set(builtin_ca.served_names("::"))
