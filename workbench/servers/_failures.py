"""Why a server failed to start, read from its log: a kind, the evidence line, and what to do.

:func:`classify` is a pure function of the log text. Rules are tried in a fixed
order and the first that matches wins, because one failure often mentions
another (a CUDA-graph capture that failed with "CUDA out of memory" is a capture
failure, whose fix differs from a weight-loading OOM; one that failed with an
illegal memory access in the speculative path is a kernel fault, whose fix is no
memory setting at all; one whose kernel was never built for the GPU is neither). Patterns
come from real SGLang logs quoted in public issues (``tests/fixtures/sglang_logs/``, each
excerpt with its source, checked by ``tests/test_servers_failures.py``), from SGLang 0.5.17
launched wrong on purpose on an NVIDIA H200 (``tests/fixtures/sglang_logs_real/``, checked by
``tests/test_real_sglang_failures.py``), and from log tails written from SGLang's own raise
sites, each naming the release, file and function it follows
(``tests/fixtures/sglang_logs_written/``, checked by ``tests/test_servers_failures_written.py``).

Kinds (:data:`KINDS`)::

    lease_expired   the workbench's host-side lease stopped it (no client heartbeat)
    cuda_graph      CUDA-graph capture failed
    out_of_memory   GPU memory: a CUDA OOM, or too little left for the KV cache
    port_in_use     the HTTP port (or an internal SGLang port) was taken
    bad_flags       argparse refused a flag, or SGLang refused a flag combination (a ValueError,
                    AssertionError or NotImplementedError raised by its server-argument checks: the
                    advice names where, and SGLang's own fix when its message gives one)
    import_error    the host's Python lacks a module (or has a mismatched one)
    gpu_arch        a kernel was not built for this GPU's architecture ("no kernel image is available for
                    execution on the device"), often first met in the draft's CUDA-graph capture
    spec_v2_topk    spec v2 (SGLANG_ENABLE_SPEC_V2, the only worker from 0.5.13) with topk > 1: a shape error in
                    the draft (its forward or its extend), or the release refusing the combination at start
    draft_weights   the draft checkpoint's weights do not match the architecture it is loaded as
    draft_shape     the draft's config does not match the target: a hidden size (or vocabulary) mismatch
                    between them, seen as a shape check failing in a draft model's code or in the draft's
                    CUDA-graph capture (its runner, its forward), or refused by name (STANDALONE's vocabulary check)
    spec_kernel_fault  a device-side fault (illegal memory access, device-side assert, out-of-bounds index or
                    gather) in the speculative path: an SGLang bug there, not a memory-size problem; the advice
                    names grammar-constrained decoding when a grammar's frames are beside it
    eagle3_no_draft EAGLE-3 without a draft model path: the target was loaded as its own draft
    attention_backend  the attention backend refuses speculation as configured (hybrid backends, MLA or
                    trtllm_mha with topk > 1, tree drafting on a paged backend, a backend the draft worker has
                    no EAGLE backend for, Flex Attention)
    custom_all_reduce  custom all-reduce on GPUs without peer access (PCIe)
    kv_pool_exhausted  the KV-cache pool ran out while serving (at runtime, not at start)
    scheduler_exception  SGLang's scheduler raised; the evidence is the last frame inside sglang
    multi_node      a server spanning nodes (``--nnodes``) lost its group: a rank could not reach
                    ``--dist-init-addr`` (torch.distributed's rendezvous or the TCPStore timed out, NCCL's
                    unique id never came from rank 0, the address did not resolve or its port was taken),
                    or a peer rank's connection closed
    timeout         still not ready when the ready timeout ran out (set by the caller)
    killed          it died mid-sweep leaving no error in its log: a signal (kill -9, the kernel's
                    OOM killer, a job scheduler) (set by :func:`died`)
    unknown         none of the above

The rules, each with its pattern, its conditions and its advice, are
:mod:`workbench.servers._failure_rules`' table (``RULES``), in the order they are tried.

Besides :func:`classify` (the whole log, once the wait is over), :func:`fatal` reads one line as it
arrives: a line that settles the start by itself although the process lives on (uvicorn could not bind
the HTTP port, and SGLang 0.5.17 then lingers a minute or more), so the ready wait ends at once.

Two things are read besides the patterns. Every line is read without a leading CI timestamp
(``2025-05-01T10:00:00.1234567Z ``, as GitHub Actions writes them; :func:`strip_prefixes`), so a
traceback copied from a CI log is classified like the same traceback from a terminal. And the
server's launch (its command line and environment, ``launch``), which the workbench knows even when
the log tail does not repeat it, counts for a rule's condition: a spec v2 shape error whose tail
carries neither ``SGLANG_ENABLE_SPEC_V2`` nor a spec v2 worker frame is still a spec v2 failure.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping, Sequence
from typing import Literal, get_args

from workbench.servers._failure_rules import RULES, import_suggestion

FailureKind = Literal[
    "lease_expired",
    "cuda_graph",
    "out_of_memory",
    "port_in_use",
    "bad_flags",
    "import_error",
    "gpu_arch",
    "spec_v2_topk",
    "draft_weights",
    "draft_shape",
    "spec_kernel_fault",
    "eagle3_no_draft",
    "attention_backend",
    "custom_all_reduce",
    "kv_pool_exhausted",
    "scheduler_exception",
    "multi_node",
    "timeout",
    "killed",
    "unknown",
]

#: Every kind :func:`classify` (or a caller, for ``timeout``) can report.
KINDS: tuple[str, ...] = get_args(FailureKind)


@dataclasses.dataclass(frozen=True)
class Failure:
    """A classified start failure.

    Attributes:
        kind: one of :data:`KINDS`.
        suggestion: one line telling the user what to try.
        evidence: the log line that decided it ('' when none did).
    """

    kind: FailureKind
    suggestion: str
    evidence: str = ""


_M = re.MULTILINE
_I = re.IGNORECASE

UNKNOWN_SUGGESTION = (
    "No known failure pattern in the log: read its tail below; the last Traceback or ERROR line "
    "usually names the cause."
)
TIMEOUT_SUGGESTION = (
    "It was still starting when the ready timeout ran out: raise ready_timeout_s (or "
    "WORKBENCH_READY_TIMEOUT_S) if weights are still loading or CUDA graphs still capturing, "
    "else look for a hang (NCCL, a download) in the log."
)


#: A CI runner's timestamp at the start of a line (GitHub Actions: ``2025-05-01T10:00:00.1234567Z ``).
_CI_PREFIX = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d+)?Z? ?", _M)


def strip_prefixes(log_text: str) -> str:
    """``log_text`` with each line's leading CI timestamp removed (the rest of every line kept)."""
    return _CI_PREFIX.sub("", log_text)


