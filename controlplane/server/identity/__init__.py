"""A daemon's identity as a client certificate: bootstrap tokens exchanged for
certificates the built-in CA signs (issue.py, routes.py), and the certificate a
TLS connection presented reaching the request (peer.py)."""
