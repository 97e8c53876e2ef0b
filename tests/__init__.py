"""idlelab's tests: one package per area (engine, app, browser)."""
