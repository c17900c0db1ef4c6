"""The engine: one user's operations on the store, beneath the library (`cems_cli.api`) and above the core.

`service/` (`MemoryService`: prepare, store, search, recall, forget, pin, share), `recall` (the blocks the
hooks inject), `bulk` (import and export), `maintain` (the daily maintenance), `summaries`, `lookup`
(timeline reads) and `rule_management` (adding, changing and testing rules). Capture (`cems_cli.capture`)
is engine code too, in its own folder: the hooks and the observer reach it without the library.

Kept empty: the prompt hook imports `engine.recall` when a search server of an earlier version answers."""
