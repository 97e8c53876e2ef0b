"""The compiled event loop, in the modules that change together.

- `layout`: the arrays' columns, entries and rows, declared once, and the tuples that carry them
  (`Cpus`, `Table`, `Hw`, `Arrivals`, `Stats`); `engine.simulate` fills and reads them by name.
- `queue`: the tournament tree of every CPU's next event, and which event that is.
- `cores`: core and package C-states beneath the OS view, and the exit latency a thread pays.
- `calls`: wake-ups sent and received, their cost and the cache-line traffic they make.
- `loop`: the loop itself (`run_until`): idle entry, the wake path, cpuidle's counters.

Every function called from another module is compiled with the same options (`engine.jit`), so
numba folds it into its callers as it did within one module.
"""
