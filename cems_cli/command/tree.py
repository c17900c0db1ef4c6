"""Simple commands of any Bash command line, parsed with tree-sitter-bash and expanded where static.

What the shell would compute before running a command is computed here when it does not depend on the
run: quotes and escapes, `$'…'`, brace expansion (`{rm,-rf,/}` is `rm -rf /`), `$IFS` and `${IFS}` (a
blank, then field splitting), and variables assigned earlier on the same line (`R=rm; $R -rf /`).
Everything else (`$(…)`, an unknown `$VAR`, `$((…))`) stays as its source text, and the word is marked
not static, so `cems_cli.command.model` can tell "cannot be checked" from "checked".

Substitutions (`$(…)`, backquotes, `<(…)`, `>(…)`), function bodies and here-document substitutions are
parsed as commands of their own, one level deeper.
"""

from __future__ import annotations

import sys

from cems_cli.command._expand import (
    Piece,
    _split_by_ifs,
    _unescape_double,
    _unescape_unquoted,
    ansi_c,
    fields,
)
from cems_cli.command.plain import Simple

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


# Past this many characters only the beginning is parsed (tree-sitter is linear, expanding is Python).
MAX_PARSE_CHARS = 64 * 1024
MAX_DEPTH = 6


# tree-sitter-bash slows down sharply on long pipelines (8,000 stages parse in 0.1 s, 16,000 in 10 s): a
# line with more `|` than this is not parsed at all, and so cannot be checked.
MAX_PIPES = 4000

_parser: Any = None


def _load_binding(package: str) -> Any:
    """`package._binding`, the C extension, without running `package/__init__.py`: tree_sitter's imports
    `typing` and tree_sitter_bash's `importlib.resources` (~15 ms together, measured with -X importtime),
    neither needed to parse. Registered in sys.modules, so a later `import tree_sitter` reuses it."""
    name = package + "._binding"
    module = sys.modules.get(name)
    if module is not None:
        return module
    import _imp
    from importlib.machinery import ModuleSpec, PathFinder

    found = PathFinder.find_spec(package)
    if found is None or not found.submodule_search_locations:
        raise ImportError(f"{package} is not installed")
    spec = PathFinder.find_spec("_binding", list(found.submodule_search_locations))
    if spec is None or not spec.origin:
        raise ImportError(f"{package} has no binding")
    module = _imp.create_dynamic(ModuleSpec(name, None, origin=spec.origin))
    sys.modules[name] = module
    return module


def parser() -> Any:
    global _parser
    if _parser is None:
        try:
            core, bash = _load_binding("tree_sitter"), _load_binding("tree_sitter_bash")
        except Exception:  # an unusual installation: the documented way, slower
            import tree_sitter
            import tree_sitter_bash

            _parser = tree_sitter.Parser(tree_sitter.Language(tree_sitter_bash.language()))
        else:
            _parser = core.Parser(core.Language(bash.language()))
    return _parser


class _Context:
    """Variables known so far (None: assigned, value unknown) and where found commands go."""

    __slots__ = ("variables", "out", "depth")

    def __init__(self, out: list[Simple], depth: int, variables: dict[str, str | None] | None = None) -> None:
        self.variables: dict[str, str | None] = variables if variables is not None else {}
        self.out = out
        self.depth = depth


_DEFAULTS = {"IFS": " \t\n"}


def _variable(name: str, context: _Context) -> str | None:
    if name in context.variables:
        return context.variables[name]
    return _DEFAULTS.get(name)


def _text(node: Any) -> str:
    text = node.text.decode("utf-8", "replace")
    return text.replace(_GLUED_BRACE, "{") if _GLUED_BRACE in text else text


# `{rm,-rf,/}` at the start of a command is a brace-expanded word to bash (a `{` keyword needs a blank
# after it), but tree-sitter-bash reads a group there and fails. Such a `{` is swapped for a private-use
# character before parsing, which the grammar takes as a word character, and swapped back in every text
# read from the tree; inside quotes the swap changes nothing, as it is undone the same way.
_GLUED_BRACE = "\ue000"


def _glue_braces(text: str) -> str:
    if "{" not in text:
        return text
    out = list(text)
    for index, char in enumerate(text):
        if char == "{" and (index == 0 or text[index - 1] in " \t\n;&|(") and \
                text[index + 1:index + 2] not in ("", " ", "\t", "\n", "}"):
            out[index] = _GLUED_BRACE
    return "".join(out)


