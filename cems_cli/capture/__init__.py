"""Turning agent activity into memories: hook events (spool, worker) and the transcript observer."""
