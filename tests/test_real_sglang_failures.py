"""The start-failure classifier and the ready wait on real SGLang 0.5.17 failures, recorded on an NVIDIA H200.

``tests/fixtures/sglang_logs_real/`` holds the logs of SGLang launched wrong on purpose (each with its
``# Case``, ``# Expect: <kind>`` and ``# Launch:`` header, ending at ``# ---``);
``tests/fixtures/sglang_real/0.5.17/failures.json`` holds what the workbench said of each broken launch then
(kind, suggestion, the message with its evidence and command, the last 60 log lines). The taken port is also
replayed by a real process that writes the recorded lines and stays alive, as SGLang did for a minute or more.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import socket
import sys
import time
from pathlib import Path

import pytest
from server_killer import running_under

from workbench.engines import get_engine
from workbench.errors import ServerStartError
from workbench.servers import ServerHandle
from workbench.servers._failures import classify, fatal
from workbench.variants import load_variant

REAL_LOGS = Path(__file__).parent / "fixtures" / "sglang_logs_real"
REAL_LOG_FILES = sorted(REAL_LOGS.glob("*.log"))
RECORDS = Path(__file__).parent / "fixtures" / "sglang_real" / "0.5.17" / "failures.json"
PUBLIC_EXCERPTS = Path(__file__).parent / "fixtures" / "sglang_logs"

#: What each case's suggestion must tell the user to do (a flag, a command, a file to check).
ACTIONS = {
    "unknown_flag": ("`python -m sglang.launch_server --help`", "dashes, not underscores"),
    "spec_refused": ("change the variant's flags/env",),
    "draft_hidden_size": ("Use the draft trained for this target", "config.json", "hidden_size", "vocab_size"),
    "adaptive_illegal_address": ("drop --speculative-adaptive", "another --attention-backend",
                                 "CUDA_LAUNCH_BLOCKING=1", "report it upstream"),
    "port_in_use": ("`ss -ltnp`", "start without port="),
}
#: Records of failures.json whose kind the classifier now names differently (the kinds added since the recording).
RECLASSIFIED = {"draft_hidden_size": "draft_shape"}


@dataclasses.dataclass(frozen=True)
class RealLog:
    case: str
    expect: str
    launch: str
    body: str


def _read(path: Path) -> RealLog:
    head, sep, body = path.read_text().partition("# ---\n")
    fields = dict(re.findall(r"^# (Case|Expect|Launch): (.*)$", head, re.MULTILINE))
    assert sep and {"Case", "Expect", "Launch"} <= set(fields), f"{path.name}: header needs Case, Expect and Launch"
    return RealLog(fields["Case"], fields["Expect"], fields["Launch"], body)


def _lines(text: str) -> set[str]:
    """The stripped lines of ``text`` (split at newlines only: progress bars keep their carriage returns)."""
    return {line.strip() for line in text.split("\n")}


def test_every_recorded_case_has_its_actions_listed() -> None:
    assert {_read(p).case for p in REAL_LOG_FILES} == set(ACTIONS)


@pytest.mark.parametrize("path", REAL_LOG_FILES, ids=[p.stem for p in REAL_LOG_FILES])
def test_real_log_is_classified_as_its_expected_kind_with_a_line_of_it_and_advice(path: Path) -> None:
    log = _read(path)
    failure = classify(log.body, launch=log.launch)
    assert failure.kind == log.expect, failure
    assert failure.evidence and failure.evidence in _lines(log.body)
    missing = [action for action in ACTIONS[log.case] if action not in failure.suggestion]
    assert not missing, (missing, failure.suggestion)


def test_the_draft_hidden_size_mismatch_is_named_by_the_draft_code_and_shows_both_sizes() -> None:
    log = _read(REAL_LOGS / "draft_hidden_size.log")
    failure = classify(log.body)  # the draft's model file in the traceback decides, without the launch
    assert failure.kind == "draft_shape" and "(4096 vs. 2048)" in failure.evidence
    # the same shape check outside a draft model's code is no draft mismatch
    assert classify(failure.evidence + "\n").kind == "unknown"


def test_an_illegal_address_in_the_speculative_capture_is_a_kernel_fault_not_a_memory_problem() -> None:
    log = _read(REAL_LOGS / "adaptive_illegal_address.log")
    assert "Capture cuda graph failed" in log.body  # what made it cuda_graph before
    failure = classify(log.body)  # its frames in sglang/srt/speculative/ decide, without the launch
    assert failure.kind == "spec_kernel_fault" and "illegal memory access" in failure.evidence
    assert "not a memory-size problem" in failure.suggestion
    # the same capture failure outside the speculative path keeps the capture advice
    capture = "Exception: Capture cuda graph failed: CUDA error: an illegal memory access was encountered\n"
    assert classify(capture).kind == "cuda_graph"
    assert classify(capture, launch="python -m sglang.launch_server --speculative-algorithm EAGLE3").kind == \
        "spec_kernel_fault"


def test_a_capture_that_ran_out_of_memory_under_speculation_stays_a_capture_failure() -> None:
    body = (PUBLIC_EXCERPTS / "cuda_graph_oom_5285.log").read_text().partition("# ---\n")[2]
    failure = classify(body, launch="python -m sglang.launch_server --speculative-algorithm EAGLE3 "
                                    "--speculative-adaptive")
    assert "CUDA out of memory" in body and failure.kind == "cuda_graph"
    assert "lower --cuda-graph-max-bs" in failure.suggestion


def test_only_the_bind_error_of_the_real_logs_settles_a_start_on_its_own() -> None:
    settled = {(p.stem, line.strip()): found for p in REAL_LOG_FILES for line in _read(p).body.split("\n")
               if (found := fatal(line)) is not None}
    [(case, line)] = settled
    assert case == "port_in_use" and "error while attempting to bind on address" in line
    assert settled[(case, line)].kind == "port_in_use" and settled[(case, line)].evidence == line


def _start_errors() -> list[dict]:
    return [record for record in json.loads(RECORDS.read_text()) if record["outcome"] == "start_error"]


def test_recorded_start_errors_get_the_same_kind_now_but_where_a_new_kind_applies() -> None:
    records = _start_errors()
    assert set(RECLASSIFIED) <= {record["case"] for record in records}
    for record in records:
        command = re.search(r"^Command: (.*)$", record["message"], re.MULTILINE)
        recorded_evidence = re.search(r"^Evidence: (.*)$", record["message"], re.MULTILINE)
        assert command and recorded_evidence, record["case"]
        failure = classify(record["log_tail"], launch=command.group(1))  # the 60 lines the record kept
        assert failure.kind == RECLASSIFIED.get(record["case"], record["kind"]), (record["case"], failure)
        assert failure.evidence in _lines(record["log_tail"])
        if record["case"] not in RECLASSIFIED:
            assert (failure.evidence, failure.suggestion) == (recorded_evidence.group(1), record["suggestion"])


# -- the ready wait on a server that cannot bind its port but stays alive ------------------------------------

#: Prints the recorded log (argv[1]) up to and including "Waiting for application shutdown." after the bind
#: error, then lingers as SGLang 0.5.17 did (a minute or more) until it is stopped.
LINGER = """
import sys, time
body = open(sys.argv[1]).read().partition("# ---\\n")[2]
for line in body.split("\\n"):
    print(line, flush=True)
    if "Waiting for application shutdown" in line:
        break