def _pieces(node: Any, context: _Context, quoted: bool = False) -> list[Piece]:
    kind = node.type
    if kind == "concatenation":
        return [piece for child in node.children for piece in _pieces(child, context, quoted)]
    if kind == "raw_string":
        return [(_text(node)[1:-1], True, True, False)]
    if kind == "ansi_c_string":
        return [(ansi_c(_text(node)[2:-1]), True, True, False)]
    if kind == "translated_string":
        return [piece for child in node.children if child.type == "string"
                for piece in _pieces(child, context, True)]
    if kind == "string":
        return _string_pieces(node, context)
    if kind == "simple_expansion" or kind == "expansion":
        name = _plain_expansion_name(node)
        value = _variable(name, context) if name else None
        if value is None:
            _nested_in(node, context)
            return [(_text(node), quoted, False, False)]
        if not quoted and "IFS" in context.variables:
            return [_split_by_ifs(value, context.variables["IFS"], _text(node))]
        return [(value, quoted, True, not quoted)]
    if kind in ("command_substitution", "process_substitution"):
        _substitution(node, context)
        return [(_text(node), quoted, False, False)]
    if kind == "arithmetic_expansion":
        _nested_in(node, context)
        return [(_text(node), quoted, False, False)]
    if quoted:
        return [(_unescape_double(_text(node)), True, True, False)]
    return [(_unescape_unquoted(_text(node)), False, True, False)]


def _plain_expansion_name(node: Any) -> str | None:
    """`$NAME` / `${NAME}`; None for `${x:-y}`, `${#x}`, `$1`, `$@` and the like."""
    names = [child for child in node.children if child.is_named]
    if len(names) != 1 or names[0].type != "variable_name":
        return None
    if node.type == "expansion" and node.child_count != 3:
        return None
    return _text(names[0])


def _string_pieces(node: Any, context: _Context) -> list[Piece]:
    pieces: list[Piece] = []
    position = node.start_byte + 1
    raw = node.text
    base = node.start_byte
    for child in node.children:
        if child.type == '"':
            continue
        if child.start_byte > position:  # literal text the grammar leaves between children
            gap = raw[position - base:child.start_byte - base].decode("utf-8", "replace")
            pieces.append((_unescape_double(gap), True, True, False))
        if child.type == "string_content":
            pieces.append((_unescape_double(_text(child)), True, True, False))
        else:
            pieces.extend(_pieces(child, context, True))
        position = child.end_byte
    return pieces


# --- walking the tree --------------------------------------------------------------------------------------

_REDIRECTS = frozenset({"file_redirect", "heredoc_redirect", "herestring_redirect"})


def _substitution(node: Any, context: _Context) -> None:
    """`$(…)`, backquotes, `<(…)`: their commands run, one level deeper."""
    if context.depth + 1 > MAX_DEPTH:
        return
    text = _text(node)
    inner = _Context(context.out, context.depth + 1, dict(context.variables))
    if text.startswith("`"):  # backquotes: `\``, `\\`, `\$` are unescaped before the body is parsed
        body = text[1:-1] if text.endswith("`") and len(text) > 1 else text[1:]
        body = body.replace("\\\\", "\0").replace("\\`", "`").replace("\\$", "$").replace("\0", "\\")
        parse_into(body, inner)
        return
    for child in node.children:
        if child.is_named:
            _statement(child, inner)


def _nested_in(node: Any, context: _Context) -> None:
    """Substitutions inside an expansion we do not evaluate (`${x:-$(rm y)}`, `$(( $(f) ))`) still run."""
    for child in node.children:
        if child.type in ("command_substitution", "process_substitution"):
            _substitution(child, context)
        elif child.child_count:
            _nested_in(child, context)


def _assign(node: Any, context: _Context) -> tuple[str, str | None]:
    name_node = node.child_by_field_name("name") or (node.children[0] if node.children else None)
    name = _text(name_node) if name_node is not None else ""
    value_node = node.child_by_field_name("value")
    if value_node is None:
        return name, ""
    if value_node.type == "array":
        _nested_in(value_node, context)
        return name, None
    words = fields(_pieces(value_node, context, False))
    # An assignment's value is not field-split or brace-expanded: join back what `fields` split.
    value = " ".join(word for word, _ in words)
    static = all(s for _, s in words)
    return name, value if static else None


