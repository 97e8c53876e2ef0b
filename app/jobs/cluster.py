"""The server's own Dask cluster, in a process of its own so that the web process runs only the web
(a scheduler inside it cost a sixth of every request: its IO loop wakes about a hundred times a
second even at idle).

`python -m app.jobs.cluster WORKERS` starts a scheduler and WORKERS worker processes (one thread
each) on 127.0.0.1, prints the scheduler's address as one line on standard output, and closes them
all when its standard input ends. The server holds the other end of that pipe: when it stops, or
dies (even by SIGKILL), the kernel closes it and the cluster goes with it; the workers are the
cluster process's children and exit with it (distributed's `AsyncProcess` watches its parent).
This module imports nothing of the app: the cluster process loads only Dask.
"""

from __future__ import annotations

import os
import signal
import sys


def serve(workers: int) -> None:
    """Run the cluster until standard input ends."""
    import dask
    from distributed import LocalCluster

    # The workers' statistical profiler samples every 10 ms, on the run's own time; off.
    with dask.config.set({"distributed.worker.profile.enabled": False}):
        cluster = LocalCluster(
            n_workers=workers,
            processes=True,
            threads_per_worker=1,
            dashboard_address=None,
            host="127.0.0.1",
            # Without a dashboard the scheduler still serves /health, on 8787 unless told: a free
            # port instead, so that two servers (or another cluster) on one machine never clash.
            scheduler_kwargs={"dashboard_address": "127.0.0.1:0"},
        )
    try:
        print(cluster.scheduler_address, flush=True)
        # Nothing else goes to standard output: the server reads one line and then no more, and
        # a full pipe would block whatever wrote to it.
        os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
        while sys.stdin.buffer.read(4096):
            pass
    finally:
        cluster.close(timeout=10)


if __name__ == "__main__":
    # A Ctrl-C at the terminal reaches the server's whole process group; the server decides when
    # its cluster ends (it closes the pipe after requeueing what was in flight).
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    serve(int(sys.argv[1]))
