"""The load generator on the GPU host (workbench.bench._onhost) through a real sshd, against the simulated
engine launched through SSH: benchmark_variant with the client on the host and through the tunnel, a dropped
connection mid-sweep, a host Python without pandas; and the same code path on the local host."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import pandas as pd
import pytest
from blocked_imports import blocking_python
from sshd_fixture import SSHD, sshd  # noqa: F401  (pytest fixture)

from workbench.bench._onhost import read_host_sweep, run_sweep_on_host, start_host_sweep
from workbench.bench._plan import SweepPlan
from workbench.bench._prompts import Prompt
from doubles.scripted_server import ScriptedServer, StreamScript
from workbench.bench._sweep import run_sweep
from workbench.errors import BenchmarkError, ConfigError, HostError
from workbench.errors import ConnectionLost
from workbench.hosts import LocalHost, SSHHost
from workbench import benchmark_variant
from workbench.servers import ServerHandle
from workbench.variants import load_variant
from workbench.store import load_run

PY = sys.executable  # the SSH host is this machine; its python has the simulator's dependencies
SPEC = "eagle3-topk4"
PROMPTS = [Prompt(f"p{i}", "coding", f"prompt {i}") for i in range(3)]


@pytest.fixture
def on_ssh_host(sshd: SSHD, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> SSHD:  # noqa: F811
    """benchmark_variant(host=<alias>) resolves the test alias and uses this interpreter there."""
    monkeypatch.setenv("WORKBENCH_SSH_CONFIG", str(sshd.config_file))
    monkeypatch.setenv("WORKBENCH_REMOTE_PYTHON", PY)
    monkeypatch.setenv("WORKBENCH_SERVERS_DIR", str(tmp_path / "servers"))
    monkeypatch.setenv("WORKBENCH_SWEEPS_DIR", str(tmp_path / "sweeps"))
    return sshd


def test_benchmark_variant_with_the_client_on_the_host_and_through_the_tunnel(
    on_ssh_host: SSHD, tmp_path: Path
) -> None:
    args = dict(
        host=on_ssh_host.alias,
        engine="sim",
        concurrency_levels=[1, 4],
        requests_per_level=8,
        max_new_tokens=32,
        time_scale=10.0,
        runs_dir=tmp_path / "runs",
        progress=False,
    )
    on_host = load_run(benchmark_variant(SPEC, **args))  # client="host" is the default on an SSH host
    tunnel = load_run(benchmark_variant(SPEC, client="local", **args))
    assert on_host.manifest["client_location"] == f"host:{on_ssh_host.alias}"
    assert tunnel.manifest["client_location"] == "local (tunnel)"
    client = on_host.manifest["client"]
    assert client["results_path"].startswith(str(tmp_path / "sweeps")) and Path(client["results_path"]).is_file()
    for run in (on_host, tunnel):
        m, req, lev = run.manifest, run.requests, run.levels
        assert m["status"] == "complete" and m["levels_completed"] == 2 and m["num_requests"] == 16
        assert list(lev["concurrency"]) == [1, 4] and list(lev["completed"]) == [8, 8]
        assert req["error"].isna().all() and (req["output_tokens"] == 32).all()
        assert req["simulated"].all() and set(req["time_scale"]) == {10.0}
        # engine-time milliseconds of a simulated 70B model on 8 GPUs: tens to hundreds
        assert req["ttft_ms"].between(10, 5000).all() and (req["e2e_ms"] >= req["ttft_ms"]).all()
        assert (req["tpot_ms"] >= 0).all() and (req["num_chunks"] > 1).all()
        # one gap per pair of content reads (chunks sharing a read give none)
        assert all(len(itl) == n - 1 for itl, n in zip(req["itl_ms"], req["num_reads"]))
        assert (req["num_chunks"] == [sum(c) for c in req["chunks_per_read"]]).all()
        assert lev["accept_length"].between(1.5, 5).all() and lev["server_accept_length"].between(1.5, 5).all()
    # Next to the server, every stream arrives chunk by chunk. Through the tunnel (time_scale 10 magnifies each
    # wall millisecond the SSH relay adds in this process tenfold) chunks may arrive bunched, so no such check there.
    # (the median request: at a load of 19 on 2 cores one request of 16 had all its chunks bunched into one read,
    # TPOT 0, in loaded run 3 of 2026-12-02; a level's worth of requests is not bunched by a burst)
    assert 2 <= on_host.requests["tpot_ms"].median() <= 200 and on_host.levels["mean_itl_ms"].between(5, 500).all()
    assert list(on_host.requests.columns) == list(tunnel.requests.columns)
    assert list(on_host.levels.columns) == list(tunnel.levels.columns)
    assert (on_host.requests.dtypes == tunnel.requests.dtypes).all()


def test_dropped_connection_mid_sweep_loses_nothing_and_the_host_needs_no_pandas(
    sshd: SSHD,  # noqa: F811
    tmp_path: Path,
) -> None:
    no_pandas = blocking_python(tmp_path)  # the runner's (and its status helper's) Python on the host
    server = ServerHandle.start(
        load_variant(SPEC),
        host=sshd.alias,
        config_file=sshd.config_file,
        engine="sim",
        python=PY,
        state_dir=str(tmp_path / "servers"),
        sim_options={"time-scale": 2, "seed": 5},
    )
    host = SSHHost(sshd.alias, config_file=sshd.config_file)  # its own connection, to drop
    dropped: dict[str, object] = {}
    seen: list[int] = []

    def drop_after_first_level(level) -> None:
        seen.append(len(level.requests))
        if not dropped:
            first = host._conn
            first.transport.close()  # the connection dies while level 2 runs on the host
            dropped["at"], dropped["conn"] = time.time(), first

    try:
        with server:
            plan = SweepPlan.build(
                concurrency_levels=[1, 4],
                requests_per_level=lambda c: 2 if c == 1 else 16,
                max_new_tokens=32,
                time_scale="auto",
                warmup_requests=1,
            )
            sweep = start_host_sweep(
                host, server.port, plan, python=str(no_pandas), sweeps_dir=str(tmp_path / "sweeps")
            )
            result = sweep.follow(on_level=drop_after_first_level, progress=False, poll_s=0.1)
            reconnected = host._conn is not None and host._conn is not dropped["conn"] and host.connected
            again = read_host_sweep(host, sweep.results_path)  # pulled back in one read, later
    finally:
        host.close()
    assert seen == [2, 16] and reconnected
    req = result.requests
    assert list(result.levels["completed"]) == [2, 16] and req["error"].isna().all()
    # the runner kept measuring while the connection was down: level 2 requests ended after the drop
    assert req.loc[req["level_index"] == 1, "end_epoch_s"].max() > dropped["at"]
    for name in ("requests", "levels", "level_info", "warmup"):
        pd.testing.assert_frame_equal(getattr(result, name), getattr(again, name))
    log = Path(sweep.log_path).read_text()
    assert log.count("[workbench sweep] pid ") == 1 and "finished" in log, log  # one runner, never restarted
    assert "Traceback" not in log
    assert result.base_url == f"http://127.0.0.1:{server.port}" and result.plan == plan
    assert result.time_scale == 2.0 and set(req["time_scale"]) == {2.0}


def test_on_the_local_host_the_runner_gives_run_sweeps_tables(tmp_path: Path) -> None:
    script = StreamScript(first_delay_s=0.003, chunk_tokens=(1, 2, 2), gap_s=0.002, spec_verify_ct=3)
    plan = SweepPlan.build(
        concurrency_levels=[1, 2], requests_per_level=3, max_new_tokens=5, prompt_set=PROMPTS, seed=4
    )
    with ScriptedServer(script) as srv:
        port = int(srv.url.rsplit(":", 1)[1])
        levels = []
        remote = run_sweep_on_host(
            "local",
            port,
            plan,
            on_level=levels.append,
            progress=False,
            poll_s=0.05,
            sweeps_dir=str(tmp_path / "sweeps"),
        )
        local = run_sweep(srv.url, plan, progress=False)
    assert [len(lvl.requests) for lvl in levels] == [3, 3]
    timing = [
        "ttft_ms",
        "e2e_ms",
        "tpot_ms",
        "itl_ms",
        "client_wait_ms",
        "user_ttft_ms",
        "user_e2e_ms",
        "start_epoch_s",
        "end_epoch_s",
        "start_s",
        "end_s",
        "chunks_per_read",
        "tokens_per_read",
        "num_reads",
        "kernel_stamped_reads",
    ]
    for a, b in ((remote.requests, local.requests), (remote.warmup, local.warmup)):
        assert list(a.columns) == list(b.columns) and (a.dtypes == b.dtypes).all()
        pd.testing.assert_frame_equal(a.drop(columns=timing + ["rid"]), b.drop(columns=timing + ["rid"]))
    assert list(remote.levels.columns) == list(local.levels.columns)
    assert remote.plan == local.plan == plan and remote.base_url == local.base_url
    assert remote.time_scale == local.time_scale
    (sweep_dir,) = (tmp_path / "sweeps").iterdir()
    assert {p.name for p in sweep_dir.iterdir()} == {"plan.json", "results.jsonl", "runner.log"}


def test_runner_failures_surface_as_the_workbench_errors(tmp_path: Path) -> None:
    sim_info = {"simulation": {"engine": "sim", "time_scale": 4.0}}
    slow = StreamScript(first_delay_s=0.01, chunk_tokens=(1,) * 10, gap_s=0.05)  # 0.5 s a request
    with ScriptedServer(slow, server_info=sim_info) as srv:
        port = int(srv.url.rsplit(":", 1)[1])
        common = dict(concurrency_levels=[1, 2], requests_per_level=2, max_new_tokens=10, prompt_set=PROMPTS)
        sweeps_dir = str(tmp_path / "sweeps")
        with pytest.raises(ConfigError, match="time_scale=4.0"):
            run_sweep_on_host(
                "local",
                port,
                SweepPlan.build(time_scale=1.0, **common),
                progress=False,
                poll_s=0.05,
                sweeps_dir=sweeps_dir,
            )
        # an on_level that raises stops the runner on the host
        sweep = start_host_sweep(
            "local", port, SweepPlan.build(time_scale="auto", warmup_requests=0, **common), sweeps_dir=sweeps_dir
        )

        def stop_here(level) -> None:
            raise RuntimeError("stop after the first level")

        with pytest.raises(RuntimeError, match="stop after"):
            sweep.follow(on_level=stop_here, progress=False, poll_s=0.05)
        assert not sweep.alive
        lines = Path(sweep.results_path).read_text().splitlines()
        assert json.loads(lines[-1])["error_type"] == "Stopped"
    assert isinstance(sweep.host, LocalHost)


def test_a_host_python_without_aiohttp_is_reported_with_the_runner_log(tmp_path: Path) -> None:
    no_aiohttp = blocking_python(tmp_path, ("aiohttp",))
    with pytest.raises((HostError, BenchmarkError)) as err:
        run_sweep_on_host(
            "local",
            9,
            SweepPlan.build(concurrency_levels=[1], requests_per_level=1, prompt_set=PROMPTS),
            python=str(no_aiohttp),
            progress=False,
            poll_s=0.05,
            sweeps_dir=str(tmp_path / "sweeps"),
        )
    assert "aiohttp is blocked here" in str(err.value) and "runner.log" in str(err.value)


class FlakyHost(LocalHost):
    """This machine, but the next ``fail`` commands raise ConnectionLost (as over a dropped SSH connection)."""

    def __init__(self) -> None:
        super().__init__()
        self.fail = 0
        self.failed = 0

    def _execute(self, command: str, *, timeout_s: float | None, stdin: bytes | None):
        if self.fail:
            self.fail -= 1
            self.failed += 1
            raise ConnectionLost(f"Connection to host {self.name} dropped while `{command[:40]}` was running")
        return super()._execute(command, timeout_s=timeout_s, stdin=stdin)


def test_following_retries_a_lost_connection_then_gives_up_leaving_the_runner(tmp_path: Path) -> None:
    script = StreamScript(first_delay_s=0.01, chunk_tokens=(1, 1), gap_s=0.1)  # 0.1 s a request
    plan = SweepPlan.build(concurrency_levels=[1, 2], requests_per_level=3, max_new_tokens=2, prompt_set=PROMPTS)
    sweeps_dir = str(tmp_path / "sweeps")
    with ScriptedServer(script) as srv:
        port = int(srv.url.rsplit(":", 1)[1])
        host = FlakyHost()

        def drop_three_polls(level) -> None:
            if level.info["level_index"].iloc[0] == 0:
                host.fail = 3

        result = run_sweep_on_host(
            host, port, plan, on_level=drop_three_polls, progress=False, poll_s=0.02, sweeps_dir=sweeps_dir
        )
        assert host.failed == 3 and list(result.levels["completed"]) == [3, 3]

        sweep = start_host_sweep(host, port, plan, sweeps_dir=sweeps_dir)
        host.fail = 10**6  # the host is gone for good
        with pytest.raises(HostError, match="read_host_sweep") as err:
            sweep.follow(progress=False, poll_s=0.02, reconnect_for_s=0.2)
        assert "keeps measuring on its own" in str(err.value)
        host.fail = 0
        assert sweep.alive  # left running; it finishes on its own and its results can be read later
        deadline = time.monotonic() + 30
        while sweep.alive:
            assert time.monotonic() < deadline
            time.sleep(0.05)
    later = read_host_sweep(host, sweep.results_path)
    assert list(later.levels["completed"]) == [3, 3]


def test_benchmark_variant_client_choice_on_the_local_host(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WORKBENCH_SWEEPS_DIR", str(tmp_path / "sweeps"))
    with pytest.raises(ConfigError, match="client must be 'host' or 'local'"):
        benchmark_variant("baseline", client="laptop", runs_dir=tmp_path)  # type: ignore[arg-type]
    run = load_run(
        benchmark_variant(
            "baseline",
            client="host",
            concurrency_levels=[1],
            requests_per_level=2,
            max_new_tokens=8,
            time_scale=20.0,
            runs_dir=tmp_path,
            progress=False,
        )
    )
    assert run.manifest["client_location"] == "host:local" and run.manifest["status"] == "complete"
    assert list(run.levels["completed"]) == [2] and Path(run.manifest["client"]["log_path"]).is_file()
    assert run.manifest["client"]["results_path"].startswith(str(tmp_path / "sweeps"))
