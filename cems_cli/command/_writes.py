"""The files a simple command writes (`tee`, `sed -i`, `cp`/`mv` destinations, `dd of=`, `rm`…)."""

from __future__ import annotations

from cems_cli.command._programs import _NONE
from cems_cli.command.words import _rename, option_value

TYPE_CHECKING = False
if TYPE_CHECKING:
    from cems_cli.command.model import Analysis


def _operands(argv: list[str], short_values: str = "", long_values: frozenset[str] = _NONE) -> list[str]:
    """The operands of argv[1:], options anywhere among them (GNU style) and the values of those that take
    one skipped; everything after `--` is an operand."""
    out: list[str] = []
    i, size = 1, len(argv)
    while i < size:
        word = argv[i]
        i += 1
        if word == "--":
            out.extend(argv[i:])
            break
        if len(word) < 2 or word[0] != "-":
            out.append(word)
        elif word[1] == "-":
            if "=" not in word and word in long_values:
                i += 1
        else:
            for index in range(1, len(word)):
                if word[index] in short_values:
                    if index == len(word) - 1:
                        i += 1
                    break
    return out


def _writes(argv: list[str], analysis: Analysis) -> None:
    """Files this command (one layer, already unwrapped) writes or removes."""
    name = argv[0]
    writes = analysis.writes
    if name == "tee":
        writes.extend(_operands(argv))
    elif name in ("sed", "perl", "ruby") and any(
            w.startswith("-i") or w == "--in-place" or w.startswith("--in-place=")
            or (w.startswith("-") and not w.startswith("--") and "i" in w[1:] and name != "sed")
            for w in argv[1:]):
        operands = _operands(argv, "ef", frozenset({"--expression", "--file"}))
        explicit = any(w in ("-e", "--expression", "-f", "--file") or w.startswith(("-e", "--expression="))
                       for w in argv[1:] if not w.startswith("-i"))
        writes.extend(operands if explicit else operands[1:])
    elif name in ("cp", "mv", "install", "ln", "rsync", "scp"):
        target = option_value(argv, 1, len(argv), "t", "--target-directory")
        operands = _operands(argv, "tSm" if name != "rsync" else "e", frozenset({
            "--target-directory", "--suffix", "--mode", "--backup"}))
        if target is not None:
            writes.append(target)
        elif operands:
            writes.append(operands[-1])
            if len(operands) == 2 and name in ("cp", "ln", "install") and not operands[1].endswith("/"):
                _rename(operands[1], operands[0], analysis)
        if name == "mv":  # the sources disappear
            writes.extend(operands[:-1] if target is None else operands)
    elif name == "dd":
        writes.extend(word[3:] for word in argv[1:] if word.startswith("of="))
    elif name in ("truncate", "shred", "touch", "rm", "unlink", "rmdir", "chmod", "chown"):
        operands = _operands(argv, "srdt" if name in ("truncate", "touch") else "", frozenset({"--size",
                                                                                               "--reference"}))
        if name in ("chmod", "chown"):
            operands = operands[1:]
        writes.extend(operands)
    elif name in ("curl", "wget"):
        value = option_value(argv, 1, len(argv), "o" if name == "curl" else "O",
                             "--output" if name == "curl" else "--output-document")
        if value is not None:
            writes.append(value)
    elif name == "patch":
        operands = _operands(argv, "pioBdDFrVYz", frozenset({"--input", "--output", "--directory"}))
        writes.extend(operands[:1])
