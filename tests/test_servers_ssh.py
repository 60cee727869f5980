"""Server lifecycle through a real sshd: the simulated engine started on an SSH host (the workbench package
uploaded there), ready and queried through the tunnel, classified failures, the host-side registry and
`workbench servers`, the lease watchdog, attach, log streaming, and servers side by side on disjoint GPUs."""

from __future__ import annotations

import io
import json
import os
import sys
import time
import urllib.request
from pathlib import Path

import pytest
from sshd_fixture import SSHD, sshd  # noqa: F401  (pytest fixture)
from typer.testing import CliRunner

from workbench.cli import app
from workbench.engines import get_engine
from workbench.errors import ConfigError, ServerError, ServerStartError
from workbench.hosts import LocalHost, SSHHost, processes
from workbench.servers import ServerHandle
from workbench.variants import Variant, load_variant
from workbench.hosts._bundle import build_bundle
from workbench.hosts._upload import content_key

PY = sys.executable  # the host is this machine; its python has the simulator's dependencies
FAST = {"profile": "seed-pcie-8gpu", "time-scale": 20, "seed": 3}
runner = CliRunner()


@pytest.fixture
def state_dir(tmp_path: Path) -> str:
    return str(tmp_path / "servers")


def _start(sshd: SSHD, state_dir: str, variant: str | Variant = "baseline", **kwargs) -> ServerHandle:  # noqa: F811
    v = variant if isinstance(variant, Variant) else load_variant(variant)
    return ServerHandle.start(
        v,
        host=sshd.alias,
        config_file=sshd.config_file,
        engine="sim",
        python=PY,
        state_dir=state_dir,
        sim_options=FAST,
        **kwargs,
    )


def _cli(sshd: SSHD, state_dir: str, *args: str):  # noqa: F811
    return runner.invoke(
        app,
        ["servers", "--host", sshd.alias, "-F", str(sshd.config_file), "--python", PY, "--state-dir", state_dir, *args],
    )


def _environ(pid: int) -> dict[str, str]:
    raw = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    return dict(item.decode().split("=", 1) for item in raw if b"=" in item)


def _nothing_left(pgid: int, start_time: int) -> bool:
    return processes.group_members(LocalHost(), pgid, since=start_time) == []


def _get_json(url: str) -> dict:
    with urllib.request.urlopen(url, timeout=30) as resp:
        return json.loads(resp.read())


def test_sim_server_through_ssh_ready_queried_and_stopped(sshd: SSHD, state_dir: str) -> None:  # noqa: F811
    with _start(sshd, state_dir) as server:
        assert isinstance(server.host, SSHHost) and server.engine is get_engine("sim")
        assert server.command[server.command.index("--host") + 1] == "127.0.0.1"
        assert server.url.startswith("http://127.0.0.1:") and not server.url.endswith(f":{server.port}")
        info = server.server_info()
        assert info["simulated"] is True and info["port"] == server.port
        # The workbench ran from the uploaded bundle, and found its data files there.
        tree = _environ(server.process.pid)["PYTHONPATH"]
        assert tree.endswith(f"/{content_key(build_bundle())}/tree")
        assert _get_json(server.url + "/model_info")["tokenizer_path"] == f"{tree}/data/tokenizer"
        status = server.status()
        assert server.port in status.ports and server.process.pid in status.members
        record = json.loads(Path(state_dir, f"{server.id}.json").read_text())
        assert (record["pgid"], record["detached"], record["lease_s"]) == (server.process.pgid, False, 600.0)
        watchdog = server.record.watchdog_process
        assert processes.is_alive(LocalHost(), watchdog)
        lines = []
        for line in server.follow_log(timeout_s=10):
            lines.append(line)
            if "fired up" in line:
                break
        assert any("Uvicorn running" in line for line in lines)
        printed = io.StringIO()
        server.stream_log(until_ready=True, file=printed)
        assert "The server is fired up and ready to roll!" in printed.getvalue()
    assert _nothing_left(server.process.pgid, server.process.start_time)
    assert _nothing_left(watchdog.pgid, watchdog.start_time)
    assert not Path(state_dir, f"{server.id}.json").exists() and Path(server.log_path).is_file()
    assert "stopped" in repr(server)


