"""The run catalogue: list (broken runs included), show, label, compare, delete and export,
through the notebook functions and the ``workbench runs`` command."""

from __future__ import annotations

import json
import os
import random
import shutil
import subprocess
import sys
from datetime import datetime, timedelta, timezone
from pathlib import Path
from types import SimpleNamespace

import pandas as pd
import pytest
from typer.testing import CliRunner

import workbench as wb
from workbench.bench._frames import records_to_frame
from workbench.bench._record import RequestRecord
from workbench.cli import app
from workbench.errors import ConfigError
from workbench.store import new_run, open_run

T0 = datetime(2026, 6, 1, 9, 0, 0, tzinfo=timezone.utc)


def unit(level_index: int, concurrency: int, repeat: int, tpot_ms: float) -> tuple[pd.DataFrame, pd.DataFrame]:
    """One stored unit: 4 requests of 9 output tokens each, a flat TPOT (so per-request tok/s is 1000/tpot)."""
    records = [
        RequestRecord(
            request_index=i,
            prompt_id=f"p{i}",
            output_tokens=9,
            prompt_tokens=20,
            ttft_ms=10.0,
            e2e_ms=10.0 + 8 * tpot_ms,
            tpot_ms=tpot_ms,
            itl_ms=[tpot_ms] * 8,
            tokens_per_chunk=[1] * 9,
            start_s=0.0,
            end_s=(10.0 + 8 * tpot_ms) / 1000,
            time_scale=1.0,
        )
        for i in range(4)
    ]
    requests = records_to_frame(
        records,
        dict(
            level_index=level_index,
            mode="closed",
            concurrency=concurrency,
            request_rate_req_s=float("inf"),
            repeat=repeat,
        ),
    )
    info = pd.DataFrame(
        [
            dict(
                level_index=level_index,
                repeat=repeat,
                flush_ok=True,
                flush_attempts=1,
                flush_error=None,
                server_accept_length=float("nan"),
                server_gen_throughput_tok_s=float("nan"),
                server_info_error=None,
            )
        ]
    )
    return requests, info


@pytest.fixture(scope="module")
def written(tmp_path_factory):
    """Five run directories, written once: a baseline (2 levels x 2 repeats), a faster spec run (same), one
    stopped after one unit (still 'running', its sweep killed), one whose manifest is unreadable, an import."""
    tmp_path = tmp_path_factory.mktemp("written")
    made = {}
    for k, (name, engine, tpots) in enumerate([("baseline", "sglang", (20.0, 22.0)), ("eagle3", "sim", (10.0, 12.0))]):
        run = new_run(
            name,
            engine=engine,
            root=tmp_path,
            host="gpu1" if k == 0 else "local",
            sglang_version="0.5.9",
            now=lambda k=k: T0 + timedelta(hours=k),
            rng=random.Random(k),
        )
        for repeat, tpot in enumerate(tpots):
            for i, c in enumerate((1, 4)):
                run.save_level(unit(i, c, repeat, tpot * (1 + 0.5 * i)))
        run.finish()
        made[name] = run
    stopped = new_run("stopped", engine="sim", root=tmp_path, now=lambda: T0 + timedelta(hours=2), rng=random.Random(7))
    stopped.save_level(unit(0, 1, 0, 15.0))
    made["stopped"] = stopped
    broken = tmp_path / "20260601T120000Z-broken-abcdef"
    broken.mkdir()
    (broken / "manifest.json").write_text("{ not json")
    made["broken"] = broken
    # an imported run, written as docs/RUNS.md says (manifest keys kind/tool/tool_version/source_file, our columns)
    imported = tmp_path / "20260601T130000Z-vllm-llama-0a0b0c"
    imported.mkdir()
    pd.DataFrame(
        {
            "level_index": [0, 1],
            "repeat": [0, 0],
            "concurrency": [1, 4],
            "output_throughput_tok_s": [80.0, 250.0],
            "mean_per_request_tok_s": [80.0, 62.5],
            "mean_ttft_ms": [float("nan"), 40.0],
        }
    ).to_parquet(imported / "levels.parquet")
    (imported / "manifest.json").write_text(
        json.dumps(
            {
                "schema_version": 1,
                "run_id": imported.name,
                "variant": "vllm-llama",
                "engine": "vllm",
                "simulated": False,
                "status": "complete",
                "started_at": "2026-06-01T13:00:00.000Z",
                "host": None,
                "levels_completed": 2,
                "num_requests": 0,
                "units_completed": [[0, 0], [0, 1]],
                "kind": "import",
                "tool": "vllm bench serve",
                "tool_version": "0.11.0",
                "source_file": "/data/vllm-result.json",
            }
        )
    )
    made["import"] = imported
    return tmp_path, {name: getattr(x, "run_id", x.name if isinstance(x, Path) else x) for name, x in made.items()}


