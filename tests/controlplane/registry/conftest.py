"""Fixtures for the registry tests live in ``registry_harness`` (importable by name)."""

from registry_harness import registry_servers, server, sqlite_server  # noqa: F401

# `postgres` (one throwaway cluster per session) comes from tests/controlplane/conftest.py.
