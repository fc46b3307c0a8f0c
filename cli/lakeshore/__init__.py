"""The ``lakeshore`` command: ``app`` (serve, namespaces, tokens) and one module
per sub-app (providers, secrets, modes, launch, capacity, fleet), with the
connection options and the client they share (``common``, ``options``).
"""