@pytest.fixture()
def runs(written, tmp_path):
    """A copy of :func:`written` per test (tests label and delete): ``(root, {name: run})``, each run with
    ``run_id`` and ``path``."""
    source, ids = written
    root = tmp_path / "runs"
    shutil.copytree(source, root)
    made = {name: SimpleNamespace(run_id=run_id, path=root / run_id) for name, run_id in ids.items()}
    made["broken"], made["import"] = made["broken"].path, made["import"].path
    return root, made


def test_list_shows_every_run_with_its_state(runs) -> None:
    root, made = runs
    table = wb.list_runs(root)
    by_id = table.set_index("run_id")
    readable = [r for r in table["run_id"] if "broken" not in r]
    assert readable == [
        made["baseline"].run_id,
        made["eagle3"].run_id,
        made["stopped"].run_id,
        made["import"].name,
    ]  # oldest first
    assert by_id.loc[made["baseline"].run_id, "state"] == "complete"
    assert by_id.loc[made["stopped"].run_id, "state"] == "running"  # list_runs' status, as read
    assert by_id.loc["20260601T120000Z-broken-abcdef", "state"] == "unreadable"
    assert (
        by_id.loc[made["baseline"].run_id, "kind"] == "measured"
        and by_id.loc[made["baseline"].run_id, "host"] == "gpu1"
    )
    assert (
        by_id.loc[made["import"].name, "kind"] == "import"
        and by_id.loc[made["import"].name, "tool"] == "vllm bench serve"
    )


def test_imported_runs_compare_and_show_like_measured_ones(runs) -> None:
    root, made = runs
    shown = wb.show_run(made["import"].name, runs_dir=root)
    assert shown.facts["kind"] == "import" and shown.facts["tool_version"] == "0.11.0"
    assert shown.facts["source_file"] == "/data/vllm-result.json" and list(shown.levels["n"]) == [1, 1]
    table = wb.compare_runs([made["eagle3"].run_id, made["import"].name], runs_dir=root)
    row = table[(table["run_id"] == made["import"].name) & (table["level_value"] == 4)].iloc[0]
    assert (
        row["output_throughput_tok_s"] == 250.0
        and row["n"] == 1
        and row["output_throughput_tok_s_lo"] != row["output_throughput_tok_s_lo"]
    )  # n=1: no interval


def test_show_run_reads_broken_and_stopped_runs(runs) -> None:
    root, made = runs
    broken = wb.show_run("20260601T120000Z-broken", runs_dir=root)  # a unique prefix
    assert broken.facts["state"] == "unreadable" and broken.problem and len(broken.levels) == 0
    stopped = wb.show_run(made["stopped"].run_id, runs_dir=root)
    assert stopped.facts["state"] == "running" and stopped.facts["units_stored"] == 1
    assert list(stopped.levels["level_value"]) == [1.0] and list(stopped.levels["n"]) == [1]
    text = "\n".join(wb.show_run(made["baseline"].run_id, runs_dir=root).lines())
    assert "variant: baseline" in text and "host: gpu1" in text and ", n=2)" in text
    assert "<th style='text-align:left'>state</th><td>unreadable</td>" in broken._repr_html_()


