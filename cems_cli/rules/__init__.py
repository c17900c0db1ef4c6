"""Guard rails: rules that block, ask about or warn on tool calls before they run.

model (Rule, make_rule) · parse (one-line and file forms) · matcher (decide) ·
shell (command lines as the shell runs them) · snapshot (the hook's local copy).
Deliberately no re-exports: the PreToolUse hook imports this package and must not pay for `model`."""
