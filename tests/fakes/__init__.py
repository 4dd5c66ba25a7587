"""In-process imitations of external services for system tests."""
