"""The start-failure classifier and the ready wait on real SGLang 0.5.17 failures, recorded on an NVIDIA H200.

``tests/fixtures/sglang_logs_real/`` holds the logs of SGLang launched wrong on purpose (each with its
``# Case``, ``# Expect: <kind>`` and ``# Launch:`` header, ending at ``# ---``);
``tests/fixtures/sglang_real/0.5.17/failures.json`` holds what the workbench said of each broken launch then
(kind, suggestion, the message with its evidence and command, the last 60 log lines); the records without a
``gpu`` were made on an NVIDIA H200, the two with ``"gpu": "NVIDIA H100 80GB HBM3"`` on an H100 (the KV-memory
breakage sized to that card: ``--mem-fraction-static 0.201``; EAGLE-3 without a draft path, recorded then as
``out_of_memory``). The taken port is also replayed by a real process
that writes the recorded lines and stays alive, as SGLang did for a minute or more; so is the H100's start with a
KV pool of 5,759 tokens, which is ready (with a warning), not failed.
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
from workbench.servers._kv_cache import KvCacheWarning, kv_pool
from workbench.servers._watch import READY_LINE
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
    "adaptive_illegal_address": (
        "drop --speculative-adaptive",
        "another --attention-backend",
        "CUDA_LAUNCH_BLOCKING=1",
        "report it upstream",
    ),
    "port_in_use": ("`ss -ltnp`", "start without port="),
    "eagle3_no_draft": ("--speculative-draft-model-path", "set draft_model_path", "memory advice does not apply"),
}
#: Records of failures.json whose kind the classifier now names differently (the kinds added since the recording).
RECLASSIFIED = {"draft_hidden_size": "draft_shape", "eagle3_no_draft": "eagle3_no_draft"}


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
    assert (
        classify(capture, launch="python -m sglang.launch_server --speculative-algorithm EAGLE3").kind
        == "spec_kernel_fault"
    )


def test_eagle3_without_a_draft_path_is_named_by_the_target_loaded_twice_not_by_its_out_of_memory() -> None:
    """SGLang 0.5.17 loaded the target again as its own draft (type=LlamaForCausalLM twice, 15.02 and 14.96 GB) and
    ran out of memory allocating that copy's KV pool: the recorded advice (lower --mem-fraction-static) was wrong."""
    log = _read(REAL_LOGS / "eagle3_no_draft.log")
    failure = classify(log.body, launch=log.launch)
    assert failure.kind == "eagle3_no_draft"
    assert "type=LlamaForCausalLM" in failure.evidence and "mem usage=14.96 GB" in failure.evidence
    # the log alone says EAGLE3 too (ServerArgs' speculative_algorithm='EAGLE3')
    assert classify(log.body).kind == "eagle3_no_draft"
    # a draft of its own class (an EAGLE-3 head) that ran out of memory is a memory problem
    own_class = log.body.replace("mem usage=14.96 GB", "x").replace(
        "type=LlamaForCausalLM, avail mem=48.52", "type=LlamaForCausalLMEagle3, avail mem=48.52"
    )
    assert "type=LlamaForCausalLMEagle3" in own_class and classify(own_class).kind == "out_of_memory"
    # a STANDALONE draft may share the target's class: without an EAGLE launch the out-of-memory stays one
    standalone = log.body.replace("speculative_algorithm='EAGLE3'", "speculative_algorithm='STANDALONE'")
    assert classify(standalone, launch="python -m sglang.launch_server --speculative-algorithm STANDALONE").kind == (
        "out_of_memory"
    )
    # the target loaded twice but nothing ran out of memory: not this rule
    assert classify(log.body.split("Scheduler hit an exception")[0], launch=log.launch).kind != "eagle3_no_draft"


def test_a_capture_that_ran_out_of_memory_under_speculation_stays_a_capture_failure() -> None:
    body = (PUBLIC_EXCERPTS / "cuda_graph_oom_5285.log").read_text().partition("# ---\n")[2]
    failure = classify(
        body, launch="python -m sglang.launch_server --speculative-algorithm EAGLE3 --speculative-adaptive"
    )
    assert "CUDA out of memory" in body and failure.kind == "cuda_graph"
    assert "lower --cuda-graph-max-bs" in failure.suggestion


def test_only_the_bind_error_of_the_real_logs_settles_a_start_on_its_own() -> None:
    settled = {
        (p.stem, line.strip()): found
        for p in REAL_LOG_FILES
        for line in _read(p).body.split("\n")
        if (found := fatal(line)) is not None
    }
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


def _like_sim(engine_class: type) -> object:
    """An instance of ``engine_class`` (a subclass of the simulated engine's class) with the simulated engine's
    settings, whether an engine is a dataclass of fields or states them in its class."""
    sim = get_engine("sim")
    return engine_class(**dataclasses.asdict(sim)) if dataclasses.is_dataclass(sim) else engine_class()


class BindErrorServer(type(get_engine("sim"))):  # type: ignore[misc]
    """The simulated engine, but its server replays the recorded bind error and never exits on its own."""

    def launch_argv(self, variant, *, python, port, listen_host="127.0.0.1", options=None):  # noqa: ANN001, ANN201
        return [python, "-c", LINGER, os.environ["REPLAYED_LOG"]]


