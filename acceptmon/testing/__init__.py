"""Shipped test support: format-exact synthetic log lines (`synth`) and their container wrappings (`container`) for tests and benchmarks."""
