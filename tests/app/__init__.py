"""Service tests: API through real HTTP, storage, migrations, jobs and the CLI."""