def test_a_bind_error_ends_the_ready_wait_while_the_server_lives_and_the_server_is_stopped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    replayed = tmp_path / "port_in_use.log"  # under tmp_path, so the server's command line names the folder
    replayed.write_text((REAL_LOGS / "port_in_use.log").read_text())
    monkeypatch.setenv("REPLAYED_LOG", str(replayed))
    monkeypatch.setenv("WORKBENCH_SERVERS_DIR", str(tmp_path / "servers"))
    bind_line = next(line.strip() for line in _read(replayed).body.split("\n") if "Errno 98" in line)
    engine = _like_sim(BindErrorServer)
    with socket.socket() as taken:  # another listener holds the port and never answers, as in the recording
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        with pytest.raises(ServerStartError) as err:
            ServerHandle.start(
                load_variant("baseline"),
                engine=engine,
                port=taken.getsockname()[1],
                python=sys.executable,
                ready_timeout_s=300,
                state_dir=str(tmp_path / "servers"),
            )
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


# -- launches that did not fail: a KV pool too small for the model's context is said at ready, not raised --------


def _ready_records() -> list[dict]:
    return [record for record in json.loads(RECORDS.read_text()) if record["outcome"] == "ready"]


def test_the_kv_memory_launches_started_and_their_pools_are_called_too_small() -> None:
    records = {(r["case"], r.get("gpu", "NVIDIA H200")): r for r in _ready_records()}
    assert set(records) == {
        ("kv_cache_memory", "NVIDIA H200"),
        ("draft_vocab", "NVIDIA H200"),
        ("kv_cache_memory", "NVIDIA H100 80GB HBM3"),
    }
    h100 = records["kv_cache_memory", "NVIDIA H100 80GB HBM3"]
    assert h100["flags"] == {"mem-fraction-static": 0.201} and h100["ready_after_s"] == 83.0
    for record in records.values():  # nothing in their logs settles a start as failed
        assert all(fatal(line) is None for line in record["log_tail"].split("\n")), record["case"]
        assert READY_LINE in record["log_tail"]
    pools = {key: kv_pool(record["log_tail"]) for key, record in records.items()}
    assert {key: (p.tokens, p.max_running_requests, p.context_len) for key, p in pools.items() if p} == {
        ("kv_cache_memory", "NVIDIA H100 80GB HBM3"): (5759, 64, 131072),
        ("kv_cache_memory", "NVIDIA H200"): (47425, 64, 131072),
        ("draft_vocab", "NVIDIA H200"): (753504, 64, 131072),
    }
    line = pools["kv_cache_memory", "NVIDIA H100 80GB HBM3"].warning("real-baseline", mem_fraction=0.201)
    assert line == (
        "real-baseline: ready with a KV cache too small: 5,759 tokens (max_total_num_tokens, from its "
        "log), less than one request at the model's context of 131,072 tokens (prompts over 5,753 tokens "
        "are refused); 89 tokens per running request. Its figures would measure memory, not the variant: "
        "raise --mem-fraction-static (now 0.201) until the pool holds the load, or lower --context-length "
        "to the longest request you send."
    )
    assert pools["kv_cache_memory", "NVIDIA H200"].below_context  # 0.15 of the H200 left 47,425 tokens
    assert pools["draft_vocab", "NVIDIA H200"].warning("real-eagle3-chain") is None  # 753,504 tokens: room


#: Prints a recorded log tail (the file argv[1]) line by line, then lingers as a started server does.
REPLAY = """
import sys, time
for line in open(sys.argv[1]).read().split("\\n"):
    print(line, flush=True)
time.sleep(600)
"""


class ReplayedServer(type(get_engine("sim"))):  # type: ignore[misc]
    """The simulated engine, but its server writes a recorded log and stays alive."""

    def launch_argv(self, variant, *, python, port, listen_host="127.0.0.1", options=None):  # noqa: ANN001, ANN201
        return [python, "-c", REPLAY, os.environ["REPLAYED_LOG"]]


def test_the_h100_launch_with_a_tiny_kv_cache_is_ready_with_a_warning_not_a_failure(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    [record] = [r for r in _ready_records() if r.get("gpu") == "NVIDIA H100 80GB HBM3"]
    replayed = tmp_path / "kv_cache_memory.log"  # under tmp_path, so the server's command line names the folder
    replayed.write_text(record["log_tail"])
    monkeypatch.setenv("REPLAYED_LOG", str(replayed))
    engine = _like_sim(ReplayedServer)
    # a typical request of the default prompt set with 128 output tokens (the H100 adaptive run's mean prompt)
    with pytest.warns(KvCacheWarning) as caught:
        handle = ServerHandle.start(
            load_variant("baseline"),
            engine=engine,
            python=sys.executable,
            ready_timeout_s=60,
            state_dir=str(tmp_path / "servers"),
            request_tokens=2835 + 128,
        )
    try:
        assert handle.ready_after_s is not None and handle.alive  # ready: no ServerStartError
        assert handle.kv_pool is not None and (handle.kv_pool.tokens, handle.kv_pool.source) == (5759, "log")
        [warning] = [str(w.message) for w in caught if issubclass(w.category, KvCacheWarning)]
        assert warning.startswith(
            "baseline: ready with a KV cache too small: 5,759 tokens (max_total_num_tokens, "
            "from its log), less than one request at the model's context of 131,072 tokens"
        )
        assert (
            "room for 1 request of 2,963 tokens (prompt + output) at once where max_running_requests is 64" in warning
            and "\n" not in warning
        )
        assert "raise --mem-fraction-static" in warning and "lower --context-length" in warning
    finally:
        handle.stop()
    deadline = time.monotonic() + 10
    while running_under(tmp_path) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not running_under(tmp_path)
