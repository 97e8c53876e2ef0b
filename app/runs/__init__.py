"""Runs: submit a config, follow it, read its immutable result and page, list, compare, delete."""
