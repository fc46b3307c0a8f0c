"""``lakeshore providers | secrets | modes``: the registry from the command line.

    lakeshore providers add NAME --launcher EC2 --kwarg region=us-east-1 [--kwargs-file F]
                                 [--dispatch direct|daemon|hybrid] [--tunnel T]
    lakeshore providers update NAME [--kwarg k=v | k=null] [--kwargs-file F] [--dispatch D] [--tunnel T]
    lakeshore providers list [--hidden] [--deleted] [--all] [--json]
    lakeshore providers show|remove|restore|hide|unhide|test NAME
    lakeshore providers edit                       # interactive, TTY only
    lakeshore secrets add NAME [--kind aws_keypair] (--value-file F | --value-env VAR | --value-stdin)
    lakeshore secrets list | remove NAME
    lakeshore modes add|update NAME --field k=v ... | list | show NAME | remove NAME
    lakeshore modes preview [MODE] [--provider P] [--field k=v]   # the launch-time merge

Every command takes ``--server``, ``--namespace``, ``--token-file``, ``--data-dir``
(defaults: ``LAKESHORE_URL``, ``LAKESHORE_NAMESPACE``, ``LAKESHORE_TOKEN`` /
``LAKESHORE_TOKEN_FILE``, the admin token ``lakeshore serve`` wrote). Nothing prompts
except ``providers edit``, and only on a terminal.
"""

from __future__ import annotations

from .modes import modes_app
from .providers import providers_app
from .registry_common import _client
from .secrets import secrets_app

__all__ = ["_client", "modes_app", "providers_app", "secrets_app"]