def _redirect(node: Any, context: _Context, simple: Simple) -> None:
    kind = node.type
    operator = ""
    for child in node.children:
        if not child.is_named and child.type not in ('"',):
            operator = operator or child.type
    if kind == "herestring_redirect":
        targets = [c for c in node.children if c.is_named]
        if targets:
            words = fields(_pieces(targets[-1], context))
            simple.stdin.append(" ".join(w for w, _ in words) if all(s for _, s in words) else None)
        return
    if kind == "heredoc_redirect":
        quoted_delimiter = False
        for child in node.children:
            if child.type in _REDIRECTS:  # `cat <<EOF > f`: the grammar puts `> f` inside the here-doc
                _redirect(child, context, simple)
            elif child.type == "heredoc_start":
                quoted_delimiter = any(q in _text(child) for q in "'\"\\")
            elif child.type == "heredoc_body":
                expands = [c for c in child.children if c.type != "heredoc_content"]
                if not quoted_delimiter:
                    _nested_in(child, context)
                simple.stdin.append(_text(child) if quoted_delimiter or not expands else None)
        return
    named = [c for c in node.children if c.is_named and c.type != "file_descriptor"]
    if not named:
        return
    # The destination may come in adjacent nodes (`> ~/$d/$e/f` is split by the grammar): one word.
    pieces = _pieces(named[0], context)
    last_end = named[0].end_byte
    for child in named[1:]:
        if child.start_byte != last_end:
            break
        _glue(pieces, _pieces(child, context), context)
        last_end = child.end_byte
    words = fields(pieces)
    target = words[0][0] if len(words) == 1 and words[0][1] else None
    if operator in (">&", "<&") and target is not None and (target.isdigit() or target == "-"):
        return  # `2>&1`: a descriptor, not a file
    if operator == "<" and target is not None:
        simple.stdin.append(None)
    simple.redirects.append((operator, target))


def _glue(previous: list[Piece], pieces: list[Piece], context: _Context) -> None:
    """Append the pieces of a node adjacent to the previous one: one word to the shell. The grammar splits
    `rm$IFS-rf$IFS/` and `~/$d/$e/f` after a lone `$`: that `$` and the name that follows are one
    expansion again."""
    if previous and previous[-1][0].endswith("$") and not previous[-1][1] and pieces and not pieces[0][1]:
        head = pieces[0][0]
        length = next((i for i, c in enumerate(head) if not (c.isalnum() or c == "_")), len(head))
        if length and not head[0].isdigit():
            value = _variable(head[:length], context)
            text = previous[-1][0][:-1]
            previous[-1] = (text, False, True, False)
            expanded: Piece = (value, False, True, True) if value is not None else (
                "$" + head[:length], False, False, False)
            pieces = [expanded, (head[length:], False, True, False), *pieces[1:]]
    previous.extend(pieces)


def _command(node: Any, context: _Context, redirects: list[Any], pipe: int, prefix: str = "") -> Simple:
    simple = Simple([], context.depth, pipe)
    words: list[tuple[str, bool]] = []
    word_pieces: list[list[Piece]] = []
    last_end = -1
    for child in node.children:
        kind = child.type
        if kind == "variable_assignment":
            simple.assignments.append(_assign(child, context))
        elif kind in _REDIRECTS:
            _redirect(child, context, simple)
        elif kind == "command_name" or child.is_named:
            target = child.children[0] if kind == "command_name" and child.children else child
            pieces = _pieces(target, context)
            if not word_pieces and prefix:
                pieces = [(prefix, False, True, False), *pieces]
            if word_pieces and child.start_byte == last_end:
                _glue(word_pieces[-1], pieces, context)
            else:
                word_pieces.append(pieces)
            last_end = child.end_byte
    for pieces in word_pieces:
        words.extend(fields(pieces))
    for redirect in redirects:
        _redirect(redirect, context, simple)
    simple.words = [word for word, _ in words]
    simple.static = [static for _, static in words]
    return simple


