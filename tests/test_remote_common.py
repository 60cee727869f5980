"""remote/_common.py: the helpers' JSON protocol and /proc reading, on real processes and real interpreters."""

from __future__ import annotations

import importlib.util
import io
import json
import os
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

from workbench.hosts._helpers import REMOTE_DIR, helper_files


def _load() -> ModuleType:
    spec = importlib.util.spec_from_file_location("remote__common", REMOTE_DIR / "_common.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


common = _load()


def _serve(respond, raw: bytes) -> tuple[int, dict]:  # noqa: ANN001
    out = io.StringIO()
    status = common.serve(respond, stdin=io.BytesIO(raw), stdout=out)
    assert out.getvalue().endswith("\n") and out.getvalue().count("\n") == 1  # one JSON line
    return status, json.loads(out.getvalue())


def test_serve_answers_refuses_and_reports_crashes_as_json() -> None:
    assert _serve(lambda raw: {"ok": True, "echo": common.load_request(raw)}, b'{"a": 1}') == (
        0,
        {"ok": True, "echo": {"a": 1}},
    )
    status, refused = _serve(common.load_request, b"[1, 2]")
    assert (status, refused) == (2, {"ok": False, "error": "request must be a JSON object", "kind": "request"})

    def crash(raw: bytes) -> dict:
        raise KeyError("boom")

    status, crashed = _serve(crash, b"{}")
    assert status == 1 and crashed["kind"] == "internal" and crashed["error"] == "KeyError: 'boom'"
    assert "in crash" in crashed["traceback"]


@pytest.mark.parametrize("raw", [b"", b"  \n", b"{not json", b"\xff\xfe"])
def test_load_request_empty_input_and_bad_json(raw: bytes) -> None:
    if not raw.strip():
        assert common.load_request(raw, empty_means_defaults=True) == {}
    with pytest.raises(common.RequestError, match="not valid UTF-8 JSON"):
        common.load_request(raw)


def test_group_members_are_named_by_pgid_and_leader_start_time() -> None:
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"], start_new_session=True)
    try:
        state, pgrp, start = common.read_stat(child.pid)
        assert pgrp == child.pid and state in ("S", "R", "D")  # D: still loading, on a busy machine
        assert common.group_members(child.pid, child.pid, start) == [child.pid]
        assert common.scan_groups([child.pid]) == {child.pid: [(child.pid, start)]}
        assert common.group_members(child.pid, child.pid, start + 1) == []  # pid "reused": not ours
        assert common.group_members(child.pid, child.pid, start, {child.pid: []}) == []  # given scan is used
    finally:
        child.kill()
        child.wait()
    assert common.read_stat(child.pid) is None and common.group_members(child.pid, child.pid, start) == []


def test_a_command_name_with_spaces_and_parentheses_is_parsed(tmp_path: Path) -> None:
    odd = tmp_path / "a b) c"
    odd.symlink_to(sys.executable)
    child = subprocess.Popen([str(odd), "-c", "import time; time.sleep(60)"])
    try:
        stat = common.read_stat(child.pid)
        assert stat is not None and stat[1] == os.getpgrp()
    finally:
        child.kill()
        child.wait()


@pytest.mark.parametrize("script", sorted(p.name for p in REMOTE_DIR.glob("[a-z]*.py")))
def test_every_script_finds_common_beside_it_even_isolated(script: str, tmp_path: Path) -> None:
    """Copied with what is uploaded beside it (_common.py, its own modules) to another directory and run with
    ``python -I`` (no script dir on sys.path)."""
    for path in helper_files(Path(script).stem):
        (tmp_path / path.name).write_bytes(path.read_bytes())
    proc = subprocess.run([sys.executable, "-I", str(tmp_path / script), "--help"], input=b"[]",
                          capture_output=True, cwd="/", timeout=60, check=False)  # fmt: skip
    assert b"ModuleNotFoundError" not in proc.stderr, proc.stderr
    if script not in (
        "server_watchdog.py",
        "gpu_calibrate.py",
        "gpu_spec_step.py",
    ):  # these take arguments, not a request
        assert json.loads(proc.stdout)["kind"] == "request" and proc.returncode == 2
