"""Core revisions (namespaces, tokens, workers, work items)."""
