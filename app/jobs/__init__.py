"""Jobs: the worker side (`worker`, computes on Dask, imports only the engine) and the server side
(`runner`, claims runs and records what comes back)."""
