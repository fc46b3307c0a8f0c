"""The watcher: ``dreamlake provider watch`` keeps every provider of a root where its
``target_status`` says, one pass at a time (``engine/verbs/watch.py`` runs the passes).

``lock.py`` one watcher per root; ``decide.py`` the pure choice of what a pass does for
one provider; ``backoff.py`` the per-provider pause after a failure; ``look.py`` every
provider's status as ``status`` derives it; ``passes.py`` one pass; ``publish.py`` the
``observed`` document sent to the control plane; ``install.py`` ``--install``.
"""
