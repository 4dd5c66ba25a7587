"""Shipped test support: format-exact synthetic log lines (``synth``) for tests and benchmarks."""
