"""Settings and the readers every file goes through: ``.dreamrc``, endpoints and
mirrors, bounded text/JSON/HCL/YAML readers, atomic writes, the user cache, the
subprocess trace, and the one small JSON request status makes (``http_json``).

Nothing here knows about providers' status.
"""
