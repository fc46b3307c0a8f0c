"""The prefix of every metric this server exports (docs/metrics.md)."""

PREFIX = "lakeshore"
