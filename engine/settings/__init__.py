"""Settings and the readers every file goes through: ``.dreamrc``, endpoints and
mirrors, bounded text/JSON/HCL/YAML readers, atomic writes, the user cache, the
subprocess trace.

Nothing here knows about providers' status.
"""
