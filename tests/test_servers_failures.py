"""The start-failure classifier on real SGLang log excerpts from public issues (tests/fixtures/sglang_logs)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from workbench.errors import ServerStartError
from workbench.servers._failures import KINDS, classify, suggestions, timed_out

FIXTURES = Path(__file__).parent / "fixtures" / "sglang_logs"


def _load(path: Path) -> tuple[str, str, str]:
    """(expected kind, cited source URL, log text) of a fixture; the header ends at '# ---'."""
    head, sep, body = path.read_text().partition("# ---\n")
    assert sep, f"{path.name}: no '# ---' line after the header"
    expect = re.search(r"^# Expect: (\w+)$", head, re.MULTILINE)
    source = re.search(r"^# Source: (https://github\.com/\S+/(?:issues|pull)/\d+)", head, re.MULTILINE)
    assert expect and source, f"{path.name}: header needs '# Source: <issue URL>' and '# Expect: <kind>'"
    return expect.group(1), source.group(1), body


FIXTURE_FILES = sorted(FIXTURES.glob("*.log"))
#: Logs of SGLang 0.5.17 launched wrong on purpose on a GPU (tests/test_real_sglang_failures.py checks each).
REAL_LOG_FILES = sorted((Path(__file__).parent / "fixtures" / "sglang_logs_real").glob("*.log"))
#: Tails written from SGLang's raise sites (tests/test_servers_failures_written.py checks each).
WRITTEN_LOG_FILES = sorted((Path(__file__).parent / "fixtures" / "sglang_logs_written").glob("*.log"))


def _expected_kind(path: Path) -> str:
    """The ``# Expect:`` kind of a recorded real log (its header has no issue source: it was recorded, not quoted)."""
    found = re.search(r"^# Expect: (\w+)$", path.read_text().partition("# ---\n")[0], re.MULTILINE)
    assert found, f"{path.name}: header needs '# Expect: <kind>'"
    return found.group(1)


def test_every_kind_but_timeout_and_lease_has_a_real_excerpt() -> None:
    # an excerpt from a public issue, a log recorded from a real SGLang on a GPU, or a tail written from SGLang's
    # raise site (gpu_arch has only the last: no GPU the project ran on lacked its kernels)
    kinds = {_load(p)[0] for p in FIXTURE_FILES} | {_expected_kind(p) for p in REAL_LOG_FILES}
    written = {_expected_kind(p) for p in WRITTEN_LOG_FILES}
    assert len(REAL_LOG_FILES) >= 5 and len(WRITTEN_LOG_FILES) >= 14
    assert kinds | written == set(KINDS) - {"timeout", "lease_expired", "killed"} and written - kinds == {"gpu_arch"}


def _launch(path: Path) -> str:
    """The ``# Launch:`` header line of a fixture (what the workbench knows of the server's launch), or ''."""
    found = re.search(r"^# Launch: (.*)$", path.read_text().partition("# ---\n")[0], re.MULTILINE)
    return found.group(1) if found else ""


@pytest.mark.parametrize("path", FIXTURE_FILES, ids=[p.stem for p in FIXTURE_FILES])
def test_real_log_excerpt_is_classified(path: Path) -> None:
    expect, _, body = _load(path)
    failure = classify(body, launch=_launch(path))
    assert failure.kind == expect
    assert failure.suggestion
    if expect != "unknown":
        assert failure.evidence and failure.evidence in body


def test_the_three_held_out_shapes_of_issue_24_are_classified_with_advice() -> None:
    negative = classify(_load(FIXTURES / "oom_negative_profiled_kv_7691.log")[2])
    assert negative.kind == "out_of_memory" and "profiled value -561981" in negative.evidence
    assert (
        "negative budget for the KV cache" in negative.suggestion
        and "Raise --mem-fraction-static" in negative.suggestion
    )
    path = FIXTURES / "spec_v2_topk_no_env_13352.log"
    tail = _load(path)[2]
    assert "SPEC_V2" not in tail and "eagle_worker_v2" not in tail and classify(tail).kind == "unknown"
    known = classify(tail, launch=_launch(path))  # the env the workbench launched it with decides
    assert known.kind == "spec_v2_topk" and "speculative-eagle-topk = 1" in known.suggestion
    assert "SGLANG_ENABLE_SPEC_V2" not in known.evidence  # the launch is a condition, never the evidence
    ci = _load(FIXTURES / "scheduler_exception_ci_prefix_14077.log")[2]
    plain = classify(_load(FIXTURES / "scheduler_exception_14077.log")[2])
    assert classify(ci) == plain and plain.kind == "scheduler_exception"


def test_capture_failure_caused_by_oom_is_a_capture_failure() -> None:
    _, _, body = _load(FIXTURES / "cuda_graph_oom_5285.log")
    assert "CUDA out of memory" in body and classify(body).kind == "cuda_graph"


