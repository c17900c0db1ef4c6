"""A 50 MB transcript through the real `cems observe --once`: everything read, every observation stored,
and peak memory that does not grow with the file (it is read in bounded pieces and committed as it goes)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import uuid
from pathlib import Path

import pytest

from tests.conftest import REPO
from tests.integration.test_observer_engine import make_idle
from tests.integration.test_observer_synth import one_pass, write_sized

MiB = 1024 * 1024

# The wrapper's only child is the `cems` process, so RUSAGE_CHILDREN's max RSS is that process's peak.
MEASURED_RUN = textwrap.dedent("""
    import json, resource, subprocess, sys, time
    started = time.perf_counter()
    run = subprocess.run([sys.executable, "-m", "cems_cli.cli.app", "observe", "--once", "--json"],
                         capture_output=True)
    print(json.dumps({"code": run.returncode, "stdout": run.stdout.decode(),
                      "stderr": run.stderr.decode()[-3000:],
                      "seconds": time.perf_counter() - started,
                      "peak_rss_kib": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss}))
""")

# Realistic proportions: several large Read outputs per request, stored twice per line (content and
# toolUseResult), and whole original files in Edit results.
SHAPE = {"output_chars": (2000, 40000), "reads": (3, 12)}


def measured_once(environment: dict[str, str]) -> dict:
    full = {k: v for k, v in os.environ.items() if not k.startswith("CEMS_")} | environment
    process = subprocess.run(
        [sys.executable, "-c", MEASURED_RUN],
        env=full,
        cwd=str(REPO),
        capture_output=True,
        timeout=900,
        check=True,
    )
    result = json.loads(process.stdout)
    assert result["code"] == 0, result["stderr"]
    result["report"] = json.loads(result["stdout"])
    return result


def observe_file(env: dict[str, str], root: Path, megabytes: float, seed: int) -> tuple[dict, Path, int]:
    path = root / "-home-dev-shop-api" / f"session-{seed}.jsonl"
    size, _turns = write_sized(
        path, int(megabytes * MiB), seed=seed, session_id=f"scale-session-{seed}", **SHAPE
    )
    make_idle(path)
    environment = {**env, "CEMS_USER": f"scale-{uuid.uuid4().hex[:8]}", "CEMS_OBSERVER_PATHS": str(root)}
    return measured_once(environment), path, size


@pytest.mark.real_model  # its memory bound was measured with the real model loaded
@pytest.mark.slow
def test_a_50_mb_transcript_is_processed_completely_in_bounded_memory(env, tmp_path):
    # The 10 MB run already embeds full batches of long text, which size the model's memory arena once
    # (~50 MiB, whatever the file's size): what is left to compare is what grows with the file.
    small, _small_path, _ = observe_file(env, tmp_path / "small", 10, seed=1)
    big, big_path, size = observe_file(env, tmp_path / "big", 50, seed=2)
    report = big["report"]
    assert report["errors"] == [] and report["malformed"] == 0
    assert report["bytes_read"] == size > 50 * MiB
    assert report["observations"] == len(one_pass(big_path))
    growth_mib = (big["peak_rss_kib"] - small["peak_rss_kib"]) / 1024
    print(
        f"\n50 MB: {big['seconds']:.1f}s, peak RSS {big['peak_rss_kib'] / 1024:.0f} MiB "
        f"(10 MB: {small['peak_rss_kib'] / 1024:.0f} MiB, growth {growth_mib:.0f} MiB)"
    )
    # Holding the file (or its parsed lines) would add over 38 MiB for the 40 MB more; reading it in
    # bounded pieces adds at most a few read blocks and one commit's worth of chunks (3 MiB measured).
    assert growth_mib < 25