def test_bad_flag_through_ssh_is_classified_and_leaves_nothing(sshd: SSHD, state_dir: str) -> None:  # noqa: F811
    bad = Variant(name="bad", model_path="m", flags={"no-such-flag": 1})
    with pytest.raises(ServerStartError) as err:
        _start(sshd, state_dir, bad, ready_timeout_s=30)
    assert err.value.kind == "bad_flags" and err.value.suggestion in str(err.value)
    assert "unrecognized arguments: --no-such-flag" in err.value.log_tail
    assert "Evidence: python -m workbench.sim: error: unrecognized arguments" in str(err.value)
    assert list(Path(state_dir).glob("*.json")) == []
    assert "no workbench servers" in _cli(sshd, state_dir).output


def test_registry_listing_and_cli_stop(sshd: SSHD, state_dir: str) -> None:  # noqa: F811
    server = _start(sshd, state_dir, gpus=[3])
    try:
        listing = _cli(sshd, state_dir)
        assert listing.exit_code == 0, listing.output
        row = next(line for line in listing.output.splitlines() if line.startswith(server.id))
        assert " running " in row and " baseline " in row and " 3 " in row and "lease 10m" in row
        [entry] = json.loads(_cli(sshd, state_dir, "--json").output)
        assert entry["id"] == server.id and server.port in entry["ports"] and entry["watchdog_alive"] is True
        refused = _cli(sshd, state_dir, server.id)
        assert refused.exit_code == 2 and "--stop" in refused.output
        stopped = _cli(sshd, state_dir, "--stop", str(server.port))
        assert stopped.exit_code == 0 and f"stopped {server.id}" in stopped.output and "nothing left" in stopped.output
        assert _nothing_left(server.process.pgid, server.process.start_time)
        assert _nothing_left(server.record.watchdog["pgid"], server.record.watchdog["start_time"])
        assert "no workbench servers" in _cli(sshd, state_dir).output
        unknown = _cli(sshd, state_dir, "--stop", "nosuch")
        assert unknown.exit_code == 1 and "no server matches 'nosuch'" in unknown.output
    finally:
        server.close()


def test_lease_watchdog_stops_a_server_without_heartbeats(sshd: SSHD, state_dir: str) -> None:  # noqa: F811
    orphan = _start(sshd, state_dir, lease_s=2, heartbeat_s=None, wait=False)  # like a killed kernel
    # renewed every 0.4 s, a lease of 6 s holds on a loaded machine (a 2 s one once lapsed there: one SSH
    # heartbeat round trip delayed past it); the renewal is checked at twice that
    kept = _start(sshd, state_dir, lease_s=6, heartbeat_s=0.4, wait=False)
    try:
        deadline = time.monotonic() + 30
        while orphan.alive:
            assert time.monotonic() < deadline, orphan.logs_tail()
            time.sleep(0.3)
        assert "[workbench watchdog] lease expired: no client heartbeat" in orphan.logs_tail(20)
        assert _nothing_left(orphan.process.pgid, orphan.process.start_time)
        while time.time() - kept.started_at < 12.0:  # twice its 6 s lease
            time.sleep(0.2)
        assert kept.alive  # its heartbeats renewed the lease
        rows = _cli(sshd, state_dir).output
        assert f"{orphan.id}" in rows and "stopped by lease" in rows
        assert json.loads(Path(state_dir, f"{orphan.id}.json").read_text())["stopped_by"] == "lease"
        with pytest.raises(ServerError, match="not running"):
            ServerHandle.attach(sshd.alias, orphan.id, config_file=sshd.config_file, python=PY, state_dir=state_dir)
        cleaned = _cli(sshd, state_dir, "--stop", "--all")
        assert f"removed the record of {orphan.id}" in cleaned.output and f"stopped {kept.id}" in cleaned.output
        assert list(Path(state_dir).glob("*.json")) == []
    finally:
        orphan.close()
        kept.close()
        kept.stop()


