"""The spec_vs_baseline notebook with host = an ssh config alias of a real sshd on 127.0.0.1.

The simulated engine is launched through SSH on the "remote" host and the load runs on the host
itself (the default for a remote host); the report and run directories must be those of the local
default. The other client location, here through an SSH tunnel, is the same notebook with one
parameter changed: tests/test_bench_onhost.py measures both locations side by side through
``benchmark_variant`` (manifests, columns and dtypes equal), without a second whole notebook run.
"""

from __future__ import annotations

import sys

import pytest
from sshd_fixture import sshd  # noqa: F401  (pytest fixture)

from workbench.paths import PACKAGE_ROOT
from workbench.report import run_notebook
from workbench.store import load_run

pytestmark = pytest.mark.e2e

NOTEBOOK = PACKAGE_ROOT / "notebooks" / "spec_vs_baseline.ipynb"


def test_notebook_runs_against_an_ssh_host(sshd, tmp_path, monkeypatch) -> None:  # noqa: F811
    monkeypatch.setenv("WORKBENCH_SSH_CONFIG", str(sshd.config_file))
    monkeypatch.setenv("WORKBENCH_REMOTE_PYTHON", sys.executable)  # the host's env with aiohttp, numpy
    monkeypatch.setenv("WORKBENCH_SERVERS_DIR", str(tmp_path / "servers"))
    monkeypatch.setenv("WORKBENCH_SWEEPS_DIR", str(tmp_path / "sweeps"))
    runs_dir = tmp_path / "runs"
    result = run_notebook(
        NOTEBOOK,
        out_dir=tmp_path / "reports",
        parameters={
            "host": sshd.alias,
            "engine": "sim",
            "client": "host",
            "variants": ["baseline", "eagle3-topk4"],
            "concurrency_levels": [1, 4],
            "requests_per_level": 8,
            "max_new_tokens": 64,
            "time_scale": 5.0,
            "repeats": 1,
            "runs_dir": str(runs_dir),
        },
    )
    html = result.html.read_text()
    assert "<svg" in html and "SIMULATED" in html
    assert {"throughput", "per_request", "ratio_eagle3-topk4", "accept_length"} <= {p.stem for p in result.charts}
    runs = {load_run(p).manifest["variant"]: load_run(p) for p in runs_dir.iterdir()}
    assert set(runs) == {"baseline", "eagle3-topk4"}
    for run in runs.values():
        m = run.manifest
        assert m["status"] == "complete" and m["host"] == sshd.alias and m["engine"] == "sim"
        assert m["client_location"] == f"host:{sshd.alias}"
        assert list(run.levels["concurrency"]) == [1, 4] and (run.levels["failed"] == 0).all()
        assert (run.requests["output_tokens"] == 64).all()
    accept = runs["eagle3-topk4"].levels["accept_length"]
    assert ((accept > 1.5) & (accept < 3.0)).all()
    # Nothing left running on the host: the registry is empty after the notebook.
    assert not [p for p in (tmp_path / "servers").glob("**/*.json")]
