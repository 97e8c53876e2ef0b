"""Scenarios: the built-in experiments (one run per role) and the validation table."""
