"""Machines' twins: fits of imported counters, and what-if runs on them."""
