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
from collections.abc import Callable, Mapping, Sequence
from typing import Literal, get_args

from workbench.servers import _failure_signs as signs

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


@dataclasses.dataclass(frozen=True)
class _Rule:
    kind: FailureKind
    pattern: re.Pattern[str]
    #: What to do: a line, or one written from the match (``match.string`` is the whole log).
    suggestion: str | Callable[[re.Match[str]], str]
    #: Only counts when each of these also matches somewhere in the log or the launch.
    requires: tuple[re.Pattern[str], ...] = ()
    #: The group of ``pattern`` that is the evidence ('' for the whole match).
    evidence: str = ""
    #: The kind's suggestion in general, for :func:`suggestions`, when ``suggestion`` is written from the match.
    summary: str = ""


#: What to do when the server's Python cannot import a top-level package, by package.
_IMPORT_SUGGESTIONS = {
    "sglang": (
        "SGLang is not installed for the Python that ran the server: pass python=<the SGLang "
        "environment's interpreter> (or set WORKBENCH_REMOTE_PYTHON) or `pip install sglang` there."
    ),
    "workbench": (
        "The workbench package was not found on the host: it is uploaded for engine='sim'; "
        "check the upload directory under ~/.cache/specbench-workbench/remote is readable."
    ),
}
#: Compiled dependencies of SGLang: reinstall the release's matching wheels.
_COMPILED = ("sgl_kernel", "flashinfer", "vllm", "torch")


def _import_suggestion(module: str) -> str:
    top = module.split(".")[0]
    if top in _IMPORT_SUGGESTIONS:
        return _IMPORT_SUGGESTIONS[top]
    if top in _COMPILED:
        return (
            f"The host Python cannot import {module!r} (a compiled dependency of SGLang): reinstall the "
            "SGLang release's matching wheels (sgl-kernel, flashinfer, torch) in that environment."
        )
    name = f"{module!r}" if module else "a module"
    return (
        f"The host Python cannot import {name}: `pip install` it into the server's environment, or point "
        "python= (or WORKBENCH_REMOTE_PYTHON) at an environment that has it."
    )


_M = re.MULTILINE
_I = re.IGNORECASE
_REFUSED_COMBINATION = (
    "SGLang refused this combination of flags (or environment, e.g. SGLANG_ENABLE_SPEC_V2): read the "
    "error line and change the variant's flags/env accordingly."
)