def test_labels_live_beside_the_manifest(runs) -> None:
    root, made = runs
    rid = made["eagle3"].run_id
    manifest_before = (made["eagle3"].path / "manifest.json").read_bytes()
    assert wb.label_run(rid, "keep", "driver-550", runs_dir=root) == ["keep", "driver-550"]
    assert wb.label_run(rid, "keep", "new", runs_dir=root) == ["keep", "driver-550", "new"]
    assert wb.label_run(rid, "driver-550", remove=True, runs_dir=root) == ["keep", "new"]
    assert (made["eagle3"].path / "manifest.json").read_bytes() == manifest_before
    assert wb.list_runs(root).set_index("run_id").loc[rid, "labels"] == "keep, new"
    with pytest.raises(ConfigError, match="non-empty"):
        wb.label_run(rid, " ", runs_dir=root)


def test_compare_puts_runs_side_by_side_with_n_and_intervals(runs) -> None:
    root, made = runs
    a, b = made["baseline"].run_id, made["eagle3"].run_id
    table = wb.compare_runs([a, b], runs_dir=root)
    row = table[(table["run_id"] == b) & (table["level_value"] == 1)].iloc[0]
    # per-request tok/s = 9 tokens / E2E (10 + 8 x TPOT ms): 100 and 84.9 -> mean 92.45 over n=2, a t interval around it
    assert row["mean_per_request_tok_s"] == pytest.approx((9 / 0.090 + 9 / 0.106) / 2)
    assert (
        row["n"] == 2
        and row["mean_per_request_tok_s_lo"] < row["mean_per_request_tok_s"] < row["mean_per_request_tok_s_hi"]
    )
    assert row["engine"] == "sim" and bool(row["simulated"])
    # runs show reads the kind as runs list does: a run of the simulated engine is simulated, not measured
    assert wb.show_run(b, runs_dir=root).facts["kind"] == "simulated"
    result = CliRunner().invoke(app, ["runs", "compare", a, b, "--runs-dir", str(root), "-m", "mean_per_request_tok_s"])
    assert result.exit_code == 0, result.output
    assert "#2 " + b in result.output and "SIMULATED" in result.output and "c=4" in result.output
    assert "92.5 (" in result.output and ", n=2)" in result.output and "[" not in result.output.split("#2")[-1]
    bad = CliRunner().invoke(app, ["runs", "compare", a, "--runs-dir", str(root)])
    assert bad.exit_code == 2 and "two or more runs" in bad.output


def test_delete_asks_and_refuses_a_run_in_flight(runs) -> None:
    root, made = runs
    runner = CliRunner()
    rid = made["baseline"].run_id
    kept = runner.invoke(app, ["runs", "delete", rid, "--runs-dir", str(root)], input="n\n")
    assert kept.exit_code == 0 and made["baseline"].path.is_dir() and "kept" in kept.output
    gone = runner.invoke(app, ["runs", "delete", rid, "--runs-dir", str(root)], input="y\n")
    assert gone.exit_code == 0 and not made["baseline"].path.exists()
    # a sweep holding the run's lock (this process) is in flight: refused, even with --yes
    opened = open_run("eagle3", identity="abc", root=root, engine="sim")
    refused = runner.invoke(app, ["runs", "delete", opened.writer.run_id, "--yes", "--runs-dir", str(root)])
    assert refused.exit_code == 2 and "being written now" in refused.output and opened.writer.path.is_dir()
    opened.writer.finish()  # releases the lock
    assert wb.delete_run(opened.writer.run_id, runs_dir=root) == opened.writer.path
    # a killed sweep's stale lock does not block deletion; an unreadable run can be deleted too
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    (made["stopped"].path / "sweep.lock").write_text(json.dumps({"pid": int(dead.stdout), "hostname": None}))
    assert wb.delete_run(made["stopped"].run_id, runs_dir=root) == made["stopped"].path
    assert wb.delete_run(made["broken"], runs_dir=root) == made["broken"]
    unknown = runner.invoke(app, ["runs", "delete", "nope", "--yes", "--runs-dir", str(root)])
    assert unknown.exit_code == 2 and "No run 'nope'" in unknown.output


