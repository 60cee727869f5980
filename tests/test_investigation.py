"""Notebook entry points: bad input fails early and clearly; a dying server loses no measured level."""

from __future__ import annotations

import dataclasses
import inspect
from pathlib import Path

import pytest
from server_killer import ServerKiller

from workbench.errors import BenchmarkError, ConfigError
from workbench.hosts import LocalHost
from workbench.hosts import _processes as processes
from workbench import benchmark_variant, benchmark_variants, load_study
from workbench.store import load_run

FAST = dict(max_new_tokens=32, time_scale=20.0, progress=False, repeats=1)


def test_bad_input_is_refused_before_launch(tmp_path) -> None:
    with pytest.raises(ConfigError, match="Known variants: .*baseline"):
        benchmark_variant("no-such-variant", runs_dir=tmp_path)
    with pytest.raises(ConfigError, match="concurrency_levels must be whole numbers >= 1"):
        benchmark_variant("baseline", concurrency_levels=[0, 2], runs_dir=tmp_path)
    with pytest.raises(ConfigError, match="time_scale must be a finite number > 0"):
        benchmark_variant("baseline", time_scale=-1.0, runs_dir=tmp_path)
    with pytest.raises(ConfigError, match="requests_per_level must be a whole number >= 1"):
        benchmark_variant("baseline", requests_per_level=0, runs_dir=tmp_path)
    with pytest.raises(ConfigError, match="no-such-set"):
        benchmark_variant("baseline", prompt_set="no-such-set", runs_dir=tmp_path)
    with pytest.raises(ConfigError, match="time_scale"):
        benchmark_variant("baseline", engine="sglang", time_scale=2.0, runs_dir=tmp_path)
    with pytest.raises(ConfigError, match="Unknown variant 'nope'"):
        benchmark_variants(["baseline", "nope"], runs_dir=tmp_path)  # checked before baseline runs
    with pytest.raises(ConfigError, match="parallel must be a whole number >= 1"):
        benchmark_variants(["baseline"], parallel=0, runs_dir=tmp_path)
    with pytest.raises(ConfigError, match="needs the simulated engine on this machine"):
        benchmark_variants(["baseline"], engine="sglang", parallel=2, runs_dir=tmp_path)
    assert not list(tmp_path.iterdir())  # nothing started, nothing written


def test_parallel_passes_measure_every_variant_and_repeat(tmp_path) -> None:
    runs = benchmark_variants(
        ["baseline", "eagle3-topk1-v2"],
        concurrency_levels=[1, 4],
        runs_dir=tmp_path,
        parallel=2,
        **{**FAST, "repeats": 2},
    )
    assert [load_run(r).manifest["variant"] for r in runs] == ["baseline", "eagle3-topk1-v2"]
    for run in runs:
        stored = load_run(run)
        assert stored.manifest["status"] == "complete"
        assert sorted(zip(stored.levels["repeat"], stored.levels["concurrency"])) == [(0, 1), (0, 4), (1, 1), (1, 4)]


def test_chained_repeats_skip_a_failed_variant_and_finish_the_others(tmp_path) -> None:
    # parallel >= the variants: each variant's repeats run in its own thread; eagle3's server is killed in
    # its first repeat, so its second is skipped while the baseline measures both of its repeats
    killer = ServerKiller(tmp_path, lambda m: m["variant"] == "eagle3-topk4" and m.get("levels_completed", 0) >= 1)
    failures = []
    with pytest.warns(UserWarning, match="eagle3-topk4: server failed"):
        runs = benchmark_variants(
            ["eagle3-topk4", "baseline"],
            concurrency_levels=[1, 2, 4],
            requests_per_level=4,
            runs_dir=tmp_path,
            parallel=2,
            on_failure=failures.append,
            **{**FAST, "repeats": 2, "max_new_tokens": 64, "time_scale": 8.0},
        )
    killer.join()
    assert [f.variant for f in failures] == ["eagle3-topk4"]
    spec, base = load_run(runs[0]), load_run(runs[1])
    assert spec.manifest["status"] == "failed" and spec.manifest["units_completed"] == [[0, 0]]
    assert base.manifest["status"] == "complete" and sorted(set(base.levels["repeat"])) == [0, 1]
    assert not processes.group_members(LocalHost(), killer.pgid)


