"""Sweeps: a base config and axes whose cartesian product is a set of ordinary runs."""
