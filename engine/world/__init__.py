"""Reading the world and deriving status: the provider's folder and record, the
vendor templates, the control plane's claims and rows, one observation, the pure
deriver.

No verb logic and no acting on infrastructure here (that is ``verbs`` and
``backends``).
"""
