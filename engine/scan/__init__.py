"""The decision scan: offline, the same shape for every backend (and ``write``,
which sets a decision's value for ``provider set``).

``scan(paths, template, backend)`` reads the decisions' files and returns a
``ScanResult``; ``blocking`` is ``TEMPLATE.json``'s ``decisions[]`` that still need a
person, each with key, reason, absolute file, 1-based line and ``why``. Probes fill
``observed`` where credentials exist (see ``dreamlake.engine.probes``).
"""

from __future__ import annotations

from .result import ScanResult, scan

__all__ = ["ScanResult", "scan"]
