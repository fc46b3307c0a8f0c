"""The daemon on a host: the zipapp it runs as, install, start under a
supervisor, probe which supervisor runs it, stop, suspend and resume.

How a host is reached (local or SSH) is ``remote``; what the daemon itself runs
is ``dreamlake.controlplane.nymph``.
"""