time.sleep(600)
"""


class BindErrorServer(type(get_engine("sim"))):  # type: ignore[misc]
    """The simulated engine, but its server replays the recorded bind error and never exits on its own."""

    def launch_argv(self, variant, *, python, port, listen_host="127.0.0.1", options=None):  # noqa: ANN001, ANN201
        return [python, "-c", LINGER, os.environ["REPLAYED_LOG"]]


def test_a_bind_error_ends_the_ready_wait_while_the_server_lives_and_the_server_is_stopped(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    replayed = tmp_path / "port_in_use.log"  # under tmp_path, so the server's command line names the folder
    replayed.write_text((REAL_LOGS / "port_in_use.log").read_text())
    monkeypatch.setenv("REPLAYED_LOG", str(replayed))
    monkeypatch.setenv("WORKBENCH_SERVERS_DIR", str(tmp_path / "servers"))
    bind_line = next(line.strip() for line in _read(replayed).body.split("\n") if "Errno 98" in line)
    engine = BindErrorServer(**dataclasses.asdict(get_engine("sim")))
    with socket.socket() as taken:  # another listener holds the port and never answers, as in the recording
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        with pytest.raises(ServerStartError) as err:
            ServerHandle.start(load_variant("baseline"), engine=engine, port=taken.getsockname()[1],
                               python=sys.executable, ready_timeout_s=300, state_dir=str(tmp_path / "servers"))
    message = str(err.value)
    assert err.value.kind == "port_in_use" and f"\nEvidence: {bind_line}\n" in message
    # ended by the line while the process lived: neither an exit nor the 300 s limit
    assert "logged that it cannot start (its process was still running): port_in_use." in message, message
    assert "Waiting for application shutdown." in err.value.log_tail
    deadline = time.monotonic() + 10  # start() stopped it before raising; let the kernel reap the group
    while running_under(tmp_path) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not running_under(tmp_path)
    assert not list((tmp_path / "servers").glob("*.json"))  # its registry record went with it
