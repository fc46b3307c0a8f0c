"""Serving a fleet of daemons: heartbeats and presence, the hot path for
heartbeats and idle polls, claims reads, wake-ups across replicas, load
shedding, and the uvicorn settings a fleet needs.
"""
