"""The rules that classify a failed start, in the order :func:`workbench.servers._failures.classify` tries them.

Each :class:`Rule` names a kind, the pattern whose match is the evidence, what to do (a line, or one written
from the match) and the conditions that must also hold somewhere in the log or the server's launch. The first
rule that matches wins, so a rule sits before every rule whose words its failure also carries (the comment
above a rule says where that matters; :mod:`workbench.servers._failures` lists the kinds). The patterns and the
advice written from a match are :mod:`workbench.servers._failure_signs`'; the rest are here, beside their rules.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable
from typing import TYPE_CHECKING

from workbench.servers import _failure_signs as signs

if TYPE_CHECKING:  # the classifier module imports this table
    from workbench.servers._failures import FailureKind


@dataclasses.dataclass(frozen=True)
class Rule:
    """One rule: the kind a match means, and what to tell the user."""

    kind: FailureKind
    pattern: re.Pattern[str]
    #: What to do: a line, or one written from the match (``match.string`` is the whole log).
    suggestion: str | Callable[[re.Match[str]], str]
    #: Only counts when each of these also matches somewhere in the log or the launch.
    requires: tuple[re.Pattern[str], ...] = ()
    #: The group of ``pattern`` that is the evidence ('' for the whole match).
    evidence: str = ""
    #: The kind's suggestion in general, for :func:`~workbench.servers._failures.suggestions`, when ``suggestion`` is written from the match.
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


def import_suggestion(module: str) -> str:
    """What to do when the server's Python cannot import ``module`` ('' when the log does not name it)."""
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
REFUSED_COMBINATION = (
    "SGLang refused this combination of flags (or environment, e.g. SGLANG_ENABLE_SPEC_V2): read the "
    "error line and change the variant's flags/env accordingly."
)

