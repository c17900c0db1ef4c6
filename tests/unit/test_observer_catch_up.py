"""The observer reports its own rate while it catches up on a backlog of transcripts."""

from __future__ import annotations

import logging
import os

from cems_cli.capture.observer_daemon import CatchUp, catching_up


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_a_long_pass_logs_and_records_its_rate_then_clears_it(tmp_path, caplog):
    clock = Clock()
    progress = CatchUp(tmp_path, clock)
    caplog.set_level(logging.INFO, logger="cems.observer")
    seen = []
    for done in range(1, 41):  # 40 transcripts, one a second, 1 MB each
        progress(done, 40, done * 1_000_000)
        if done == 25:
            seen.append(catching_up(tmp_path, os.getpid()))
        clock.now += 1.0
    figures = seen[0]
    assert figures is not None
    assert figures["files_done"] in range(11, 26) and figures["files_total"] == 40
    assert 0.9 <= figures["files_per_second"] <= 1.1 and figures["seconds_left"] > 0
    messages = [r.getMessage() for r in caplog.records]
    assert any(m.startswith("observer: catching up: ") and "files/s" in m for m in messages)
    assert messages[-1].startswith("observer: caught up on 40 transcripts (40.0 MB) in 39 s")
    assert catching_up(tmp_path, os.getpid()) is None  # done: nothing left to show
    assert catching_up(tmp_path, os.getpid() + 1) is None


def test_a_short_pass_says_nothing(tmp_path, caplog):
    clock = Clock()
    progress = CatchUp(tmp_path, clock)
    caplog.set_level(logging.INFO, logger="cems.observer")
    for done in range(1, 6):
        progress(done, 5, 100)
        clock.now += 0.5
    assert not caplog.records
    assert not (tmp_path / CatchUp.FILE).exists()


def test_another_process_progress_file_is_not_shown(tmp_path):
    (tmp_path / CatchUp.FILE).write_text('{"pid": 1, "files_done": 3, "files_total": 9}')
    assert catching_up(tmp_path, os.getpid()) is None
    (tmp_path / CatchUp.FILE).write_text("not json")
    assert catching_up(tmp_path, os.getpid()) is None
