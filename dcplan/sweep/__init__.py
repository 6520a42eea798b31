"""Sweeps: many plans of one case under changed assumptions, on a Dask cluster."""
