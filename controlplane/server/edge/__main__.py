"""``python -m dreamlake.controlplane.server.edge``: one edge process (see :mod:`.relay`)."""

from .relay import main

main()