_RULES: tuple[_Rule, ...] = (
    _Rule(
        "lease_expired",
        re.compile(r"^.*\[workbench watchdog\] lease expired.*$", _M),
        "The host-side lease stopped it because no client heartbeat arrived in time: keep the notebook "
        "kernel alive, raise lease_s, or start it with detached=True to keep it without a client.",
    ),
    # A kernel never built for the GPU: before every capture, fault and scheduler rule that its error passes through
    # (SGLang wraps it as "Capture cuda graph failed: CUDA error: no kernel image ...").
    _Rule("gpu_arch", signs.GPU_ARCH, signs.gpu_arch_advice, summary=signs.GPU_ARCH_SUGGESTION),
    # Speculative decoding (excerpts in tests/fixtures/sglang_logs, each with its issue).
    _Rule(
        "spec_v2_topk",
        re.compile(r"^.*Sizes of tensors must match.*$", _M),
        signs.SPEC_V2_TOPK_SUGGESTION,
        requires=(signs.SPEC_V2,),
    ),
    # Before attention_backend, whose "only supports topk = 1 for speculative decoding" it also says.
    _Rule("spec_v2_topk", signs.SPEC_V2_TOPK_REFUSED, signs.SPEC_V2_TREE_SUGGESTION),
    _Rule(
        "eagle3_no_draft",
        re.compile(r"^.*object has no attribute '(?:set_embed|hot_token_id)'.*$", _M),
        "EAGLE-3 was started without --speculative-draft-model-path, so the target checkpoint was loaded as its "
        "own draft and is not an EAGLE-3 head (sglang#36528): set draft_model_path in the variant to an EAGLE-3 "
        "draft trained for this target.",
    ),
    # SGLang 0.5.17 on an H100 (tests/fixtures/sglang_logs_real/eagle3_no_draft.log): the missing draft path did not
    # reach set_embed; the second copy of the target ran out of memory allocating the draft's KV pool. Before the
    # memory rules, whose advice (lower --mem-fraction-static) would not help.
    _Rule(
        "eagle3_no_draft",
        signs.TARGET_AS_DRAFT,
        signs.TARGET_AS_DRAFT_SUGGESTION,
        requires=(signs.EAGLE_LAUNCH, signs.OUT_OF_MEMORY),
        evidence="line",
    ),
    _Rule(
        "draft_weights",
        re.compile(r"^.*KeyError: '[^']*'.*$", _M),
        "The draft checkpoint's weight names do not match the architecture SGLang loads it as: check its "
        "config.json `architectures` (an EAGLE-3 head is e.g. LlamaForCausalLMEagle3), use a draft converted for "
        "SGLang, and make --speculative-algorithm match the draft (EAGLE vs EAGLE3).",
        requires=(re.compile(r"load_weights"),),
    ),
    # SGLang 0.5.17 on an H200 (tests/fixtures/sglang_logs_real/draft_hidden_size.log): an EAGLE-3 draft with
    # hidden_size 2048 against a 4096 target failed flashinfer's rmsnorm check inside the draft's CUDA-graph
    # capture, before any capture or scheduler rule could name it. A model dimension (a hidden size, a vocabulary)
    # in the draft's code, its runner or its forward; then spec v2's tree, whose shape errors are on the tokens of
    # a step; then any broadcast left in the draft's code.
    _Rule("draft_shape", signs.SHAPE_MISMATCH, signs.DRAFT_SHAPE_SUGGESTION, requires=(signs.DRAFT_CODE,)),
    _Rule("draft_shape", signs.VOCABULARY_REFUSED, signs.DRAFT_SHAPE_SUGGESTION),
    _Rule(
        "spec_v2_topk", signs.STEP_SHAPE, signs.SPEC_V2_TREE_SUGGESTION, requires=(signs.SPEC_V2, signs.TOPK_ABOVE_1)
    ),
    _Rule("draft_shape", signs.BROADCAST_MISMATCH, signs.DRAFT_SHAPE_SUGGESTION, requires=(signs.DRAFT_CODE,)),
    # SGLang 0.5.17 on an H200 (tests/fixtures/sglang_logs_real/adaptive_illegal_address.log): --speculative-adaptive
    # hit an illegal memory access capturing the draft-extend CUDA graph. Before cuda_graph, whose memory advice
    # is wrong for a fault; a capture that ran out of memory has no device fault and stays cuda_graph.
    _Rule(
        "spec_kernel_fault",
        signs.DEVICE_FAULT,
        signs.kernel_fault_advice,
        requires=(signs.SPEC_PATH,),
        summary=signs.SPEC_KERNEL_FAULT_SUGGESTION,
    ),
    # Before bad_flags: SGLang's server-argument checks raise most of these.
    _Rule(
        "attention_backend",
        signs.BACKEND_REFUSED_BARE,
        signs.backend_advice,
        summary=signs.ATTENTION_BACKEND_SUGGESTION,
    ),
    _Rule("attention_backend", signs.BACKEND_REFUSED, signs.backend_advice),
    _Rule(
        "custom_all_reduce",
        re.compile(r"^.*peer access is not supported between these two devices.*$", _M),
        "Custom all-reduce needs GPU peer access, which these GPUs (PCIe, no NVLink/P2P) lack (sglang#4814): add "
        "disable-custom-all-reduce = true to the variant's flags.",
    ),
    _Rule(
        "kv_pool_exhausted",
        re.compile(r"^.*(?:No space left for only one request|KV cache pool is full|Decode out of memory).*$", _M),
        "The KV-cache pool ran out while serving (the server had started): this level's requests in flight, "
        "their context and the draft tokens each step reserves exceed the pool. Lower the concurrency or "
        "--max-running-requests, use fewer --speculative-num-draft-tokens, or raise --mem-fraction-static "
        "(the opposite of an out-of-memory at start).",
    ),
    _Rule(
        "cuda_graph",
        re.compile(r"^.*Capture cuda graph failed.*$", _M | _I),
        "CUDA-graph capture failed: lower --cuda-graph-max-bs (e.g. 16) or --mem-fraction-static (e.g. 0.8); "
        "--disable-cuda-graph avoids it at a large speed cost; a NCCL/custom all-reduce error here may need "
        "--disable-custom-all-reduce.",
    ),
    # A traceback out of the capture code that the excerpt cut before its last line.
    _Rule(
        "cuda_graph",
        re.compile(r"^.*cuda_graph_runner\.py.*$", _M),
        "CUDA-graph capture failed: lower --cuda-graph-max-bs (e.g. 16) or --mem-fraction-static (e.g. 0.8); "
        "--disable-cuda-graph avoids it at a large speed cost.",
        requires=(re.compile(r"Capture cuda graph begin(?![\s\S]*Capture cuda graph end)", _I),),
    ),
    # Profiling at start-up found a negative budget for the KV cache (the weights, the draft and the graphs'
    # reserve already take more than --mem-fraction-static leaves): "max_total_tokens=131072 is larger than
    # the profiled value -561981" (sglang#7691), or the count or memory left logged negative.
    _Rule(
        "out_of_memory",
        re.compile(
            r"^.*(?:profiled value -\d|max_total_num_tokens\s*[=:]\s*-\d|#tokens:\s*-\d|(?:rest|avail(?:able)?)[_ ]"
            r"(?:gpu[_ ])?mem(?:ory)?\s*[=:]\s*-\d).*$",
            _M | _I,
        ),
        "Profiling GPU memory at start-up left a negative budget for the KV cache: the weights (with the "
        "draft model and the CUDA-graph reserve) take more than --mem-fraction-static leaves. Raise "
        "--mem-fraction-static (e.g. 0.9), spread the model over more GPUs (--tp-size), or lower "
        "--cuda-graph-max-bs; check nothing else holds GPU memory (nvidia-smi).",
    ),
    _Rule(
        "out_of_memory",
        re.compile(r"^.*Not enough memory(?:\.| to allocate KV cache).*$", _M),
        "The weights leave too little GPU memory for the KV cache: raise --mem-fraction-static (e.g. 0.9), "
        "spread the model over more GPUs (--tp-size), or lower --context-length / --max-running-requests.",
    ),
    _Rule(
        "out_of_memory",
        re.compile(r"^.*(?:CUDA out of memory|OutOfMemoryError|CUDA error: out of memory).*$", _M | _I),
        "The GPUs ran out of memory: check that nothing else holds them (nvidia-smi, `workbench servers`), "
        "lower --mem-fraction-static (e.g. 0.8) or --cuda-graph-max-bs, or use more GPUs (--tp-size).",
    ),
    # A multi-node server (--nnodes > 1): torch.distributed's rendezvous at --dist-init-addr (signs.RENDEZVOUS).
    _Rule("multi_node", signs.RENDEZVOUS, signs.multi_node_advice, summary=signs.MULTI_NODE_SUGGESTION),
    _Rule(
        "port_in_use",
        re.compile(
            r"^.*(?:address already in use|Errno 98\]|EADDRINUSE|is not available in \d+ seconds|"
            r"port \d+ is (?:already )?in use).*$",
            _M | _I,
        ),
        "A port the server needs is taken on the host: stop what holds it (`workbench servers --host HOST`, "
        "`ss -ltnp`) or start without port= so the workbench picks a free one.",
    ),
    _Rule(
        "bad_flags",
        re.compile(
            r"^\S[^\n]*: error: (?:unrecognized arguments|argument |the following arguments are required|"
            r"invalid choice).*$",
            _M,
        ),
        "A launch flag was refused by this SGLang version's argument parser: check its spelling (dashes, "
        "not underscores) against `python -m sglang.launch_server --help` on the host and fix the variant.",
    ),
    _Rule(
        "import_error",
        re.compile(
            r"^.*(?:ModuleNotFoundError: No module named '(?P<module>[^']+)'|ImportError: .*?(?:from|named) "
            r"'(?P<module2>[^']+)'|ImportError: .*)$",
            _M,
        ),
        lambda m: _import_suggestion(m.group("module") or m.group("module2") or ""),
    ),
    _Rule(
        "bad_flags",
        re.compile(
            r"^(?:\S+ )?(?:ValueError|AssertionError|NotImplementedError): .*(?:not (?:compatible|supported)|"
            r"only supports|requires|must be|cannot be).*$",
            _M,
        ),
        _REFUSED_COMBINATION,
    ),
    # The rest of SGLang's server-argument checks (other words, a bare assert): where it raised, and its own fix.
    _Rule(
        "bad_flags",
        signs.SERVER_ARGS_REFUSED,
        signs.server_args_advice,
        evidence="error",
        summary=signs.SERVER_ARGS_SUMMARY,
    ),
    # The simulator logs SGLang's refusals without an exception name.
    _Rule(
        "bad_flags",
        re.compile(r"^.*(?:currently only supports|SGLang asserts here|is not a choice in SGLang).*$", _M),
        _REFUSED_COMBINATION,
    ),
)

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
    for rule in _RULES:
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
    for rule in _RULES:
        general = rule.suggestion if isinstance(rule.suggestion, str) else rule.summary
        if rule.kind not in out and general:
            out[rule.kind] = general
    out.setdefault("import_error", _import_suggestion(""))
    out["timeout"] = TIMEOUT_SUGGESTION
    out["killed"] = KILLED_SUGGESTION
    out["scheduler_exception"] = SCHEDULER_SUGGESTION
    out["unknown"] = UNKNOWN_SUGGESTION
    return out


#: :func:`died` under the name the servers face exports (a server that died mid-sweep).
server_died = died