def test_kv_cache_oom_and_cuda_oom_suggest_opposite_directions() -> None:
    kv = classify(_load(FIXTURES / "oom_not_enough_memory_4330.log")[2])
    cuda = classify(_load(FIXTURES / "oom_kv_pool_12496.log")[2])
    assert kv.kind == cuda.kind == "out_of_memory"
    assert "raise --mem-fraction-static" in kv.suggestion and "lower --mem-fraction-static" in cuda.suggestion


def test_import_error_suggestion_names_the_module() -> None:
    assert "'pybase64'" in classify(_load(FIXTURES / "import_error_pybase64_13276.log")[2]).suggestion
    assert "sgl_kernel" in classify(_load(FIXTURES / "import_error_sgl_kernel_5867.log")[2]).suggestion
    missing_sglang = classify("ModuleNotFoundError: No module named 'sglang'\n")
    assert missing_sglang.kind == "import_error" and "python=" in missing_sglang.suggestion


def test_finished_capture_is_not_a_capture_failure() -> None:
    log = 'Capture cuda graph begin.\n  File "x/cuda_graph_runner.py", line 1\nCapture cuda graph end. Time 2 s\n'
    assert classify(log).kind == "unknown"


def test_simulator_refusals_are_named_like_sglangs() -> None:
    # What the simulator logs (python -m workbench.sim), like SGLang's argparse and its refusals: argparse's and an
    # assert's are refused flags; its spec v2 refusal is SGLang's own words, named as SGLang's ValueError is
    # (tests/fixtures/sglang_logs_written/spec_v2_topk_refused.log) with spec v2's advice.
    argparse_line = "python -m workbench.sim: error: unrecognized arguments: --no-such-flag 1\n"
    assert_line = "please provide --dist-init-addr as host:port of head node (SGLang asserts here)\n"
    assert classify(argparse_line).kind == classify(assert_line).kind == "bad_flags"
    v2_line = "[2026-01-01 00:00:00] Spec v2 currently only supports topk = 1 (SGLang 0.5.9 ...)\n"
    v2 = classify(v2_line)
    assert v2.kind == "spec_v2_topk" and "speculative-eagle-topk = 1" in v2.suggestion


def test_lease_stop_and_timeout() -> None:
    lease_line = "[2026-01-01 00:00:00] [workbench watchdog] lease expired: no client heartbeat for 601 s\n"
    assert classify(lease_line).kind == "lease_expired"
    assert timed_out("Load weight begin.\n").kind == "timeout"
    assert timed_out("Capture cuda graph failed: boom\n").kind == "cuda_graph"


def test_every_kind_has_a_one_line_suggestion() -> None:
    table = suggestions()
    assert set(table) == set(KINDS)
    assert all(text and "\n" not in text for text in table.values())


def test_server_start_error_carries_kind_and_suggestion() -> None:
    err = ServerStartError("failed", "tail", kind="port_in_use", suggestion="free the port")
    assert (err.kind, err.suggestion, err.log_tail, str(err)) == ("port_in_use", "free the port", "tail", "failed")
    assert ServerStartError("x").kind == "unknown"


def test_scheduler_exception_points_at_the_last_frame_inside_sglang() -> None:
    _, _, body = _load(FIXTURES / "scheduler_exception_14077.log")
    failure = classify(body)
    assert failure.kind == "scheduler_exception"
    assert 'eagle_worker_v2.py", line 511, in _draft_extend_for_decode' in failure.evidence
    assert "speculative worker" in failure.suggestion and "srt/speculative/eagle_worker_v2.py:511" in failure.suggestion


def test_benign_pcie_custom_allreduce_warning_is_no_failure_but_missing_peer_access_is() -> None:
    benign = _load(FIXTURES / "unknown_benign_custom_allreduce_pcie_29562.log")[2]
    assert classify(benign).kind == "unknown"
    broken = benign + _load(FIXTURES / "custom_all_reduce_peer_4814.log")[2]
    assert classify(broken).kind == "custom_all_reduce" and "disable-custom-all-reduce" in classify(broken).suggestion


def test_kv_pool_exhausted_at_runtime_is_not_an_out_of_memory_at_start() -> None:
    runtime = classify(_load(FIXTURES / "kv_pool_exhausted_14948.log")[2])
    start = classify(_load(FIXTURES / "oom_not_enough_memory_4330.log")[2])
    assert (runtime.kind, start.kind) == ("kv_pool_exhausted", "out_of_memory")
    assert "Lower the concurrency" in runtime.suggestion and "raise --mem-fraction-static" in start.suggestion


def test_a_shape_error_is_spec_v2_topk_only_under_spec_v2() -> None:
    line = "RuntimeError: Sizes of tensors must match except in dimension 1. Expected size 6 but got size 8\n"
    assert classify(line).kind == "unknown"
    assert classify("SGLANG_ENABLE_SPEC_V2=1 python -m sglang.launch_server\n" + line).kind == "spec_v2_topk"