RULES: tuple[Rule, ...] = (
    Rule(
        "lease_expired",
        re.compile(r"^.*\[workbench watchdog\] lease expired.*$", _M),
        "The host-side lease stopped it because no client heartbeat arrived in time: keep the notebook "
        "kernel alive, raise lease_s, or start it with detached=True to keep it without a client.",
    ),
    # A kernel never built for the GPU: before every capture, fault and scheduler rule that its error passes through
    # (SGLang wraps it as "Capture cuda graph failed: CUDA error: no kernel image ...").
    Rule("gpu_arch", signs.GPU_ARCH, signs.gpu_arch_advice, summary=signs.GPU_ARCH_SUGGESTION),
    # Speculative decoding (excerpts in tests/fixtures/sglang_logs, each with its issue).
    Rule(
        "spec_v2_topk",
        re.compile(r"^.*Sizes of tensors must match.*$", _M),
        signs.SPEC_V2_TOPK_SUGGESTION,
        requires=(signs.SPEC_V2,),
    ),
    # Before attention_backend, whose "only supports topk = 1 for speculative decoding" it also says.
    Rule("spec_v2_topk", signs.SPEC_V2_TOPK_REFUSED, signs.SPEC_V2_TREE_SUGGESTION),
    Rule(
        "eagle3_no_draft",
        re.compile(r"^.*object has no attribute '(?:set_embed|hot_token_id)'.*$", _M),
        "EAGLE-3 was started without --speculative-draft-model-path, so the target checkpoint was loaded as its "
        "own draft and is not an EAGLE-3 head (sglang#36528): set draft_model_path in the variant to an EAGLE-3 "
        "draft trained for this target.",
    ),
    # SGLang 0.5.17 on an H100 (tests/fixtures/sglang_logs_real/eagle3_no_draft.log): the missing draft path did not
    # reach set_embed; the second copy of the target ran out of memory allocating the draft's KV pool. Before the
    # memory rules, whose advice (lower --mem-fraction-static) would not help.
    Rule(
        "eagle3_no_draft",
        signs.TARGET_AS_DRAFT,
        signs.TARGET_AS_DRAFT_SUGGESTION,
        requires=(signs.EAGLE_LAUNCH, signs.OUT_OF_MEMORY),
        evidence="line",
    ),
    Rule(
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
    Rule("draft_shape", signs.SHAPE_MISMATCH, signs.DRAFT_SHAPE_SUGGESTION, requires=(signs.DRAFT_CODE,)),
    Rule("draft_shape", signs.VOCABULARY_REFUSED, signs.DRAFT_SHAPE_SUGGESTION),
    Rule("spec_v2_topk", signs.STEP_SHAPE, signs.SPEC_V2_TREE_SUGGESTION, requires=(signs.SPEC_V2, signs.TOPK_ABOVE_1)),
    Rule("draft_shape", signs.BROADCAST_MISMATCH, signs.DRAFT_SHAPE_SUGGESTION, requires=(signs.DRAFT_CODE,)),
    # SGLang 0.5.17 on an H200 (tests/fixtures/sglang_logs_real/adaptive_illegal_address.log): --speculative-adaptive
    # hit an illegal memory access capturing the draft-extend CUDA graph. Before cuda_graph, whose memory advice
    # is wrong for a fault; a capture that ran out of memory has no device fault and stays cuda_graph.
    Rule(
        "spec_kernel_fault",
        signs.DEVICE_FAULT,
        signs.kernel_fault_advice,
        requires=(signs.SPEC_PATH,),
        summary=signs.SPEC_KERNEL_FAULT_SUGGESTION,
    ),
    # Before bad_flags: SGLang's server-argument checks raise most of these.
    Rule(
        "attention_backend",
        signs.BACKEND_REFUSED_BARE,
        signs.backend_advice,
        summary=signs.ATTENTION_BACKEND_SUGGESTION,
    ),
    Rule("attention_backend", signs.BACKEND_REFUSED, signs.backend_advice),
    Rule(
        "custom_all_reduce",
        re.compile(r"^.*peer access is not supported between these two devices.*$", _M),
        "Custom all-reduce needs GPU peer access, which these GPUs (PCIe, no NVLink/P2P) lack (sglang#4814): add "
        "disable-custom-all-reduce = true to the variant's flags.",
    ),
    Rule(
        "kv_pool_exhausted",
        re.compile(r"^.*(?:No space left for only one request|KV cache pool is full|Decode out of memory).*$", _M),
        "The KV-cache pool ran out while serving (the server had started): this level's requests in flight, "
        "their context and the draft tokens each step reserves exceed the pool. Lower the concurrency or "
        "--max-running-requests, use fewer --speculative-num-draft-tokens, or raise --mem-fraction-static "
        "(the opposite of an out-of-memory at start).",
    ),
    Rule(
        "cuda_graph",
        re.compile(r"^.*Capture cuda graph failed.*$", _M | _I),
        "CUDA-graph capture failed: lower --cuda-graph-max-bs (e.g. 16) or --mem-fraction-static (e.g. 0.8); "
        "--disable-cuda-graph avoids it at a large speed cost; a NCCL/custom all-reduce error here may need "
        "--disable-custom-all-reduce.",
    ),
    # A traceback out of the capture code that the excerpt cut before its last line.
    Rule(
        "cuda_graph",
        re.compile(r"^.*cuda_graph_runner\.py.*$", _M),
        "CUDA-graph capture failed: lower --cuda-graph-max-bs (e.g. 16) or --mem-fraction-static (e.g. 0.8); "
        "--disable-cuda-graph avoids it at a large speed cost.",
        requires=(re.compile(r"Capture cuda graph begin(?![\s\S]*Capture cuda graph end)", _I),),
    ),
    # Profiling at start-up found a negative budget for the KV cache (the weights, the draft and the graphs'
    # reserve already take more than --mem-fraction-static leaves): "max_total_tokens=131072 is larger than
    # the profiled value -561981" (sglang#7691), or the count or memory left logged negative.
    Rule(
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
    Rule(
        "out_of_memory",
        re.compile(r"^.*Not enough memory(?:\.| to allocate KV cache).*$", _M),
        "The weights leave too little GPU memory for the KV cache: raise --mem-fraction-static (e.g. 0.9), "
        "spread the model over more GPUs (--tp-size), or lower --context-length / --max-running-requests.",
    ),
    Rule(
        "out_of_memory",
        re.compile(r"^.*(?:CUDA out of memory|OutOfMemoryError|CUDA error: out of memory).*$", _M | _I),
        "The GPUs ran out of memory: check that nothing else holds them (nvidia-smi, `workbench servers`), "
        "lower --mem-fraction-static (e.g. 0.8) or --cuda-graph-max-bs, or use more GPUs (--tp-size).",
    ),
    # A multi-node server (--nnodes > 1): torch.distributed's rendezvous at --dist-init-addr (signs.RENDEZVOUS).
    Rule("multi_node", signs.RENDEZVOUS, signs.multi_node_advice, summary=signs.MULTI_NODE_SUGGESTION),
    Rule(
        "port_in_use",
        re.compile(
            r"^.*(?:address already in use|Errno 98\]|EADDRINUSE|is not available in \d+ seconds|"
            r"port \d+ is (?:already )?in use).*$",
            _M | _I,
        ),
        "A port the server needs is taken on the host: stop what holds it (`workbench servers --host HOST`, "
        "`ss -ltnp`) or start without port= so the workbench picks a free one.",
    ),
    Rule(
        "bad_flags",
        re.compile(
            r"^\S[^\n]*: error: (?:unrecognized arguments|argument |the following arguments are required|"
            r"invalid choice).*$",
            _M,
        ),
        "A launch flag was refused by this SGLang version's argument parser: check its spelling (dashes, "
        "not underscores) against `python -m sglang.launch_server --help` on the host and fix the variant.",
    ),
    Rule(
        "import_error",
        re.compile(
            r"^.*(?:ModuleNotFoundError: No module named '(?P<module>[^']+)'|ImportError: .*?(?:from|named) "
            r"'(?P<module2>[^']+)'|ImportError: .*)$",
            _M,
        ),
        lambda m: import_suggestion(m.group("module") or m.group("module2") or ""),
    ),
    Rule(
        "bad_flags",
        re.compile(
            r"^(?:\S+ )?(?:ValueError|AssertionError|NotImplementedError): .*(?:not (?:compatible|supported)|"
            r"only supports|requires|must be|cannot be).*$",
            _M,
        ),
        REFUSED_COMBINATION,
    ),
    # The rest of SGLang's server-argument checks (other words, a bare assert): where it raised, and its own fix.
    Rule(
        "bad_flags",
        signs.SERVER_ARGS_REFUSED,
        signs.server_args_advice,
        evidence="error",
        summary=signs.SERVER_ARGS_SUMMARY,
    ),
    # The simulator logs SGLang's refusals without an exception name.
    Rule(
        "bad_flags",
        re.compile(r"^.*(?:currently only supports|SGLang asserts here|is not a choice in SGLang).*$", _M),
        REFUSED_COMBINATION,
    ),
)
