"""Capacity across providers: what each provider offers and at what price
(``offers``), the placement decision over those offers (``decide``, pure), its JSON
Schema (``schema``), the listing and the leases that hold capacity for a while
(``service``, ``leases``), capacity back-off after a refused launch (``backoff``),
and placement for queues that name several providers (``queueplace``)."""
