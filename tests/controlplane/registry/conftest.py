"""Fixtures for the registry tests live in ``registry_harness`` (importable by name)."""

from registry_harness import postgres, server, sqlite_server  # noqa: F401