def test_attach_from_another_connection(sshd: SSHD, state_dir: str) -> None:  # noqa: F811
    server = _start(sshd, state_dir, detached=True)
    other = SSHHost(sshd.alias, config_file=sshd.config_file)  # another client, its own connection
    try:
        assert server.record.watchdog is None
        attached = ServerHandle.attach(other, server.id, python=PY, state_dir=state_dir)
        assert attached.url != server.url and attached.server_info()["port"] == server.port
        assert attached.variant.name == "baseline" and attached.command == server.command
        with ServerHandle.attach(other, server.port, python=PY, state_dir=state_dir) as by_port:
            assert by_port.id == server.id
        assert server.alive  # leaving the block of a handle it does not own only closes it
        with pytest.raises(ServerError, match="no server matches"):
            ServerHandle.attach(other, "nosuch", python=PY, state_dir=state_dir)
        attached.stop()
        assert not server.alive and _nothing_left(server.process.pgid, server.process.start_time)
    finally:
        server.stop()
        other.close()


def test_two_variants_side_by_side_on_disjoint_gpus(sshd: SSHD, state_dir: str) -> None:  # noqa: F811
    a = _start(sshd, state_dir, "baseline", gpus=[0, 1])
    try:
        b = _start(sshd, state_dir, "eagle3-topk4", gpus=[2, 3])
        try:
            assert a.port != b.port
            assert _environ(a.process.pid)["CUDA_VISIBLE_DEVICES"] == "0,1"
            assert _environ(b.process.pid)["CUDA_VISIBLE_DEVICES"] == "2,3"
            assert a.server_info()["speculative_algorithm"] is None
            assert b.server_info()["speculative_algorithm"] == "EAGLE3"
            with pytest.raises(ConfigError, match=r"GPU 1 \(baseline-"):
                _start(sshd, state_dir, "baseline", gpus=[1, 2], wait=False)
        finally:
            b.stop()
    finally:
        a.stop()
    assert _nothing_left(a.process.pgid, a.process.start_time) and _nothing_left(b.process.pgid, b.process.start_time)
    assert not [p for p in Path(state_dir).glob("*.json")]


def test_bad_arguments_are_refused_before_anything_starts(sshd: SSHD, state_dir: str) -> None:  # noqa: F811
    v = load_variant("baseline")
    for gpus in ([], [0, 0], [-1], ["0"]):
        with pytest.raises(ConfigError, match="gpus"):
            ServerHandle.start(v, host=LocalHost(), gpus=gpus, state_dir=state_dir)
    with pytest.raises(ConfigError, match="lease_s"):
        ServerHandle.start(v, host=LocalHost(), lease_s=0, state_dir=state_dir)
    with_env = Variant(name="x", model_path="m", env={"CUDA_VISIBLE_DEVICES": "0"})
    with pytest.raises(ConfigError, match="not both"):
        ServerHandle.start(with_env, host=LocalHost(), gpus=[1], state_dir=state_dir)
    assert not os.path.exists(state_dir) or not os.listdir(state_dir)


def test_servers_shows_and_stops_only_this_checkouts_servers(state_dir: str) -> None:
    def cli(*args: str):
        return runner.invoke(app, ["servers", "--python", PY, "--state-dir", state_dir, *args])

    ours = ServerHandle.start(
        load_variant("baseline"), host=LocalHost(), engine="sim", python=PY, state_dir=state_dir, sim_options=FAST
    )
    theirs = ServerHandle.start(
        load_variant("eagle3-topk4"), host=LocalHost(), engine="sim", python=PY, state_dir=state_dir, sim_options=FAST
    )
    try:
        record = Path(theirs.record.path)  # as if another checkout of this user had started it
        data = json.loads(record.read_text())
        data["client"]["checkout"] = "/home/someone/other-checkout"
        record.write_text(json.dumps(data))
        listing = cli()
        assert listing.exit_code == 0 and ours.id in listing.output and theirs.id not in listing.output
        assert "this checkout" in listing.output and "1 of other checkouts not shown" in listing.output
        every = cli("--any-checkout")
        row = next(line for line in every.output.splitlines() if line.startswith(theirs.id))
        assert ":/home/someone/other-checkout" in row
        refused = cli("--stop", theirs.id)
        assert refused.exit_code == 2 and "belongs to" in refused.output and "--any-checkout" in refused.output
        stopped = cli("--stop", "--all")  # this checkout's only
        assert f"stopped {ours.id}" in stopped.output and theirs.id not in stopped.output
        assert theirs.alive and not ours.alive
        assert f"stopped {theirs.id}" in cli("--stop", "--all", "--any-checkout").output
        assert not theirs.alive
    finally:
        for server in (ours, theirs):
            server.close()
            server.stop()
