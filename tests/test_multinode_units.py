"""Servers that span nodes, without Ray: each rank's command, the pre-flight checks of the multi-node flags
against real SGLang wheels, and the simulated engine's rendezvous at --dist-init-addr (real processes on
127.0.0.1). The fleet side (placement groups, actors, a rank killed) is tests/test_fleet_multinode.py."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from workbench.engines import get_engine
from workbench.errors import ConfigError
from workbench.servers import classify_failure
from workbench.sim._server_args import parse_server_args
from workbench.variants import Variant, check_variant, gpus_per_node, nnodes_of, rank_variant

BASE = Variant(name="llama-2nodes", model_path="m", flags={"tp-size": 4, "nnodes": 2})


def test_each_rank_command_is_the_one_node_command_plus_the_three_flags() -> None:
    engine = get_engine("sim")
    one = engine.launch_argv(Variant(name="llama", model_path="m", flags={"tp-size": 4}), python="py", port=1234)
    rank1 = engine.launch_argv(rank_variant(BASE, rank=1, dist_init_addr="10.0.0.5:5000"), python="py", port=1234)
    added = ["--nnodes", "2", "--node-rank", "1", "--dist-init-addr", "10.0.0.5:5000"]
    assert [a for a in rank1 if a not in added] == [a for a in one if a not in added]
    i = rank1.index("--nnodes")
    assert rank1[i : i + 6] == added
    sglang = get_engine("sglang").launch_argv(
        rank_variant(BASE, rank=0, dist_init_addr="10.0.0.5:5000"), python="py", port=30000
    )
    assert sglang[:3] == ["py", "-m", "sglang.launch_server"] and "--node-rank" in sglang
    assert sglang[sglang.index("--node-rank") + 1] == "0"
    # the variant's own rank flags are replaced, never doubled
    own = Variant(name="x", model_path="m", flags={"tp-size": 2, "nnodes": 2, "node-rank": 1, "nccl-init-addr": "h:1"})
    flags = rank_variant(own, rank=0, dist_init_addr="a:2").flags
    assert flags == {"tp-size": 2, "nnodes": 2, "node-rank": 0, "dist-init-addr": "a:2"}
    assert (nnodes_of(BASE), gpus_per_node(BASE), nnodes_of(Variant(name="y", model_path="m"))) == (2, 2, 1)
    with pytest.raises(ConfigError, match="out of range for nnodes = 2"):
        rank_variant(BASE, rank=2, dist_init_addr="a:1")
    with pytest.raises(ConfigError, match="does not divide its 3 GPU"):
        gpus_per_node(Variant(name="z", model_path="m", flags={"tp-size": 3, "nnodes": 2}))


def _errors(variant: Variant, sglang: str = "0.5.9") -> dict[str, str]:
    found = check_variant(variant, sglang=sglang, resources=False).findings
    return {f.check: f.problem for f in found if f.severity == "error"}


def test_preflight_refuses_a_rank_out_of_range_and_nodes_that_do_not_divide_the_gpus() -> None:
    assert _errors(BASE) == {}
    rank = _errors(Variant(name="r", model_path="m", flags={"tp-size": 4, "nnodes": 2, "node-rank": 2}))
    assert set(rank) == {"multinode-rank"} and "out of range for nnodes = 2" in rank["multinode-rank"]
    divide = _errors(Variant(name="d", model_path="m", flags={"tp-size": 3, "nnodes": 2}))
    assert (
        set(divide) == {"multinode-divide"}
        and "tp_size must be divisible by number of nodes" in divide["multinode-divide"]
    )
    dp = _errors(Variant(name="p", model_path="m", flags={"tp-size": 2, "dp-size": 2, "nnodes": 2}))
    assert set(dp) == {"multinode-dp"} and "unless dp attention" in dp["multinode-dp"]
    bad = _errors(Variant(name="b", model_path="m", flags={"tp-size": 2, "nnodes": 0}))
    assert set(bad) == {"multinode-nnodes"}
    # the parser's own check: a value of the wrong type for the release's --nnodes (type=int)
    typed = check_variant(
        Variant(name="t", model_path="m", flags={"nnodes": "two"}), sglang="0.5.9", resources=False
    ).findings
    assert any(f.severity == "error" and f.flag == "--nnodes" for f in typed)
    # 0.5.23 declares its flags in arg_groups dataclasses: the same checks pass on it
    assert _errors(BASE, "0.5.23") == {}


def test_preflight_refuses_a_multinode_flag_that_the_target_release_does_not_have(tmp_path: Path) -> None:
    """A checkout of 0.5.9 with the three multi-node flags taken out of its parser stands for a release
    without them (every wheel from 0.4.4 to 0.5.23 has them): the parser check refuses each by name."""
    from workbench.source import sglang_release

    try:
        package = sglang_release("0.5.9").package_dir
    except Exception as exc:  # pragma: no cover - no wheel cached and no network
        pytest.skip(f"SGLang 0.5.9 wheel not available: {exc}")
    tree = tmp_path / "sglang-old" / "python" / "sglang"
    (tree / "srt").mkdir(parents=True)
    shutil.copy(Path(package) / "version.py", tree / "version.py")
    text = (Path(package) / "srt" / "server_args.py").read_text()
    for option in ('"--nnodes"', '"--node-rank"', '"--dist-init-addr"'):
        assert option in text
        text = text.replace(option, option.replace("--", "--no-such-"))
    (tree / "srt" / "server_args.py").write_text(text)
    old = Variant(
        name="old", model_path="m", base=f"local:{tmp_path / 'sglang-old'}", flags={"tp-size": 2, "nnodes": 2}
    )
    found = check_variant(old, resources=False).findings
    unknown = [f for f in found if f.severity == "error" and f.flag and "nnodes" in f.flag]
    assert unknown and "nnodes" in unknown[0].problem, [f.message for f in found if f.severity == "error"]


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _sim(tmp_path: Path, name: str, *args: str) -> tuple[subprocess.Popen, Path]:
    log = tmp_path / f"{name}.log"
    proc = subprocess.Popen(
        [sys.executable, "-m", "workbench.sim", "--model-path", "m", "--tp-size", "2", "--nnodes", "2", *args],
        stdout=open(log, "w"),
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    return proc, log


def _get(port: int, path: str) -> int:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=2) as r:
            return r.status
    except urllib.error.HTTPError as exc:
        return exc.code
    except OSError:
        return 0


def _wait(what, timeout_s: float):
    start = time.monotonic()
    while not (found := what()):
        assert time.monotonic() - start < timeout_s, "timed out"
        time.sleep(0.1)
    return found


def _stop(*procs: subprocess.Popen) -> None:
    for p in procs:
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGKILL)
        p.wait(timeout=10)


def test_rank0_serves_http_only_after_rank1_joined_and_rank1_exits_when_rank0_goes(tmp_path: Path) -> None:
    dist, http0, http1 = _port(), _port(), _port()
    addr = f"127.0.0.1:{dist}"
    rank0, log0 = _sim(tmp_path, "rank0", "--node-rank", "0", "--dist-init-addr", addr, "--port", str(http0))
    rank1 = None
    try:
        _wait(lambda: "waits for the other ranks" in log0.read_text(), 60)
        time.sleep(0.5)
        assert _get(http0, "/health") == 0, "rank 0 serves no HTTP before its group formed"
        rank1, log1 = _sim(tmp_path, "rank1", "--node-rank", "1", "--dist-init-addr", addr, "--port", str(http1))
        _wait(lambda: _get(http0, "/v1/models") == 200, 60)
        assert "all 2 ranks joined" in log0.read_text()
        _wait(lambda: _get(http1, "/health") == 200, 30)  # SGLang's dummy health server on a rank > 0 ...
        assert _get(http1, "/health_generate") == 200 and _get(http1, "/v1/models") == 404  # ... and nothing else
        gone = time.monotonic()
        os.killpg(rank0.pid, signal.SIGKILL)
        assert rank1.wait(timeout=10) == 1
        print(f"rank 1 exited {time.monotonic() - gone:.2f} s after rank 0 was killed")
        text = log1.read_text()
        assert "Connection closed by peer" in text
        assert classify_failure(text).kind == "multi_node"
    finally:
        _stop(rank0, *(p for p in (rank1,) if p is not None))


def _alone(tmp_path: Path, rank: int, timeout_s: str) -> str:
    """The log of rank ``rank`` of 2 started with no other rank, after it exited with status 1."""
    proc, log = _sim(
        tmp_path,
        f"alone{rank}",
        "--node-rank",
        str(rank),
        "--dist-init-addr",
        f"127.0.0.1:{_port()}",
        "--port",
        str(_port()),
        "--sim-dist-timeout",
        timeout_s,
    )
    try:
        assert proc.wait(timeout=60) == 1
    finally:
        _stop(proc)
    return log.read_text()


def test_a_rank_that_cannot_reach_rank0_exits_within_its_bound_with_torchs_message(tmp_path: Path) -> None:
    start = time.monotonic()
    text = _alone(tmp_path, 1, "2")
    assert "DistNetworkError: The client socket has timed out after 2000ms while trying to connect to" in text
    failure = classify_failure(text)
    assert failure.kind == "multi_node" and "--dist-init-addr" in failure.suggestion
    print(f"rank 1 alone exited after {time.monotonic() - start:.1f} s (bound 2 s plus its start)")
    text = _alone(tmp_path, 0, "1")  # rank 0 whose rank 1 never comes
    assert "waiting for clients. 0/1 clients joined" in text and classify_failure(text).kind == "multi_node"


def test_the_simulator_refuses_the_multinode_flags_as_sglang_does() -> None:
    with pytest.raises(ConfigError, match="tp_size must be divisible by number of nodes"):
        parse_server_args(["--model-path", "m", "--tp-size", "3", "--nnodes", "2", "--dist-init-addr", "h:1"])
    with pytest.raises(ConfigError, match="please provide --dist-init-addr"):
        parse_server_args(["--model-path", "m", "--tp-size", "2", "--nnodes", "2"])
    with pytest.raises(ConfigError, match="out of range"):
        parse_server_args(
            ["--model-path", "m", "--tp-size", "2", "--nnodes", "2", "--node-rank", "2", "--dist-init-addr", "h:1"]
        )
    config = parse_server_args(["--model-path", "m", "--tp-size", "2", "--nnodes", "2", "--nccl-init-addr", "h:1"])
    assert config.args["dist_init_addr"] == "h:1"  # SGLang's older alias


def test_a_unit_spanning_more_nodes_than_the_fleet_has_is_refused_before_submission() -> None:
    from workbench.sweeps._fleet_units import FleetUnit
    from workbench.sweeps._fleet_multinode import check_groups_fit

    # ray.nodes()'s shape (Ray 2.60): two alive nodes of 4 GPUs, one dead node
    nodes = [
        {"Alive": True, "NodeID": "a", "Resources": {"GPU": 4.0, "CPU": 2.0}},
        {"Alive": True, "NodeID": "b", "Resources": {"GPU": 4.0, "CPU": 2.0}},
        {"Alive": False, "NodeID": "c", "Resources": {"GPU": 8.0}},
    ]
    check_groups_fit(nodes, [FleetUnit(key=0, label="two", gpus=4, payload=None, nnodes=2)])
    with pytest.raises(ConfigError, match="spans 3 nodes of 2 GPU.* has 2 node"):
        check_groups_fit(nodes, [FleetUnit(key=0, label="three", gpus=2, payload=None, nnodes=3)])
    with pytest.raises(ConfigError, match="spans 2 nodes of 8 GPU.* has 0 node"):
        check_groups_fit(nodes, [FleetUnit(key=0, label="big", gpus=8, payload=None, nnodes=2)])


def test_a_variant_spanning_nodes_is_refused_off_a_fleet(tmp_path: Path) -> None:
    import workbench as wb

    with pytest.raises(ConfigError, match="spans 2 nodes .*run it on a fleet"):
        wb.benchmark_variants(
            [BASE], runs_dir=tmp_path / "runs", progress=False, concurrency_levels=[1], requests_per_level=1
        )
    assert not list((tmp_path / "runs").glob("*/manifest.json"))  # refused before anything ran
