"""Core routes: admin (health, namespaces, tokens), workers and claims, work."""
