"""The stateful lifecycle: the actual status (derived), the target status (desired
state in the provider's own config), the pure planner that crosses them, gating,
and pools.

The steps themselves are verbs (``verbs``) performed through backends and the
daemon (``daemon``).
"""
