"""Server-side launching: the launch, instances, daemon-bundle and queue routes
(``routes.router``), the launch service, and the tables they keep."""
