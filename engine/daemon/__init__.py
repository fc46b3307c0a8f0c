"""The daemon on a host: the zipapp it runs as, install, start under a
supervisor, probe which supervisor runs it, stop, suspend and resume, the host
``connect`` recorded (``host``) and the key the install is named by (``key``).

How a host is reached (local or SSH) is ``remote``; what the daemon itself runs
is ``dreamlake.controlplane.nymph``.
"""
