"""Measurements from real machines: wult raw results and turbostat output."""
