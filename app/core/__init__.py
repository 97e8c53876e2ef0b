"""What every slice stands on and none of it imports a slice: settings, database, models, errors,
web plumbing, ids and tokens, and the dependency types (with the Protocols `main` wires)."""
