"""Faults and bad inputs, each ending with a message that names the problem, nothing lost, nothing running.

Real parts throughout: the simulated engine as a real HTTP server (at a high time scale, tiny
plans), a real sshd on 127.0.0.1 that is killed and restarted, a real size-limited tmpfs, a real
TCP proxy that drops idle connections, a real Python without aiohttp. Each test checks the
process table (the server's process group, anything started under the test's folders) and
``workbench servers`` (its registry, isolated per test).
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pandas as pd
import pytest
from blocked_imports import blocking_python
from server_killer import ServerKiller, kill_when_stored, running_under
from sshd_fixture import SSHD_BINARY, running_sshd
from typer.testing import CliRunner

from workbench.bench import SweepPlan, run_sweep
from workbench.cli import app
from workbench.engines import get_engine
from workbench.errors import ConfigError, DiskFullError, HostAuthError, HostError, HostUnreachable
from workbench.errors import ServerStartError
from workbench.hosts import LocalHost
from workbench.hosts import _processes as processes
from workbench.hosts._sshconfig import connection_chain, load_config
from workbench.hosts._sshconnect import open_connection
from workbench.servers import ServerHandle
from workbench.store import list_runs, load_run
from workbench.variants import load_variant
from workbench import benchmark_variant, benchmark_variants, load_study

FAST = dict(max_new_tokens=16, time_scale=20.0, progress=False, repeats=1)


@pytest.fixture(autouse=True)
def isolated_state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Each test's own server registry and host-side sweeps folder (so `workbench servers` shows only its own)."""
    monkeypatch.setenv("WORKBENCH_SERVERS_DIR", str(tmp_path / "servers"))
    monkeypatch.setenv("WORKBENCH_SWEEPS_DIR", str(tmp_path / "sweeps"))
    return tmp_path


def assert_nothing_running(tmp_path: Path, *pgids: int, wait_s: float = 10.0) -> None:
    """No process group of ``pgids``, nothing started under ``tmp_path``, and `workbench servers` lists none."""
    deadline = time.monotonic() + wait_s
    while True:
        left = [p for p in pgids if processes.group_members(LocalHost(), p)] or running_under(tmp_path)
        if not left or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    assert not left, f"still running: {left}"
    out = CliRunner().invoke(app, ["servers"])
    assert out.exit_code == 0 and "no workbench servers on host local" in out.output.lower(), out.output


def _manifests(root: Path) -> list[dict]:
    return [json.loads(p.read_text()) for p in sorted(root.glob("*/manifest.json"))]


# -- bad input: refused before anything is launched, exit status 2 ----------------------------------------------


BAD_PLANS = [
    (dict(concurrency_levels=[8], requests_per_level=2), "requests_per_level 2 is below concurrency 8"),
    (dict(concurrency_levels=[1, 4], requests_per_level=lambda c: 3), "concurrency=4 with 3"),
    (dict(concurrency_levels=[1.5]), "concurrency_levels must be whole numbers"),
    (dict(concurrency_levels="abc"), "concurrency_levels must be a list, e.g. [1, 2, 4]; got 'abc'"),
    (dict(concurrency_levels=4), "concurrency_levels must be a list"),
    (dict(concurrency_levels=["abc"]), "got 'abc'"),
    (dict(concurrency_levels=[1], requests_per_level="8"), "requests_per_level must be a whole number"),
]


@pytest.mark.parametrize("kwargs, message", BAD_PLANS, ids=[m[:30] for _, m in BAD_PLANS])
def test_a_bad_plan_is_refused_before_any_server_starts(tmp_path: Path, kwargs: dict, message: str) -> None:
    with pytest.raises(ConfigError) as err:
        benchmark_variants(["baseline"], runs_dir=tmp_path / "runs", **{**FAST, **kwargs})
    assert message in str(err.value)
    assert not (tmp_path / "runs").exists()  # no run directory, failed or empty
    assert_nothing_running(tmp_path)


