"""Platforms: the built-in and custom C-state tables, and tables imported from real machines."""
