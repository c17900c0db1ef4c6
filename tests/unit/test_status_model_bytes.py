"""`cems status` states the local model's weights (what the search server maps into memory)."""

from __future__ import annotations

from cems_cli.api._status import _model_bytes
from cems_cli.config import load_settings


def test_the_local_model_weighs_its_file_and_a_remote_or_test_one_nothing(tmp_path):
    local = load_settings(home=tmp_path, embedding_backend="local")
    assert _model_bytes(local) is not None and _model_bytes(local) > 10 * 1024 * 1024
    assert _model_bytes(load_settings(home=tmp_path, embedding_backend="hashing")) is None


def test_resident_memory_of_a_live_process_and_of_none():
    import os

    from cems_cli.plumbing.procinfo import resident_bytes

    assert resident_bytes(os.getpid()) > 1024 * 1024
    assert resident_bytes(2**22 + 12345) is None
