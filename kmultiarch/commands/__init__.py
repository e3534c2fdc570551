"""One module per command: each returns an exit code and leaves process exit to the CLI."""
