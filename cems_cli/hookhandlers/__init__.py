"""Claude Code hook handlers: one module per event, each with `handle(payload)` and `main()`.

Keep this package import-free: it is on the path of every hook process."""
