"""One definition of each default: cems_cli/defaults.py. Settings, the retrieval stages and the hooks read
it; nothing restates a value (the search server once fused with 0.5 where the settings said 0.3)."""

from __future__ import annotations

import ast
from pathlib import Path

from cems_cli import defaults
from cems_cli.config import Settings

PACKAGE = Path(__file__).resolve().parents[2] / "cems_cli"


def _constants() -> dict[str, object]:
    return {name: value for name, value in vars(defaults).items() if name.isupper()}


def test_every_setting_with_a_shared_default_takes_it_from_the_defaults_module():
    fields = Settings.model_fields
    shared = {name.lower(): value for name, value in _constants().items() if name.lower() in fields}
    assert len(shared) >= 15
    assert {name: fields[name].default for name in shared} == shared


def test_no_module_restates_a_default_as_a_literal():
    """`DEFAULT_X = <number>` in a module: a second definition waiting to drift. Module constants that
    name a shared default must be the defaults module's value (`DEFAULT_X = defaults.X`)."""
    restated: list[str] = []
    values = {value for value in _constants().values() if isinstance(value, float | int)}
    for path in PACKAGE.rglob("*.py"):
        if path.name == "defaults.py" or "_data" in path.parts:
            continue
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            if not (isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant)):
                continue
            names = [t.id for t in node.targets if isinstance(t, ast.Name) and t.id.startswith("DEFAULT_")]
            suffixes = {name.removeprefix("DEFAULT_") for name in names}
            if suffixes & set(_constants()) and node.value.value in values:
                restated.append(f"{path.relative_to(PACKAGE)}: {', '.join(names)}")
    assert restated == []


def test_the_stages_defaults_are_the_settings_defaults():
    import inspect

    from cems_cli.retrieval import filtering, fusion, neighbours, strong_signal

    def default(function: object, name: str) -> object:
        return inspect.signature(function).parameters[name].default  # type: ignore[arg-type]

    fields = Settings.model_fields
    assert default(fusion.fuse_candidates, "hybrid_vector_weight") == fields["hybrid_vector_weight"].default
    assert default(filtering.filter_by_threshold, "threshold") == fields["relevance_threshold"].default
    assert default(filtering.has_evidence, "min_similarity") == fields["min_similarity"].default
    assert default(neighbours.apply_session_context, "session_weight") == fields["session_weight"].default
    threshold = fields["strong_signal_threshold"].default
    assert default(strong_signal.detect_strong_signal, "threshold") == threshold


def test_every_settings_default_is_defined_in_the_defaults_module():
    """Settings and ObserverSettings state no value of their own: each non-empty default is the
    constant of the same name in cems_cli/defaults.py (flags, empty and computed defaults excepted)."""
    from cems_cli.capture.observer_settings import ObserverSettings

    constants = _constants()
    missing = []
    for model in (Settings, ObserverSettings):
        for name, field in model.model_fields.items():
            default = field.default
            if default is None or isinstance(default, bool) or default == "" or field.default_factory:
                continue
            if constants.get(name.upper()) != default:
                missing.append(f"{model.__name__}.{name} = {default!r}")
    assert missing == []