def _statement(node: Any, context: _Context, pipe: int = 0, redirects: list[Any] | None = None) -> None:
    kind = node.type
    if kind == "command":
        # Append before walking nested heredoc pipelines so the pipeline order stays right.
        context.out.append(_command(node, context, redirects or [], pipe))
        return
    if kind == "redirected_statement":
        body = node.child_by_field_name("body")
        own = [c for c in node.children if c.type in _REDIRECTS]
        after = [c for r in own if r.type == "heredoc_redirect" for c in r.children
                 if c.is_named and c.type not in ("heredoc_start", "heredoc_body", "heredoc_end")
                 and c.type not in _REDIRECTS]
        if body is None:
            holder = Simple([], context.depth, pipe)
            for redirect in own:
                _redirect(redirect, context, holder)
            context.out.append(holder)
        elif body.type == "command":
            context.out.append(_command(body, context, own, pipe))
        else:
            _statement(body, context, pipe)
            holder = Simple([], context.depth, pipe)  # `{ a; b; } > f`: the writes of the whole group
            for redirect in own:
                _redirect(redirect, context, holder)
            context.out.append(holder)
        for extra in after:  # `cat <<E | bash`: the grammar hangs the rest of the line under the here-doc
            if extra.type == "pipeline" and _text(extra).lstrip().startswith(("|", "|&")):
                _pipeline(extra, context, pipe + 1)
            else:
                _statement(extra, context)
        return
    if kind == "pipeline":
        _pipeline(node, context, 0)
        return
    if kind == "variable_assignment":
        _remember(_assign(node, context), context, pipe)
        return
    if kind == "variable_assignments":
        for child in node.children:
            if child.type == "variable_assignment":
                _remember(_assign(child, context), context, pipe)
        return
    if kind == "declaration_command":  # export R=rm, declare -x R=rm, local R=rm
        for child in node.children:
            if child.type == "variable_assignment":
                _remember(_assign(child, context), context, pipe)
            elif child.is_named:
                _nested_in(child, context)
        return
    if kind == "compound_statement" and node.child_count > 1:
        brace, following = node.children[0], node.children[1]
        if brace.type == "{" and following.start_byte == brace.end_byte and following.type == "command":
            # `{rm,-rf,/}` is a brace-expanded word, not a group: `{` glued to the next word is no keyword
            context.out.append(_command(following, context, [], pipe, prefix="{"))
            for child in node.children[2:]:
                if child.is_named:
                    _statement(child, context)
            return
    if kind in ("command_substitution", "process_substitution"):
        _substitution(node, context)
        return
    if kind in ("comment", "heredoc_body", "heredoc_start", "heredoc_end"):
        return
    if kind in ("simple_expansion", "expansion", "arithmetic_expansion", "string", "concatenation"):
        _nested_in(node, context)
        return
    for child in node.children:
        if child.is_named:
            _statement(child, context, pipe)


def _remember(assignment: tuple[str, str | None], context: _Context, pipe: int) -> None:
    """A variable set for the rest of the line; also kept as a command of its own with no words, so the
    model sees `export GIT_PAGER='…'` as it sees `GIT_PAGER='…' git log`."""
    context.variables[assignment[0]] = assignment[1]
    holder = Simple([], context.depth, pipe)
    holder.assignments.append(assignment)
    context.out.append(holder)


def _pipeline(node: Any, context: _Context, first: int) -> None:
    position = first
    for child in node.children:
        if child.is_named:
            _statement(child, context, position)
            position += 1


def _join_continued_lines(text: str) -> str:
    """Line continuations removed, as the shell does before it splits words (`r\\<newline>m` is `rm`;
    the grammar would read two words). Inside single quotes a backslash is a backslash, so they are kept."""
    out: list[str] = []
    i, n = 0, len(text)
    in_single = in_double = False
    while i < n:
        char = text[i]
        if in_single:
            close = text.find("'", i)
            close = n if close < 0 else close
            out.append(text[i:close + 1])
            i, in_single = close + 1, False
            continue
        if char == "\\" and i + 1 < n:
            if text[i + 1] != "\n":
                out.append(text[i:i + 2])
            i += 2
            continue
        if char == "'" and not in_double:
            in_single = True
        elif char == '"':
            in_double = not in_double
        out.append(char)
        i += 1
    return "".join(out)


def parse_into(text: str, context: _Context) -> bool:
    """Parse `text` and append its simple commands to context.out; False when part of it does not parse."""
    if text.count("|", 0, MAX_PARSE_CHARS) > MAX_PIPES:
        return False  # tree-sitter-bash takes seconds on such a pipeline, past the hook's timeout: unread
    source = _glue_braces(text[:MAX_PARSE_CHARS])
    if "\\\n" in source:
        source = _join_continued_lines(source)
    tree = parser().parse(source.encode("utf-8", "surrogatepass"))
    root = tree.root_node
    for child in root.children:
        if child.is_named:
            _statement(child, context)
    # A line cut at MAX_PARSE_CHARS was read only in part: what runs after the cut (`git -c a=b` × 9,000,
    # then `push -f`) is not among the commands, so the line must not pass as fully checked.
    return not root.has_error and len(text) <= MAX_PARSE_CHARS


def tree_simples(text: str, depth: int = 0) -> tuple[list[Simple], bool]:
    """The simple commands of `text` in source order (nested ones after the command holding them), and
    whether the whole line parsed without error."""
    out: list[Simple] = []
    try:
        clean = parse_into(text, _Context(out, depth))
    except RecursionError:  # thousands of nested groups: what was found so far, and "does not parse"
        clean = False
    return out, clean
