"""Registry operations over a SQLAlchemy session: validation, scoping, soft delete.
One module per resource: ``providers``, ``secrets``, ``modes``, ``launch``; what they
share (the error, the scope, name checks) is in ``common``.

Every function raises :class:`RegistryError` (status, code, sentence) for the route
layer to turn into JSON; none of them ever puts a secret value in an error.

Scoping (the spec's "Namespace and org scoping"):

* a namespace with an ``orgId``: listings, name lookups and duplicate-name checks
  span every namespace of the org;
* a namespace without one: the *listing* is unscoped (every provider on the
  control plane); lookups and duplicate checks stay inside the namespace, which is
  what the ``(namespace, name)`` unique index guards.
"""

from .common import RegistryError, Scope
from .launch import check_provider_row, launch_run_config, preview_launch, resolve_launch
from .modes import create_mode, delete_mode, get_mode, list_modes, mode_wire, update_mode
from .providers import (
    create_provider,
    delete_provider,
    get_provider,
    get_provider_row,
    list_providers,
    provider_wire,
    providers_wire,
    restore_provider,
    update_provider,
)
from .secrets import delete_secret, list_secrets, put_secret, secret_wire

__all__ = [
    "RegistryError",
    "Scope",
    "check_provider_row",
    "create_mode",
    "create_provider",
    "delete_mode",
    "delete_provider",
    "delete_secret",
    "get_mode",
    "get_provider",
    "get_provider_row",
    "launch_run_config",
    "list_modes",
    "list_providers",
    "list_secrets",
    "mode_wire",
    "preview_launch",
    "provider_wire",
    "providers_wire",
    "put_secret",
    "resolve_launch",
    "restore_provider",
    "secret_wire",
    "update_mode",
    "update_provider",
]