def test_server_dying_mid_sweep_keeps_measured_levels(tmp_path) -> None:
    killer = ServerKiller(tmp_path, lambda m: m.get("levels_completed", 0) >= 1)
    with pytest.raises(BenchmarkError, match="died during concurrency=|Every request of a level failed") as err:
        benchmark_variant("baseline", concurrency_levels=[1, 2, 4], requests_per_level=4, runs_dir=tmp_path, **FAST)
    killer.join()
    assert "Measured levels are kept" in str(err.value)
    (run_dir,) = [m.parent for m in tmp_path.glob("*/manifest.json")]
    run = load_run(run_dir)
    assert run.manifest["status"] == "failed" and "BenchmarkError" in run.manifest["error"]
    level1 = run.levels[run.levels["concurrency"] == 1].iloc[0]
    assert level1["completed"] == 4 and level1["failed"] == 0
    assert not processes.group_members(LocalHost(), killer.pgid)


def test_study_requires_its_baseline(tmp_path) -> None:
    run = benchmark_variant("baseline", concurrency_levels=[1], requests_per_level=2, runs_dir=tmp_path, **FAST)
    plan = load_run(run).plan  # the plan benchmark_variant built, under one key
    assert plan["concurrency_levels"] == [1] and plan["requests_per_level"] == [2] and plan["time_scale"] == 20.0
    assert plan["prompt_set"] == "default" and plan["unique_prompts"] is False and plan["max_new_tokens"] == 32
    assert "parameters" not in load_run(run).manifest
    with pytest.raises(ConfigError, match="baseline variant 'nope' has no runs"):
        load_study([run], baseline="nope")
    with pytest.raises(ConfigError, match="several runs measure the same variant"):
        load_study([run, run], baseline="baseline")
    study = load_study([run])  # the baseline: the first run's variant
    assert study.baseline == "baseline" and study.simulated and study.subtitle.startswith("SIMULATED")
    assert study.spec_variants == [] and set(study.charts()) == {
        "throughput",
        "per_request",
        "latency_ttft",
        "latency_tpot",
        "latency_e2e",
    }
    verdict = study.verdict()  # one plain run: no policy to choose, and it says what is missing
    assert verdict.splitlines()[2].startswith(
        "- **No speculative variant to compare**: the runs hold one variant, baseline, and it does not draft."
    )
    assert "Recommended policy" not in verdict


def test_benchmark_variants_refuses_a_keyword_benchmark_variant_does_not_take(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="concurency_levels.*help\\(workbench.benchmark_variant\\)"):
        benchmark_variants(["baseline"], concurency_levels=[1], runs_dir=str(tmp_path))
    assert list(tmp_path.iterdir()) == []  # nothing launched, nothing written


def test_progress_default_is_bars_in_jupyterlab_and_lines_under_workbench_report(monkeypatch, tmp_path) -> None:
    import io
    import sys
    import types

    from workbench.sweeps._investigation import _options
    from workbench.sweeps._sweep_prep import prepare_sweep
    from workbench.report import PROGRESS_FILE_ENV

    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    args = _options("baseline", {"runs_dir": str(tmp_path), "progress": None})
    monkeypatch.delenv(PROGRESS_FILE_ENV, raising=False)
    monkeypatch.delitem(sys.modules, "IPython", raising=False)
    monkeypatch.setattr(sys, "stderr", io.StringIO())
    assert prepare_sweep(args).progress is False  # stderr a file or pipe: no carriage-return frames
    monkeypatch.setattr(sys, "stderr", Terminal())
    assert prepare_sweep(args).progress is True  # a terminal
    monkeypatch.setattr(sys, "stderr", io.StringIO())
    ipython = types.ModuleType("IPython")  # a kernel's IPython: its running shell has a kernel
    ipython.get_ipython = lambda: types.SimpleNamespace(kernel=object())
    monkeypatch.setitem(sys.modules, "IPython", ipython)
    assert prepare_sweep(args).progress is True  # tqdm.auto: a widget in JupyterLab
    monkeypatch.setenv(PROGRESS_FILE_ENV, str(tmp_path / "p"))
    assert prepare_sweep(args).progress is False  # lines on the terminal instead, no bars in the report
    assert prepare_sweep(dataclasses.replace(args, progress=True)).progress is True


