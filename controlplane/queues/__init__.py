"""Queues that grow their own workers: the ``queues`` resource (``service``), its
routes (``routes``) and the reconcile loop (``loop``), one per database."""
