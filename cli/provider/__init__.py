"""The ``dreamlake provider`` verbs: the lifecycle (create … connect), day 2
(suspend, resume, reconcile, destroy, delete, list), settling decisions (``provider set``, in ``decisions``)
and the registry rows (create -f, show, update).
"""
