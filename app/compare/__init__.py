"""Comparisons: runs side by side, and measurements beside them."""
