"""Platforms: the built-in C-state tables (with provenance), users' custom ones, and tables imported
from real machines."""