def test_a_bad_prompt_file_is_refused_before_any_server_starts(tmp_path: Path) -> None:
    prompts = tmp_path / "prompts.jsonl"
    prompts.write_text("".join(f'{{"id": "{i}", "category": "coding", "text": "x"}}\n' for i in "ab") + "{not json\n")
    with pytest.raises(ConfigError, match=r"prompts.jsonl:3: not valid JSON"):
        benchmark_variants(["baseline"], prompt_set=prompts, runs_dir=tmp_path / "runs", **FAST)
    assert not (tmp_path / "runs").exists()


@pytest.mark.parametrize("levels", ["1.5", "abc", "8"])
def test_the_cli_exits_2_for_bad_levels_naming_the_parameter(tmp_path: Path, levels: str) -> None:
    out = CliRunner().invoke(
        app,
        [
            "bench",
            "baseline",
            "--levels",
            levels,
            "--requests",
            "2",
            "--runs-dir",
            str(tmp_path / "runs"),
            "--no-progress",
        ],
    )
    assert out.exit_code == 2, out.output
    assert "--levels" in out.output or "requests_per_level 2 is below concurrency 8" in out.output
    assert "Traceback" not in out.output and not (tmp_path / "runs").exists()


def test_report_exits_2_when_the_notebook_refuses_its_parameters(tmp_path: Path, write_notebook) -> None:
    nb = write_notebook(
        tmp_path / "sweep.ipynb",
        setup=["from workbench.bench import SweepPlan"],
        parameters="concurrency_levels = [1, 2]  # requests in flight",
        cells=["SweepPlan.build(concurrency_levels=concurrency_levels, prompt_set=['x'])"],
    )
    bad = CliRunner().invoke(
        app, ["report", str(nb), "-p", "concurrency_levels", "[1.5]", "--out", str(tmp_path / "out")]
    )
    assert bad.exit_code == 2, bad.output
    assert "ConfigError: concurrency_levels must be whole numbers" in bad.output and "Traceback" not in bad.output


# -- runs the catalogue cannot read, variants that cannot launch as written ----------------------------------------


def test_a_run_without_manifest_is_listed_as_broken_and_its_error_does_not_send_you_back(tmp_path: Path) -> None:
    run = benchmark_variant("baseline", concurrency_levels=[1], requests_per_level=2, runs_dir=tmp_path, **FAST)
    (run / "manifest.json").unlink()
    (tmp_path / "notes").mkdir()  # not a run: stays out of the listing
    listing = list_runs(tmp_path)
    assert list(listing["run_id"]) == [run.name] and list(listing["status"]) == ["broken"]
    assert "no manifest.json" in listing["problem"].iloc[0]
    with pytest.raises(ConfigError) as err:
        load_run(run)
    assert "has no manifest.json" in str(err.value) and "list_runs" not in str(err.value)
    assert "requests.parquet" in str(err.value)  # what is still there


def test_a_variant_that_sets_port_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "ported.toml"
    path.write_text('name = "ported"\nmodel_path = "m"\n[flags]\nport = 9000\ntp-size = 1\n')
    with pytest.raises(ConfigError, match="flag 'port' is set by the workbench"):
        load_variant(path)
    out = CliRunner().invoke(app, ["variants", "check", str(path)])
    assert out.exit_code != 0 and "flag 'port' is set by the workbench" in out.output


def test_cuda_graph_max_bs_on_0_5_23_is_named_removed_with_its_successor() -> None:
    from workbench.errors import SourceError
    from workbench.source import FlagError, server_flags

    try:
        table = server_flags("0.5.23")
    except SourceError as exc:
        pytest.skip(f"SGLang 0.5.23's wheel is not reachable here: {exc}")
    with pytest.raises(FlagError) as err:
        table.match("--cuda-graph-max-bs")
    assert "was removed in SGLang 0.5.20" in str(err.value) and err.value.fix == "--cuda-graph-max-bs-decode"


def test_speculation_preflight_names_dp_attention_hybrid_backends_and_mla_topk() -> None:
    from workbench.variants._validate import _spec_backends

    v = load_variant("eagle3-topk4")
    checks = {
        f.check
        for f in _spec_backends(
            v, {"enable_dp_attention": True, "attention_backend": "flashinfer", "prefill_attention_backend": "fa3"}, 4
        )
    }
    assert checks == {"spec-dp-attention", "spec-hybrid-backend"}
    assert {f.check for f in _spec_backends(v, {"attention_backend": "trtllm_mla"}, 4)} == {"spec-mla-topk"}
    assert _spec_backends(v, {"attention_backend": "trtllm_mla"}, 1) == []


