"""Test support shared by unit and system tests: fakes, fixtures, factories."""