def test_export_csv_levels_and_requests(runs, tmp_path_factory) -> None:
    root, made = runs
    out = tmp_path_factory.mktemp("export") / "levels.csv"
    result = CliRunner().invoke(app, ["runs", "export", "--csv", "--out", str(out), "--runs-dir", str(root)])
    assert result.exit_code == 0, result.output
    assert "unreadable" in result.output or "broken" in result.output  # the broken run is named, left out
    levels = pd.read_csv(out)
    assert list(levels.columns[:4]) == ["run_id", "variant", "engine", "simulated"]
    assert len(levels) == 4 + 4 + 1 + 2 and set(levels["variant"]) == {"baseline", "eagle3", "stopped", "vllm-llama"}
    stdout = CliRunner().invoke(
        app, ["runs", "export", "--csv", "--requests", made["eagle3"].run_id, "--runs-dir", str(root)]
    )
    assert stdout.exit_code == 0
    lines = [line for line in stdout.stdout.splitlines() if line]
    assert (
        len(lines) == 1 + 16
        and json.loads(pd.read_csv(pd.io.common.StringIO(stdout.stdout))["itl_ms"][0]) == [10.0] * 8
    )
    # CSV is the one format: no flag needed (--csv, as above, is accepted and changes nothing)
    plain = CliRunner().invoke(app, ["runs", "export", made["eagle3"].run_id, "--runs-dir", str(root)])
    assert plain.exit_code == 0, plain.output
    assert plain.stdout.splitlines()[0].startswith("run_id,variant,engine,simulated,")
    assert len(plain.stdout.splitlines()) == 1 + 4


def test_runs_help_is_cheap() -> None:
    code = (
        "import sys; from typer.testing import CliRunner; from workbench.cli import app; "
        "r = CliRunner().invoke(app, ['runs', 'list', '--help']); "
        "assert r.exit_code == 0, r.output; print(sorted(m for m in ('pandas', 'pyarrow') if m in sys.modules))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, env={**os.environ, "PYTHONPATH": ""}
    )
    assert out.stdout.strip() == "[]"


def test_list_show_and_label_from_the_command_line(runs) -> None:
    root, made = runs
    runner = CliRunner()
    listed = runner.invoke(app, ["runs", "list", "--runs-dir", str(root)])
    assert listed.exit_code == 0 and made["eagle3"].run_id in listed.output and "unreadable" in listed.output
    as_json = json.loads(runner.invoke(app, ["runs", "list", "--json", "--runs-dir", str(root)]).output)
    assert {r["kind"] for r in as_json} == {"measured", "simulated", "import"} and len(as_json) == 5
    labelled = runner.invoke(app, ["runs", "label", made["eagle3"].run_id, "keep", "--runs-dir", str(root)])
    assert labelled.exit_code == 0 and "labels: keep" in labelled.output
    shown = runner.invoke(app, ["runs", "show", made["eagle3"].run_id[:20], "--runs-dir", str(root)])
    assert shown.exit_code == 0 and "labels: keep" in shown.output and "c=4" in shown.output
    missing = runner.invoke(app, ["runs", "list", "--runs-dir", str(root / "none")])
    assert (
        missing.exit_code == 1 and f"no runs folder: {root / 'none'} (from --runs-dir) does not exist" in missing.output
    )
    (root / "empty").mkdir()
    empty = runner.invoke(app, ["runs", "list", "--runs-dir", str(root / "empty")])
    assert empty.exit_code == 0 and "no runs stored in" in empty.output and "folder exists" in empty.output
    (root / "a-file").write_text("x")
    named_file = runner.invoke(app, ["runs", "list", "--runs-dir", str(root / "a-file")])
    assert named_file.exit_code == 2 and "is a file, not a folder" in named_file.output


def test_a_run_whose_rows_cannot_be_read_is_listed_broken_not_complete(runs) -> None:
    from workbench.store import list_runs

    root, made = runs
    path = made["baseline"].path
    status = {r["run_id"]: r["status"] for r in list_runs(root).to_dict("records")}
    assert status[path.name] == "complete"
    (path / "requests.parquet").write_bytes(b"PAR1 cut short by a copy")  # the footer is gone
    row = next(r for r in list_runs(root).to_dict("records") if r["run_id"] == path.name)
    assert row["status"] == "broken" and "requests.parquet cannot be read" in row["problem"]
    assert "restore the file from a backup, or delete the run" in row["problem"]
    listed = CliRunner().invoke(app, ["runs", "list", "--runs-dir", str(root)])
    assert listed.exit_code == 0 and "broken" in listed.output
