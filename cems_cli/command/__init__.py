"""One model of a Bash command line, shared by the rules (`cems_cli.rules.matcher`) and capture
(`cems_cli.capture.tool_patterns`, `cems_cli.capture.observations`).

* `cems_cli.command.plain`: the fast path, command lines with no shell syntax beyond quotes and separators
  (most of them), split without any import;
* `cems_cli.command.tree`: everything else, parsed with tree-sitter-bash and expanded where the value is
  static (quotes, escapes, `$'…'`, braces, `${IFS}`: `_expand`; variables assigned earlier on the line);
* `cems_cli.command.model`: what the simple commands run once wrappers are unwrapped (`sudo`, `timeout`,
  `ssh host …`, `docker run …`, `bash -c …`, `git -c alias.…`), which files they write, and what cannot be
  known before the line runs (`eval "$x"`, `… | sh`, a command name from `$(…)`); the programs it knows are
  in `_programs`, command lines inside other programs' arguments in `_nested`, the files written in `_writes`;
* `cems_cli.command.words`: the simple commands of a line (fast path or tree) and reading their words;
* `cems_cli.command.invocations`: the same model as capture sees it (wrappers that change nothing removed).

Nothing is imported here: the PreToolUse hook imports this package on its hot path.
"""
