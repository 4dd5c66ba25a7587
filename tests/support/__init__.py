"""Fakes shared by unit tests (in-memory filesystems)."""