def test_notebook_tables_go_through_the_readable_formatter() -> None:
    import pandas as pd

    from workbench.studies._notebook import _narrow_html

    frame = pd.DataFrame({"mean_per_request_tok_s": [1.23456], "n": [3]})
    page = _narrow_html(frame)
    assert "<th>mean per request (tok/s)</th>" in page and "<td>1.23</td>" in page and "<table" in page
    assert "<th>0</th>" not in page  # no row numbers
    assert frame["mean_per_request_tok_s"].iloc[0] == 1.23456  # the frame is left as it is


def test_a_time_scale_the_simulator_cannot_keep_is_refused_and_a_distorted_level_marked(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="time scale 1000 is above 20, the most the simulated engine keeps schedule"):
        benchmark_variant("baseline", time_scale=1000.0, runs_dir=tmp_path)
    assert not list(tmp_path.iterdir())
    # at 20x, 1-token requests of a 1-word prompt at concurrency 1: each request's few ms of HTTP count 20 times over a
    # short E2E (with 2 tokens of the shipped prompts
    # the share measured 4.75% on a quiet fresh clone, under the 5% bound: E2E 259 ms, 12.3 ms outside)
    run = load_run(
        benchmark_variant(
            "baseline",
            concurrency_levels=[1],
            requests_per_level=4,
            runs_dir=tmp_path,
            prompt_set=["Hi"],
            **{**FAST, "max_new_tokens": 1},
        )
    )
    [problem] = run.levels["sim_schedule_problem"]
    measured = run.levels[["mean_e2e_over_server_ms", "mean_e2e_ms", "sim_behind_schedule_wall_s", "duration_s"]]
    assert problem and "of the mean E2E was spent outside the server (bound 5%" in problem, measured.to_dict("records")
    study = load_study([run.path])
    from workbench.studies._study_verdict import _time_scale_text

    assert "**Timings not the model's** in 1 of 1 level measurements (baseline at concurrency 1)" in _time_scale_text(
        study.tables
    )


def test_bench_on_the_simulator_runs_the_notebooks_pre_flight_before_any_run(tmp_path: Path) -> None:
    import dataclasses

    from workbench.variants import load_variant

    base = load_variant("baseline")
    refused = dataclasses.replace(base, name="refused-flag", flags={**base.flags, "no-such-flag": 1})
    with pytest.raises(
        ConfigError,
        match=r"Pre-flight checks of variant 'refused-flag' .*\(sim\).*nothing was "
        r"launched:\n.*`--no-such-flag` is not a flag of SGLang 0\.5\.9",
    ):
        benchmark_variants(["baseline", refused], runs_dir=tmp_path, concurrency_levels=[1], **FAST)
    v2 = load_variant("eagle3-topk1-v2")
    topk4 = dataclasses.replace(v2, name="v2-topk4", flags={**v2.flags, "speculative-eagle-topk": 4})
    with pytest.raises(ConfigError, match="Pre-flight checks of variant 'v2-topk4'"):
        benchmark_variant(topk4, runs_dir=tmp_path, concurrency_levels=[1], **FAST)
    assert not list(tmp_path.iterdir())  # nothing launched, no empty run


