"""The Pulumi backend (``BACKEND``): Automation API stacks for the same decisions.

Importing this package does not import ``pulumi``; only ``plan`` and ``apply`` do.
See ``backend`` for the verbs, ``state`` for the file-backend reader behind
``status``, ``scaffold`` for what ``create --backend pulumi`` writes.
"""

from .backend import BACKEND, PulumiBackend, counts_from

__all__ = ["BACKEND", "PulumiBackend", "counts_from"]