def classify(log_text: str, *, launch: str = "") -> Failure:
    """Classify a failed start from its log text.

    Args:
        log_text: the server's log (its tail is enough; a few hundred lines); CI timestamp prefixes
            are ignored (:func:`strip_prefixes`).
        launch: what the workbench knows of the server's launch: its command line and environment
            (``KEY=value`` words), e.g. from :func:`launch_text`; read by the rules' conditions
            only, never quoted as evidence. Default: nothing.

    Returns:
        The first rule that matches (see the module docstring for the order), or
        kind ``"unknown"``. ``evidence`` is the matching line, stripped (a part of one line of
        ``log_text``).
    """
    log_text = strip_prefixes(log_text)
    for rule in RULES:
        if not all(needed.search(log_text) or needed.search(launch) for needed in rule.requires):
            continue
        match = rule.pattern.search(log_text)
        if match is None:
            continue
        suggestion = rule.suggestion(match) if callable(rule.suggestion) else rule.suggestion
        return Failure(rule.kind, suggestion, match.group(rule.evidence or 0).strip())
    return _scheduler_exception(log_text) or Failure("unknown", UNKNOWN_SUGGESTION)


#: A line that settles a start by itself although the process may live on: the HTTP server could not bind its
#: address (asyncio's words, which uvicorn logs as ``ERROR:    [Errno 98] error while attempting to bind on address
#: ('127.0.0.1', 41023): address already in use``). SGLang 0.5.17 then logs "Waiting for application shutdown." and
#: lingers a minute or more (tests/fixtures/sglang_logs_real/port_in_use.log), while a health check reaches
#: whatever holds the port.
_FATAL = re.compile(r"error while attempting to bind on address", _I)


def fatal(line: str, *, launch: str = "") -> Failure | None:
    """The failure that one log line settles even while the server's process lives on, else None.

    The ready wait asks this of each line as it arrives, so a server that cannot start but
    has not exited (a taken port) ends the wait at once instead of at the ready timeout.

    Args:
        line: one log line (a CI timestamp prefix is ignored).
        launch: as :func:`classify`.

    Returns:
        The line's classification (its evidence is the line) when the line is one of
        :data:`_FATAL` and a rule names it (a bind error for a taken port: ``port_in_use``);
        None otherwise, also for a bind error no rule names, which is left to the wait's end.
    """
    if not _FATAL.search(line):
        return None
    found = classify(line, launch=launch)
    return found if found.kind != "unknown" else None


SCHEDULER_SUGGESTION = (
    "SGLang's scheduler raised: the evidence is the traceback's last frame inside sglang; read "
    "the log tail there, and try the variant without speculation (or on spec v1) to see "
    "whether speculation causes it."
)
_SCHEDULER_RAISED = re.compile(r"Scheduler hit an exception", _I)
_SGLANG_FRAME = re.compile(r'^\s*File "(?P<file>[^"]*/sglang/[^"]*)", line (?P<line>\d+), in (?P<func>\S+)\s*$', _M)
_EXCEPTION_LINE = re.compile(r"^(?:\S+ )?(?:[A-Za-z_.]*(?:Error|Exception)): .*$", _M)


