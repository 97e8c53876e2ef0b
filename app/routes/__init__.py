"""HTTP routers: `api` (JSON under /api), `pages` and `charts` (dashboard), `scenarios`."""
