"""remote/checkout_state.py, gpu_inventory.py and process_status.py: parsers on real nvidia-smi output,
and each helper run for real, on this machine and through a real sshd (call_helper, one round trip)."""

from __future__ import annotations

import importlib.util
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path
from types import ModuleType

import pytest
from sshd_fixture import any_host, free_port, sshd  # noqa: F401  (pytest fixtures)

from workbench.hosts import Host, LocalHost, processes
from workbench.hosts._helpers import REMOTE_DIR, call_helper

TOPO = Path(__file__).parent / "fixtures" / "nvidia_smi"


def _module(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"remote_{name}", REMOTE_DIR / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


gpu_inventory = _module("gpu_inventory")


def _topo(name: str) -> tuple[str, str]:
    head, _, body = (TOPO / name).read_text().partition("# ---\n")
    return re.search(r"^# Expect: (\w+)$", head, re.MULTILINE).group(1), body


@pytest.fixture
def host(any_host: Host) -> Host:
    """This machine, then the real sshd (tests/sshd_fixture.py ``any_host``)."""
    return any_host


# -- gpu_inventory ------------------------------------------------------------------------------
@pytest.mark.parametrize("name", sorted(p.name for p in TOPO.glob("topo_*.txt")))
def test_topology_parser_on_real_nvidia_smi_output(name: str) -> None:
    expect, text = _topo(name)
    matrix = gpu_inventory.parse_topology(text)
    links, kind = gpu_inventory.classify_links(matrix)
    assert kind == expect
    assert all(matrix[(i, i)] == "X" for i, _ in matrix if (i, i) in matrix)
    assert links and all(link["a"] < link["b"] for link in links)


def test_topology_details() -> None:
    _, two = _topo("topo_pcie_phb_club3090_1229.txt")
    assert gpu_inventory.parse_topology(two) == {(0, 0): "X", (0, 1): "PHB", (1, 0): "PHB", (1, 1): "X"}
    _, eight = _topo("topo_pcie_8gpu_k8s53497.txt")
    m = gpu_inventory.parse_topology(eight)
    assert (m[(0, 1)], m[(0, 2)], m[(0, 4)], m[(4, 5)]) == ("PIX", "PHB", "SYS", "PIX")
    assert max(j for _, j in m) == 7 and (0, 8) not in m  # the mlx4_0 column is not a GPU
    _, nv = _topo("topo_nvlink_nccl_tests78.txt")
    m = gpu_inventory.parse_topology(nv)
    assert m[(3, 15)] == "NV6" and m[(2, 2)] == "X"
    mixed = "\tGPU0\tGPU1\tGPU2\nGPU0\t X \tNV4\tPHB\nGPU1\tNV4\t X \tPHB\nGPU2\tPHB\tPHB\t X \n"
    assert gpu_inventory.classify_links(gpu_inventory.parse_topology(mixed))[1] == "mixed"
    assert gpu_inventory.parse_topology("No devices were found\n") == {}


def _fake_nvidia_smi(tmp_path: Path, topo_name: str, *, fail: bool = False) -> Path:
    """An executable that answers like nvidia-smi: a CSV for --query-gpu, a real topo excerpt for `topo -m`."""
    _, topo = _topo(topo_name)
    (tmp_path / "topo.txt").write_text(topo)
    rows = "\n".join(
        f"{i}, NVIDIA GeForce RTX 5090, GPU-{i:08d}-aaaa, 32607, {100 * i}, 00000000:0{i}:00.0, 575.51.03"
        for i in range(2)
    )
    (tmp_path / "query.csv").write_text(rows + "\n")
    script = tmp_path / "nvidia smi"  # a space in the path, passed as data
    body = (
        "echo 'Failed to initialize NVML: Driver/library version mismatch' >&2; exit 9\n"
        if fail
        else f'if [ "$1" = topo ]; then cat "{tmp_path}/topo.txt"; else cat "{tmp_path}/query.csv"; fi\n'
    )
    script.write_text("#!/bin/sh\n" + body)
    script.chmod(0o755)
    return script


def test_gpu_inventory_with_nvidia_smi(host: Host, tmp_path: Path) -> None:
    fake = _fake_nvidia_smi(tmp_path, "topo_pcie_phb_club3090_1229.txt")
    answer = call_helper(host, "gpu_inventory", {"nvidia_smi": str(fake)})
    assert answer["nvidia_smi"] is True and answer["driver_version"] == "575.51.03"
    assert [g["index"] for g in answer["gpus"]] == [0, 1]
    assert answer["gpus"][1] == {
        "index": 1,
        "name": "NVIDIA GeForce RTX 5090",
        "uuid": "GPU-00000001-aaaa",
        "memory_total_mib": 32607,
        "memory_used_mib": 100,
        "pci_bus_id": "00000000:01:00.0",
    }
    assert answer["links"] == [{"a": 0, "b": 1, "link": "PHB"}] and answer["interconnect"] == "pcie"


def test_gpu_inventory_without_gpus_and_with_a_broken_driver(host: Host, tmp_path: Path) -> None:
    none = call_helper(host, "gpu_inventory", {"nvidia_smi": "no-such-nvidia-smi"})
    assert (none["nvidia_smi"], none["gpus"], none["interconnect"]) == (False, [], "none")
    broken = call_helper(
        host,
        "gpu_inventory",
        {"nvidia_smi": str(_fake_nvidia_smi(tmp_path, "topo_pcie_phb_club3090_1229.txt", fail=True))},
    )
    assert broken["nvidia_smi"] is True and broken["gpus"] == [] and broken["interconnect"] == "unknown"
    assert "version mismatch" in broken["error"]


# -- checkout_state -----------------------------------------------------------------------------
def _git(cwd: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-C", str(cwd), *args],
        check=True,
        capture_output=True,
        env=dict(
            os.environ, GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@x", GIT_COMMITTER_NAME="t", GIT_COMMITTER_EMAIL="t@x"
        ),
    )


@pytest.fixture
def checkout(tmp_path: Path) -> Path:
    """A git repository shaped like an SGLang checkout (python/sglang/version.py), one commit."""
    root = tmp_path / "sg lang's checkout"
    pkg = root / "python" / "sglang"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("raise RuntimeError('the helper must not import sglang')\n")
    (pkg / "version.py").write_text('__version__ = "0.5.9"\n')
    _git(root, "init", "-q", "-b", "main")
    _git(root, "add", ".")
    _git(root, "commit", "-q", "-m", "v0.5.9")
    return root


def test_checkout_state_version_commit_and_dirty(host: Host, checkout: Path) -> None:
    commit = subprocess.run(
        ["git", "-C", str(checkout), "rev-parse", "HEAD"], capture_output=True, text=True
    ).stdout.strip()
    answer = call_helper(
        host, "checkout_state", {"paths": [str(checkout), str(checkout / "python"), "/no/such/dir"], "installed": False}
    )
    root, python_dir, missing = answer["checkouts"]
    for entry in (root, python_dir):
        assert entry["version"] == "0.5.9" and entry["package_dir"] == str(checkout / "python" / "sglang")
        assert entry["git"]["commit"] == commit and entry["git"]["branch"] == "main"
        assert entry["git"]["dirty"] is False
    assert missing["error"] == "no such directory"
    (checkout / "python" / "sglang" / "version.py").write_text('__version__ = "0.5.9.post1"\n')
    (checkout / "untracked.txt").write_text("untracked files do not make a tree dirty\n")
    again = call_helper(host, "checkout_state", {"paths": [str(checkout)], "installed": False})["checkouts"][0]
    assert again["version"] == "0.5.9.post1"
    assert again["git"]["dirty"] is True and again["git"]["changed"] == ["python/sglang/version.py"]


def test_checkout_state_finds_the_installed_package_without_importing_it(checkout: Path, tmp_path: Path) -> None:
    env = dict(os.environ, PYTHONPATH=str(checkout / "python"))
    proc = subprocess.run(
        [sys.executable, str(REMOTE_DIR / "checkout_state.py")], input=b"{}", env=env, capture_output=True, check=True
    )
    installed = json.loads(proc.stdout)["installed"]
    assert installed["version"] == "0.5.9" and installed["package_dir"] == str(checkout / "python" / "sglang")
    assert installed["git"]["dirty"] is False and installed["error"] is None
    bare = subprocess.run(
        [sys.executable, "-I", str(REMOTE_DIR / "checkout_state.py")], input=b"{}", capture_output=True, check=True
    )
    assert json.loads(bare.stdout)["installed"] is None  # this venv has no sglang


# -- process_status -----------------------------------------------------------------------------
LISTENER = (
    "import socket, sys, time\n"
    "s = socket.socket(); s.bind(('127.0.0.1', int(sys.argv[1]))); s.listen()\n"
    "print('line one', flush=True); print('line two', flush=True)\n"
    "sys.stdout.write('partial'); sys.stdout.flush(); time.sleep(60)\n"
)


def test_process_status_members_ports_log_and_heartbeat(host: Host, tmp_path: Path) -> None:
    port = free_port()
    log = tmp_path / "server.log"
    proc = processes.spawn(
        host, ["sh", "-c", 'sleep 60 & exec "$0" -c "$1" "$2"', sys.executable, LISTENER, str(port)], log_path=str(log)
    )
    heartbeat = tmp_path / "x.heartbeat"
    heartbeat.write_text("")
    os.utime(heartbeat, (time.time() - 42, time.time() - 42))
    try:
        spec = {
            "id": "x",
            "pid": proc.pid,
            "pgid": proc.pgid,
            "start_time": proc.start_time,
            "log_path": str(log),
            "log_offset": 0,
            "heartbeat_path": str(heartbeat),
        }
        deadline = time.monotonic() + 10
        while True:
            st = call_helper(host, "process_status", {"processes": [spec]})["processes"][0]
            if port in st["ports"] and "line two" in st["log"]["text"]:
                break
            assert time.monotonic() < deadline, st
            time.sleep(0.1)
        assert st["alive"] and st["leader_alive"] and len(st["members"]) == 2 and proc.pid in st["members"]
        assert st["log"]["text"] == "line one\nline two\n"  # the partial last line is held back
        assert st["log"]["offset"] == len(b"line one\nline two\n") and st["log"]["size"] > st["log"]["offset"]
        assert 40 < st["heartbeat_age_s"] < 60
        later = call_helper(
            host, "process_status", {"processes": [dict(spec, log_offset=st["log"]["offset"])], "ports": False}
        )["processes"][0]
        assert later["log"]["text"] == "" and later["ports"] == []
        reused = call_helper(host, "process_status", {"processes": [dict(spec, start_time=proc.start_time - 1)]})
        assert reused["processes"][0]["pid_reused"] is True and reused["processes"][0]["alive"] is False
    finally:
        processes.stop(host, proc, grace_s=5)
    gone = call_helper(host, "process_status", {"processes": [spec]})["processes"][0]
    assert not gone["alive"] and gone["members"] == [] and gone["log"]["text"].endswith("partial")


#: A leader that stops its child in its own way on SIGTERM, as ``ray start --block`` stops its node: it tells the
#: child (a real-time signal), gives it 2 s (time to note it on a loaded machine), then ends it.
LEADER = (
    "import signal, subprocess, sys, time\n"
    "child = subprocess.Popen([sys.executable, '-c', sys.argv[1], sys.argv[2]])\n"
    "def on_term(*_):\n"
    "    child.send_signal(signal.SIGRTMIN); time.sleep(2.0); child.kill(); child.wait(); sys.exit(0)\n"
    "signal.signal(signal.SIGTERM, on_term)\n"
    "while True: time.sleep(0.05)\n"
)
#: The child: notes each signal it gets, and leaves ending to its leader.
CHILD = (
    "import signal, sys, time\n"
    "def note(name):\n"
    "    with open(sys.argv[1], 'a') as f: f.write(name + '\\n')\n"
    "signal.signal(signal.SIGTERM, lambda *_: note('TERM'))\n"
    "signal.signal(signal.SIGRTMIN, lambda *_: note('LEADER'))\n"
    "open(sys.argv[1] + '.ready', 'w').close()\n"
    "while True: time.sleep(0.05)\n"
)


@pytest.mark.parametrize("term_leader_only, noted", [(True, ["LEADER"]), (False, ["LEADER", "TERM"])])
def test_stop_can_leave_the_children_to_their_leader(
    host: Host, tmp_path: Path, term_leader_only: bool, noted: list[str]
) -> None:
    """``term_leader_only``: the SIGTERM reaches the leader alone, which ends its child its own way; by default
    the whole group gets it. Either way nothing of the group is left."""
    notes = tmp_path / "child.notes"
    proc = processes.spawn(host, [sys.executable, "-c", LEADER, CHILD, str(notes)], log_path=str(tmp_path / "log"))
    try:
        deadline = time.monotonic() + 30
        while not Path(f"{notes}.ready").exists():
            assert time.monotonic() < deadline, "the child did not start"
            time.sleep(0.05)
        assert len(processes.group_members(host, proc.pgid)) == 2
    finally:
        ended = processes.stop(host, proc, grace_s=20, term_leader_only=term_leader_only)
    assert ended == "stopped" and sorted(notes.read_text().splitlines()) == noted
    assert processes.group_members(host, proc.pgid) == []
    assert processes.stop(host, proc) == "gone"  # nothing left to signal


def test_process_status_lists_a_registry_directory(tmp_path: Path) -> None:
    (tmp_path / "good.json").write_text(
        json.dumps({"id": "good", "pid": os.getpid(), "pgid": os.getpgid(0), "start_time": 0, "heartbeat_path": None})
    )
    (tmp_path / "broken.json").write_text("{not json")
    answer = call_helper(LocalHost(), "process_status", {"registry_dir": str(tmp_path), "ports": False})
    by_name = {Path(r["path"]).name: r for r in answer["records"]}
    assert by_name["good.json"]["status"]["alive"] is True and by_name["good.json"]["error"] is None
    assert by_name["broken.json"]["record"] is None and "JSONDecodeError" in by_name["broken.json"]["error"]
