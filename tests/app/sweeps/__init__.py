"""Sweeps: API, validation, charts, and sweeps computed on Dask clusters."""
