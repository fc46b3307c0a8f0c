"""The provider registry: provider rows, secrets, modes and the launch-time merge.

Pure modules (no database, no HTTP): ``launchers``, ``kwargs``, ``merge``,
``secret_values``, ``modes``, ``tombstone``, ``check``, ``render``, ``crypto``.
Server side: ``models`` (tables on the core ``Base``), ``service`` (operations),
``routes`` (the FastAPI ``router`` the app factory mounts).

This ``__init__`` imports nothing so the CLI can load the pure modules cheaply.
"""
