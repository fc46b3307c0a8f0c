"""TLS off the server's event loop: ``lakeshore serve``'s edge processes.

With TLS on, ``lakeshore serve`` starts ``--tls-processes`` small processes
(``python -m dreamlake.controlplane.server.edge``) that share its listening
sockets. Each accepts connections, refuses the ones whose client has already
given up before any handshake (:mod:`.stale`), does the TLS handshake, and relays
the bytes to the server over a Unix socket, first telling it the client's address
and certificate (:mod:`.wire`). The server reads that from each relayed connection
(:mod:`.relayed`) and serves it as it serves a TLS connection of its own;
:mod:`.supervisor` starts the edges, restarts one that ends, and passes reloads
and shutdown on to them. The edge itself is :mod:`.relay`, which imports only the
standard library and uvloop.
"""
