"""What the hook scripts, the servers and the command line share beneath the library, and nothing of memory:
a hook's payload in and answer out (`hookio`), the entry that runs a handler (`hookentry`), CEMS's hooks in
Claude Code's settings (`hooks_install`, `hooks_commands`, `hooks_scan`), what a session was shown
(`injected`), owner-only folders (`private_dir`), and the processes CEMS starts and recognises (`procs`,
`procinfo`).

Kept empty: every hook imports this package, and a hook's budget is a few milliseconds."""