def test_cuda_graph_limit_below_the_planned_concurrency_is_warned_before_launch(tmp_path: Path) -> None:
    from workbench.sweeps._sweep_prep import _warn_graph_below_concurrency

    path = tmp_path / "small-graphs.toml"
    base = load_variant("eagle3-topk4").path.read_text()
    path.write_text(base.replace("[flags]", "[flags]\ncuda-graph-max-bs = 2", 1))
    plan = SweepPlan.build(concurrency_levels=[1, 2, 4], requests_per_level=4, prompt_set=["x"])
    with pytest.warns(UserWarning, match=r"--cuda-graph-max-bs 2 is below the sweep's concurrency \[4\]"):
        _warn_graph_below_concurrency(load_variant(path), plan)


# -- SSH: names what is wrong with the config ---------------------------------------------------------------


def test_an_alias_missing_from_the_ssh_config_is_named_with_the_files_read(tmp_path: Path) -> None:
    config = tmp_path / "ssh_config"
    config.write_text("Host gpu-box\n    HostName 127.0.0.1\n")
    chain = connection_chain("gpu-bxo", config=load_config(config))
    with pytest.raises(HostUnreachable) as err:
        open_connection(chain, known_hosts=None, trust_on_first_use=False, connect_timeout_s=5, keepalive_s=0)
    assert "'gpu-bxo' is not in your ssh config" in str(err.value) and str(config) in str(err.value)


