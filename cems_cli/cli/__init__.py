"""The `cems` command line (Typer + rich), one module per command group."""
