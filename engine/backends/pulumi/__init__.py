"""The Pulumi backend (``BACKEND``): Automation API stacks for the same decisions.

Importing this package does not import ``pulumi``; only ``plan``, ``apply`` and
``destroy`` do. See ``backend`` for the verbs (and ``plan`` as the recovery step),
``automation`` for the one place the Automation API is driven, ``events`` for
progress from engine events, ``errors`` for the one mapping of the SDK's
exceptions, ``project`` for the stack identity, ``state`` for the file-backend
reader behind ``status``, ``scaffold`` for what ``create --backend pulumi``
writes and ``adopt`` for ``create --stack``.
"""

from .backend import BACKEND, PulumiBackend, counts_from

__all__ = ["BACKEND", "PulumiBackend", "counts_from"]
