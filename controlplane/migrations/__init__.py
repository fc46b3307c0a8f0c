"""Alembic migrations of the control plane. Revision ids are stable names:
``0001_core`` here; the registry chains ``0002_registry`` onto it from
``controlplane/registry/migrations/``."""