def test_a_missing_identity_file_is_reported_as_that(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SSH_AUTH_SOCK", raising=False)
    with running_sshd(tmp_path / "sshd") as sshd:
        config = sshd.write_config("missing_key", {"nokey": sshd.options(IdentityFile=str(tmp_path / "id_gone"))})
        with pytest.raises(HostAuthError) as err:
            open_connection(
                connection_chain("nokey", config=load_config(config)),
                known_hosts=None,
                trust_on_first_use=False,
                connect_timeout_s=10,
                keepalive_s=0,
            )
    assert f"IdentityFile {tmp_path / 'id_gone'}" in str(err.value) and "does not exist" in str(err.value)


# -- a server killed, never ready, or unable to start ----------------------------------------------------------


def test_a_server_killed_mid_level_fails_that_level_only_and_the_next_variant_runs(tmp_path: Path) -> None:
    # kill -9 the eagle3 server's group once its first level is stored: level 2 has started, requests in flight
    killer = ServerKiller(
        tmp_path / "runs", lambda m: m["variant"] == "eagle3-topk4" and m.get("levels_completed", 0) >= 1, delay_s=0.05
    )
    failures = []
    with pytest.warns(UserWarning, match="eagle3-topk4: server failed"):
        paths = benchmark_variants(
            ["eagle3-topk4", "baseline"],
            concurrency_levels=[1, 2, 4],
            requests_per_level=4,
            runs_dir=tmp_path / "runs",
            on_failure=failures.append,
            **{**FAST, "max_new_tokens": 64, "time_scale": 8.0},
        )
    killer.join()
    (failure,) = failures
    assert failure.kind == "killed" and "died during concurrency=2" in failure.message
    assert "kill -9" in failure.message and "running the same sweep again resumes it" in failure.message
    spec = load_run(paths[0])
    assert spec.manifest["status"] == "failed" and spec.manifest["units_completed"] == [[0, 0]]
    (cut,) = spec.manifest["failed_levels"]
    assert cut["level_index"] == 1 and cut["server_alive"] is False and cut["kind"] == "killed"
    assert cut["exit_signal"].startswith("unknown") and cut["completed"] + cut["failed"] == 4 and cut["failed"] > 0
    cut_rows = pd.read_parquet(paths[0] / "failed_levels.parquet")
    assert len(cut_rows) == 4 and set(cut_rows["level_index"]) == {1}  # kept, apart
    assert list(spec.levels["concurrency"]) == [1]  # level 2 is not charted; level 3 was never run
    assert 2 not in set(cut_rows["level_index"]) and 2 not in set(spec.requests["level_index"])
    assert load_run(paths[1]).manifest["status"] == "complete"
    study = load_study(paths, baseline="baseline")
    assert set(study.levels[study.levels["variant"] == "eagle3-topk4"]["concurrency"]) == {1}
    assert_nothing_running(tmp_path, killer.pgid)


class NeverReady(type(get_engine("sim"))):  # type: ignore[misc]
    """The simulated engine, but its server loads forever and never answers."""

    def launch_argv(self, variant, *, python, port, options=None):  # noqa: ANN001, ANN201
        return [python, "-c", "import time; print('Load weight begin.', flush=True); time.sleep(600)"]


def test_a_server_that_never_becomes_ready_is_stopped_and_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("WORKBENCH_READY_TIMEOUT_S", "2")
    failures = []
    with pytest.warns(UserWarning, match="baseline: server failed \\(timeout\\)"):
        (path,) = benchmark_variants(
            ["baseline"],
            engine=NeverReady(),
            concurrency_levels=[1],
            requests_per_level=2,
            runs_dir=tmp_path / "runs",
            on_failure=failures.append,
            **FAST,
        )
    assert failures[0].kind == "timeout" and "ready timeout" in failures[0].message
    assert load_run(path).manifest["status"] == "failed"
    assert_nothing_running(tmp_path)


def test_a_host_python_without_aiohttp_is_named(tmp_path: Path) -> None:
    python = blocking_python(tmp_path, ("aiohttp",))
    with pytest.raises(ServerStartError) as err:
        ServerHandle.start(
            load_variant("baseline"), python=str(python), ready_timeout_s=30, sim_options={"time-scale": 20.0}
        )
    assert err.value.kind == "import_error" and "aiohttp is blocked here" in str(err.value) + err.value.log_tail
    assert_nothing_running(tmp_path)


# -- the workbench killed, the disk full, an idle-dropping network --------------------------------------------


KILLABLE = textwrap.dedent("""
    import sys
    from workbench import benchmark_variant
    benchmark_variant("baseline", concurrency_levels=[1, 2, 4], repeats=1, runs_dir=sys.argv[1], max_new_tokens=32,
                      time_scale=4.0, progress=False, requests_per_level=4)
""")


def test_the_workbench_killed_9_then_rerun_resumes_without_duplicates_or_servers_left(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    proc = subprocess.Popen(
        [sys.executable, "-c", KILLABLE, str(runs)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env=os.environ.copy(),
    )
    killed = kill_when_stored(proc, runs, 1)
    assert_nothing_running(tmp_path, killed["server_process"]["pgid"])  # its watchdog saw the owner die
    assert list(list_runs(runs)["status"]) == ["interrupted"]
    path = benchmark_variant(
        "baseline",
        concurrency_levels=[1, 2, 4],
        repeats=1,
        runs_dir=runs,
        max_new_tokens=32,
        time_scale=4.0,
        progress=False,
        requests_per_level=4,
    )
    run = load_run(path)
    assert run.manifest["status"] == "complete" and list(run.levels["concurrency"]) == [1, 2, 4]
    assert not run.requests.duplicated(["repeat", "level_index", "request_index"]).any()
    assert len(run.requests) == 12 and list(list_runs(runs)["status"]) == ["complete"]
    assert_nothing_running(tmp_path)


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A 4 MiB tmpfs (root only); skipped where it cannot be mounted."""
    mount = tmp_path / "small"
    mount.mkdir()
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", str(mount)], capture_output=True, text=True
    )
    if done.returncode != 0:
        pytest.skip(f"cannot mount a size-limited tmpfs here (needs root): {done.stderr.strip()}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], capture_output=True)


def test_a_full_disk_during_a_level_write_keeps_the_stored_levels_and_a_rerun_completes(
    tmp_path: Path, small_disk: Path
) -> None:
    filler = small_disk / "filler"

    def fill() -> None:  # once level 1 is stored, take every byte left
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not _manifests(small_disk):
            time.sleep(0.01)
        while time.monotonic() < deadline and _manifests(small_disk)[0].get("levels_completed", 0) < 1:
            time.sleep(0.01)
        with open(filler, "wb") as fh:
            try:
                while True:
                    fh.write(b"\0" * 65536)
            except OSError:
                pass

    thread = threading.Thread(target=fill, daemon=True)
    thread.start()
    args = dict(
        concurrency_levels=[1, 2, 4],
        requests_per_level=4,
        runs_dir=small_disk,
        max_new_tokens=64,
        time_scale=4.0,
        progress=False,
    )
    with pytest.raises(DiskFullError) as err:
        benchmark_variant("baseline", **args)
    thread.join(10)
    assert "No space left" in str(err.value) or "disk is full" in str(err.value).lower()
    (run_dir,) = [p.parent for p in small_disk.glob("*/manifest.json")]
    stored = load_run(run_dir)  # what was written before the disk filled is intact
    assert len(stored.levels) >= 1 and len(stored.requests) == 4 * len(stored.levels)
    assert_nothing_running(tmp_path)
    filler.unlink()
    run = load_run(benchmark_variant("baseline", **args))
    assert run.path == run_dir and run.manifest["status"] == "complete" and len(run.requests) == 12
    assert list(run.levels["concurrency"]) == [1, 2, 4]
    assert_nothing_running(tmp_path)


class IdleDroppingProxy:
    """A TCP proxy to ``target`` that closes both sides of a connection idle for ``idle_s`` seconds."""

    def __init__(self, target: int, idle_s: float) -> None:
        self.target, self.idle_s = target, idle_s
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.dropped = 0
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            upstream = socket.create_connection(("127.0.0.1", self.target))
            last = [time.monotonic()]
            for a, b in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pump, args=(a, b, last), daemon=True).start()

    def _pump(self, src: socket.socket, dst: socket.socket, last: list[float]) -> None:
        src.settimeout(0.05)
        while True:
            try:
                data = src.recv(65536)
            except socket.timeout:
                if time.monotonic() - last[0] > self.idle_s:
                    self.dropped += 1
                    break
                continue
            except OSError:
                break
            if not data:
                break
            last[0] = time.monotonic()
            try:
                dst.sendall(data)
            except OSError:
                break
        for s in (src, dst):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            s.close()

    def close(self) -> None:
        self.listener.close()


def test_an_idle_dropping_network_loses_no_request_silently(tmp_path: Path) -> None:
    plan = SweepPlan.build(
        concurrency_levels=[1, 2], requests_per_level=4, max_new_tokens=16, time_scale=20.0, prompt_set="default"
    )
    with ServerHandle.start(load_variant("baseline"), sim_options={"time-scale": 20.0}) as server:
        proxy = IdleDroppingProxy(server.port, idle_s=0.3)
        try:
            levels: list = []

            def slow_level(level) -> None:  # a pause between levels: the pooled connections go idle and are dropped
                levels.append(level)
                time.sleep(0.8)

            result = run_sweep(f"http://127.0.0.1:{proxy.port}", plan, progress=False, on_level=slow_level)
        finally:
            proxy.close()
        pgid = server.process.pgid
    assert proxy.dropped >= 1  # the network really dropped idle connections
    requests = pd.concat([lv.requests for lv in levels], ignore_index=True)
    assert len(requests) == 8 and len(result.requests) == 8  # every planned request has its row
    failed = requests[requests["error"].notna()]
    assert failed["error"].str.contains("disconnect|closed|reset|Connection", case=False).all(), failed["error"]
    assert_nothing_running(tmp_path, pgid)


# -- the SSH host going away mid-sweep ----------------------------------------------------------------------


def _kill_sshd_tree(proc: subprocess.Popen) -> None:
    """Kill the listening sshd and every session it forked (a host that drops off the network)."""
    children = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[-1].split()
            except OSError:
                continue
            if int(fields[1]) == proc.pid:
                children.append(int(entry.name))
    proc.kill()
    proc.wait(5)
    for pid in children:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def _restart_sshd(sshd) -> subprocess.Popen:
    log = open(sshd.log_file, "ab")
    proc = subprocess.Popen(
        [SSHD_BINARY, "-D", "-e", "-f", str(sshd.workdir / "sshd_config")],
        stdout=log,
        stderr=log,
        stdin=subprocess.DEVNULL,
    )
    sshd.proc = proc
    return proc


@pytest.mark.parametrize("outage", ["back after 5 s", "gone for good"])
def test_sshd_killed_mid_sweep(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, outage: str) -> None:
    monkeypatch.setenv("WORKBENCH_REMOTE_PYTHON", sys.executable)
    monkeypatch.setenv("WORKBENCH_RECONNECT_S", "60" if outage == "back after 5 s" else "3")
    pgid: dict[str, int] = {}
    restarted: list[subprocess.Popen] = []
    with running_sshd(tmp_path / "sshd") as sshd:
        monkeypatch.setenv("WORKBENCH_SSH_CONFIG", str(sshd.config_file))
        # four levels of ~0.4-0.8 s (each named once: a plan refuses a level twice): the host-side runner still has
        # work when the host drops after the first
        args = dict(
            host=sshd.alias,
            engine="sim",
            concurrency_levels=[1, 2, 3, 4],
            requests_per_level=8,
            max_new_tokens=32,
            time_scale=10.0,
            runs_dir=tmp_path / "runs",
            progress=False,
            repeats=1,
        )

        def outage_after_first_level() -> None:
            deadline = time.monotonic() + 90
            while time.monotonic() < deadline:
                found = _manifests(tmp_path / "runs")
                if found and found[0].get("levels_completed", 0) >= 1:
                    pgid["server"] = found[0]["server_process"]["pgid"]
                    _kill_sshd_tree(sshd.proc)
                    if outage == "back after 5 s":
                        time.sleep(5)
                        restarted.append(_restart_sshd(sshd))
                    return
                time.sleep(0.05)

        thread = threading.Thread(target=outage_after_first_level, daemon=True)
        thread.start()
        try:
            if outage == "back after 5 s":
                run = load_run(benchmark_variant("baseline", **args))
                thread.join(10)
                assert run.manifest["status"] == "complete" and list(run.levels["level_index"]) == [0, 1, 2, 3]
                assert len(run.requests) == 32 and run.requests["error"].isna().all()
            else:
                with pytest.raises(HostError) as err:
                    benchmark_variant("baseline", **args)
                thread.join(10)
                message = str(err.value)
                assert "Lost host 'wbtest'" in message and "read_host_sweep('wbtest'" in message
                assert "left after stop" not in message  # the failed stop did not replace the useful error
                (stored,) = _manifests(tmp_path / "runs")
                assert stored["status"] == "failed" and stored["levels_completed"] >= 1  # what was read is kept
                # the host comes back: the same sweep resumes and stops the server the outage left there
                restarted.append(_restart_sshd(sshd))
                time.sleep(0.5)
                run = load_run(benchmark_variant("baseline", **args))
                assert run.manifest["status"] == "complete" and len(run.requests) == 32
        finally:
            thread.join(15)  # a sweep that failed early must not leave the thread to restart an sshd after us
            for proc in restarted:
                _kill_sshd_tree(proc)
    assert_nothing_running(tmp_path, pgid["server"], wait_s=15)


def test_a_refused_host_key_stops_a_sweep_before_any_run_is_opened(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with running_sshd(tmp_path / "sshd") as sshd:
        unknown = tmp_path / "empty_known_hosts"
        unknown.write_text("")
        config = tmp_path / "ssh_config"
        config.write_text(sshd.config_file.read_text().replace(str(sshd.known_hosts), str(unknown)))
        monkeypatch.setenv("WORKBENCH_SSH_CONFIG", str(config))
        with pytest.raises(
            ConfigError,
            match=r"(?s)Pre-flight checks of variant 'baseline' for host 'wbtest'.*"
            r"nothing was launched.*the host refused the connection",
        ):
            benchmark_variant(
                "baseline", host=sshd.alias, engine="sim", concurrency_levels=[1], runs_dir=tmp_path / "runs", **FAST
            )
        assert unknown.read_text() == ""  # never recorded silently
    assert not (tmp_path / "runs").exists() or not list((tmp_path / "runs").iterdir())  # no empty failed run
