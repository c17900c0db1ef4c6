"""The package says it is typed (PEP 561): a project that imports `cems` gets its annotations checked."""

from __future__ import annotations

from pathlib import Path

import cems
import cems_cli


def test_both_import_names_ship_a_py_typed_marker():
    for package in (cems, cems_cli):
        assert (Path(package.__file__).parent / "py.typed").is_file(), package.__name__


def test_no_public_method_is_named_like_a_builtin_type():
    """A method named `list` shadows the builtin in the annotations of its own class (mypy reads
    `-> list[str]` there as the method): the library names what it lists instead."""
    from cems_cli.api import Config, Memory, Rules, Teams
    from cems_cli.engine.service import MemoryService

    for cls in (Memory, Config, Rules, Teams, MemoryService):
        assert not {"list", "dict", "tuple"} & set(vars(cls)), cls.__name__
