"""Platforms: the built-in C-state tables (with provenance) and users' custom ones."""