def _scheduler_exception(log_text: str) -> Failure | None:
    """A scheduler traceback no rule explains: point at its last frame inside sglang (and the exception)."""
    if not _SCHEDULER_RAISED.search(log_text):
        return None
    start = list(_SCHEDULER_RAISED.finditer(log_text))[-1].start()
    frames = list(_SGLANG_FRAME.finditer(log_text, start))
    if not frames:
        return None
    last = frames[-1]
    raised = list(_EXCEPTION_LINE.finditer(log_text, last.end()))
    where = f"{last.group('file').split('/sglang/', 1)[-1]}:{last.group('line')} in {last.group('func')}"
    error = raised[0].group(0).strip() if raised else "the exception line is not in the log excerpt"
    spec = (
        " It is in SGLang's speculative worker: try the variant without speculation, or spec v1 "
        "(drop SGLANG_ENABLE_SPEC_V2), to see whether speculation causes it."
        if "/speculative/" in last.group("file")
        else ""
    )
    return Failure(
        "scheduler_exception",
        f"SGLang's scheduler raised inside sglang/{where} ({error}).{spec} Read the traceback in the log "
        "tail; search SGLang's issues for that frame.",
        last.group(0).strip(),
    )


#: :func:`classify` under the name the servers face exports.
classify_failure = classify


def launch_text(command: Sequence[str], env: Mapping[str, str] | None = None) -> str:
    """The ``launch`` of :func:`classify`: ``KEY=value`` words of ``env`` then the command line."""
    return " ".join([*(f"{k}={v}" for k, v in (env or {}).items()), *map(str, command)])


def timed_out(log_text: str, *, launch: str = "") -> Failure:
    """The failure of a server that never became ready but is still running.

    A known pattern in the log (e.g. a capture failure that hangs instead of
    exiting) wins; otherwise the kind is ``"timeout"``. ``launch``: as :func:`classify`.
    """
    found = classify(log_text, launch=launch)
    return found if found.kind != "unknown" else Failure("timeout", TIMEOUT_SUGGESTION)


KILLED_SUGGESTION = (
    "The server's processes are gone and its log names no error: it was killed by a signal "
    "(kill -9 by someone, the kernel's OOM killer: `dmesg | grep -i kill` on the host, or a job "
    "scheduler's limit). Run the same sweep again to resume it; the cut-short level is measured "
    "again."
)


#: uvicorn's line (SGLang's HTTP server; the simulator logs it too) when SIGTERM or SIGINT asks the server to stop.
_SHUTDOWN = re.compile(r"^.*\bShutting down\b.*$", _M)
STOPPED_SUGGESTION = (
    "The server was asked to stop while the level ran (its log says it was shutting down: SIGTERM "
    "or SIGINT from `workbench servers --stop`, a job scheduler or a host shutdown). Run the same "
    "sweep again to resume it; the cut-short level is measured again."
)


def died(log_text: str, *, launch: str = "") -> Failure:
    """The failure of a server whose processes ended while it was being measured.

    A known pattern in the log (an OOM, a scheduler exception) wins; otherwise the
    kind is ``"killed"``: a process that exits on its own leaves an error in its log,
    one killed by a signal leaves nothing (SIGKILL) or its shutdown line (SIGTERM,
    SIGINT: the evidence, with :data:`STOPPED_SUGGESTION`). The signal itself cannot be
    read: the server is not the workbench's child (it runs detached, in its own session).
    ``launch``: as :func:`classify`.
    """
    found = classify(log_text, launch=launch)
    if found.kind != "unknown":
        return found
    stopped = _SHUTDOWN.search(strip_prefixes(log_text))
    return (
        Failure("killed", STOPPED_SUGGESTION, stopped.group(0).strip())
        if stopped
        else Failure("killed", KILLED_SUGGESTION)
    )


def suggestions() -> dict[str, str]:
    """One suggestion per kind (the first rule's, for kinds with several): for docs and reports."""
    out: dict[str, str] = {}
    for rule in RULES:
        general = rule.suggestion if isinstance(rule.suggestion, str) else rule.summary
        if rule.kind not in out and general:
            out[rule.kind] = general
    out.setdefault("import_error", import_suggestion(""))
    out["timeout"] = TIMEOUT_SUGGESTION
    out["killed"] = KILLED_SUGGESTION
    out["scheduler_exception"] = SCHEDULER_SUGGESTION
    out["unknown"] = UNKNOWN_SUGGESTION
    return out


#: :func:`died` under the name the servers face exports (a server that died mid-sweep).
server_died = died
