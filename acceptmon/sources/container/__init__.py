"""Containers: runtime log lines unwrapped, and a node's container logs as workloads (``kubernetes:``, ``docker:``)."""
