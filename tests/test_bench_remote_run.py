"""Tests for workbench.bench._remote_run: the host-side runner, run as the host runs it (a child Python
that cannot import pandas, numpy, tqdm or tokenizers), against a scripted server."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

from blocked_imports import blocking_dir

from workbench.bench._plan import SweepPlan
from workbench.bench._prompts import Prompt
from doubles.scripted_server import ScriptedServer, StreamScript
from workbench.bench._sweep import SweepAssembler
from workbench.bench._sweeplog import SweepLogReader

PROMPTS = [Prompt(f"p{i}", "agentic", f"prompt {i}") for i in range(4)]


def _run(
    tmp_path: Path, url: str, plan_args: dict, *, results: Path | None = None
) -> tuple[subprocess.CompletedProcess, Path]:
    plan = SweepPlan.build(prompt_set=PROMPTS, max_new_tokens=3, **plan_args)
    plan_file = tmp_path / "plan.json"
    plan_file.write_text(json.dumps(plan.to_json()))
    results = results or tmp_path / "results.jsonl"
    env = dict(os.environ, PYTHONPATH=str(blocking_dir(tmp_path)))
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "workbench.bench._remote_run",
            "--plan",
            str(plan_file),
            "--results",
            str(results),
            "--url",
            url,
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    return proc, results


def test_runner_measures_every_level_without_pandas(tmp_path: Path) -> None:
    script = StreamScript(first_delay_s=0.005, chunk_tokens=(1, 2), gap_s=0.002, spec_verify_ct=1)
    with ScriptedServer(script) as srv:
        proc, results = _run(tmp_path, srv.url, dict(concurrency_levels=[1, 2], requests_per_level=3))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "level 1/2 concurrency=1: 3 requests, 0 failed" in proc.stdout and "finished" in proc.stdout
    types = [json.loads(line)["type"] for line in results.read_text().splitlines()]
    assert types == ["started", "request", "warmup"] + ["request"] * 3 + ["level"] + ["request"] * 3 + [
        "level",
        "finished",
    ]
    reader, assembler = SweepLogReader(), SweepAssembler()
    for event in reader.feed(results.read_text()):
        assembler.add(event)
    result = assembler.result()
    assert reader.started.base_url == srv.url
    # the plan reaches the host-side runner, and comes back from it, unchanged
    sent = json.loads((tmp_path / "plan.json").read_text())
    assert json.loads(results.read_text().splitlines()[0])["plan"] == sent
    assert reader.started.plan == SweepPlan.from_json(sent) == result.plan
    assert result.plan.concurrency_levels == (1, 2) and result.plan.requests_per_level == (3, 3)
    assert list(result.levels["completed"]) == [3, 3] and list(result.levels["accept_length"]) == [3.0, 3.0]
    assert (result.requests["ttft_ms"] >= 5.0).all()
    runner = json.loads(results.read_text().splitlines()[0])["runner"]
    assert runner["pid"] > 0 and runner["aiohttp"]


def test_runner_records_why_a_sweep_failed(tmp_path: Path) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    proc, results = _run(tmp_path, f"http://127.0.0.1:{port}", dict(concurrency_levels=[1], requests_per_level=1))
    assert proc.returncode == 1
    last = json.loads(results.read_text().splitlines()[-1])
    assert last["type"] == "failed" and last["error_type"] == "BenchmarkError" and "warmup" in last["message"]


def test_runner_refuses_to_reuse_a_results_file(tmp_path: Path) -> None:
    old = tmp_path / "old.jsonl"
    old.write_text('{"type": "finished"}\n')
    proc, _ = _run(tmp_path, "http://127.0.0.1:9", dict(concurrency_levels=[1], requests_per_level=1), results=old)
    assert proc.returncode == 2 and "cannot create the results file" in proc.stderr
    assert old.read_text() == '{"type": "finished"}\n'
    bad = tmp_path / "bad-plan.json"
    bad.write_text("{}")
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "workbench.bench._remote_run",
            "--plan",
            str(bad),
            "--results",
            str(tmp_path / "r.jsonl"),
            "--url",
            "http://127.0.0.1:9",
        ],
        capture_output=True,
        text=True,
    )
    assert out.returncode == 2 and "cannot use the plan" in out.stderr


def test_runner_stops_on_sigterm_and_says_so(tmp_path: Path) -> None:
    script = StreamScript(first_delay_s=0.05, chunk_tokens=(1,) * 50, gap_s=0.05)  # 2.5 s per request
    with ScriptedServer(script) as srv:
        plan = SweepPlan.build(
            prompt_set=PROMPTS, max_new_tokens=50, concurrency_levels=[1], requests_per_level=5, warmup_requests=0
        )
        (tmp_path / "plan.json").write_text(json.dumps(plan.to_json()))
        results = tmp_path / "results.jsonl"
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "workbench.bench._remote_run",
                "--plan",
                str(tmp_path / "plan.json"),
                "--results",
                str(results),
                "--url",
                srv.url,
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        try:
            while not results.exists() or "started" not in results.read_text():
                assert proc.poll() is None, proc.stdout.read()
                time.sleep(0.02)
            proc.terminate()
            output, _ = proc.communicate(timeout=30)
        finally:
            if proc.poll() is None:
                proc.kill()
    assert proc.returncode == 143, output
    last = json.loads(results.read_text().splitlines()[-1])
    assert last["type"] == "failed" and last["error_type"] == "Stopped"