def test_the_options_record_is_exactly_benchmark_variants_parameters() -> None:
    """One place states the parameters and their defaults (benchmark_variant's signature); the typed record that
    the validation step reads has a field for each, of the same name, and nothing else."""
    from workbench.sweeps._investigation import _options
    from workbench.sweeps._options import SweepOptions

    assert [f.name for f in dataclasses.fields(SweepOptions)] == list(inspect.signature(benchmark_variant).parameters)
    options = _options("baseline", {"concurrency_levels": [1, 2]})
    assert options.concurrency_levels == [1, 2] and options.host == "local" and options.fresh is False
    with pytest.raises(ConfigError, match="no_such_option"):
        _options("baseline", {"no_such_option": 1})


class _ExitingServer:
    """A server sent SIGTERM just before its level ended: it no longer answers, its process is still exiting
    (alive for the first ``alive_reads`` reads), and its log ends with its shutdown line."""

    def __init__(self, alive_reads: int) -> None:
        self.alive_reads = alive_reads
        self.process = type("Process", (), {"pid": 4242})()
        self.launch_text = "python -m workbench.sim --port 30000"

    @property
    def alive(self) -> bool:
        self.alive_reads -= 1
        return self.alive_reads >= 0

    def server_info(self) -> dict:
        from workbench.errors import ServerError

        raise ServerError("Server 'baseline' at http://127.0.0.1:30000 does not answer: Connection refused")

    def logs_tail(self, lines: int = 60) -> str:
        return "INFO: Decode batch. #running-req: 2\nINFO: Shutting down\n"


class _RunDouble:
    """What a run writer is told: the levels stored and the levels kept apart as failed."""

    path = Path("/runs/20260101T000000Z-baseline-abcdef")

    def __init__(self) -> None:
        self.saved: list = []
        self.failed: list = []

    def save_level(self, level) -> None:  # noqa: ANN001
        self.saved.append(level)

    def save_failed_level(self, level, failure) -> None:  # noqa: ANN001
        self.failed.append((level, failure))


def test_a_level_whose_server_is_still_exiting_after_sigterm_is_failed_not_stored() -> None:
    # The race behind "4 of 16 done, 12 failed, stored as complete": SIGTERM closes the server's port at once,
    # the level's last requests fail in a moment, and its process is still exiting when the level is judged.
    import pandas as pd

    from workbench.bench import SweepPlan
    from workbench.sweeps._sweep_levels import _LevelKeeper

    plan = SweepPlan.build(concurrency_levels=[1, 4], requests_per_level=16, prompt_set=["a prompt"])
    requests = pd.DataFrame({"error": [None] * 4 + ["Cannot connect to host 127.0.0.1:30000"] * 12})
    level = type("Level", (), {"unit": (0, 1), "repeat": 0, "index": 1, "requests": requests})()
    run = _RunDouble()
    keeper = _LevelKeeper(run, _ExitingServer(alive_reads=2), variant="baseline", plan=plan)
    with pytest.raises(BenchmarkError) as err:
        keeper(level)
    assert run.saved == []
    ((kept, failure),) = run.failed
    assert kept is level and failure["server_alive"] is False and failure["server_serving"] is False
    assert failure["kind"] == "killed" and failure["evidence"] == "INFO: Shutting down"
    assert "`workbench servers --stop`" in failure["suggestion"]
    assert "died during concurrency=4 (12 of 16 requests failed)" in str(err.value)
    assert err.value.kind == "killed" and "running the same sweep again resumes it" in str(err.value)


def test_a_level_with_some_failed_requests_is_stored_while_its_server_still_answers() -> None:
    import pandas as pd

    from workbench.bench import SweepPlan
    from workbench.sweeps._sweep_levels import _LevelKeeper

    class Answering(_ExitingServer):
        def server_info(self) -> dict:
            return {"version": "0.5.9"}

    plan = SweepPlan.build(concurrency_levels=[1, 4], requests_per_level=16, prompt_set=["a prompt"])
    requests = pd.DataFrame({"error": [None] * 15 + ["HTTP 400 Bad Request: prompt too long"]})
    level = type("Level", (), {"unit": (0, 1), "repeat": 0, "index": 1, "requests": requests})()
    run = _RunDouble()
    _LevelKeeper(run, Answering(alive_reads=5), variant="baseline", plan=plan)(level)
    assert run.saved == [level] and run.failed == []
