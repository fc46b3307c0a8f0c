"""The ``dreamlake provider`` verbs: the lifecycle (create … connect), day 2
(suspend, resume, reconcile, destroy, delete, list), settling decisions (``set``)
and the registry rows (create -f, show, update).
"""
