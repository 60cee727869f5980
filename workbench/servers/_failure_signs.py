"""Signs in a server log that :mod:`workbench.servers._failures` reads, and the advice written from them.

Pure patterns and strings, no I/O. Each is written from the place that raises or prints it: SGLang's own
source (the release, file and function are named beside each; the unpacked wheels under
``~/.cache/specbench-workbench/sglang/src/``), PyTorch's (``c10d``'s socket and TCPStore, the CUDA kernels'
asserts) and the CUDA runtime's error strings. The tails in ``tests/fixtures/sglang_logs_written/`` follow the
same raise sites, one per sign.
"""

from __future__ import annotations

import re

_M = re.MULTILINE
_I = re.IGNORECASE

# -- the draft does not fit the target ----------------------------------------------------------------------

#: A shape check that failed on a model dimension (a hidden size or a vocabulary): flashinfer/TVM-FFI's ``Check
#: failed: input.size(1) == weight.size(0) (4096 vs. 2048)`` (SGLang 0.5.17), a matmul or a weight loader refusing a
#: shape, ``torch.stack`` of per-step probabilities whose widths differ (0.5.17 ``EagleDraftWorker.draft_forward``
#: stacks the CUDA-graph runner's target-vocabulary buffer with the draft's own), and a broadcast or expand between
#: two sizes of four digits or more (hidden sizes and vocabularies are; the tokens of one step seldom are).
SHAPE_MISMATCH = re.compile(
    r"^.*(?:Check failed: [^\n]*\(\d+ vs\. \d+\)|The size of tensor a \(\d{4,}\) must match the size of tensor b "
    r"\(\d{4,}\)|The expanded size of the tensor \(\d{4,}\) must match the existing size \(\d{4,}\)|"
    r"stack expects each tensor to be equal size, but got \[[\d, ]+\] at entry \d+ and \[[\d, ]+\] at entry \d+|"
    r"mat1 and mat2 shapes cannot be multiplied|size mismatch for \S+: copying a param with shape|"
    r"Attempted to load weight \(.*\) into parameter).*$",
    _M,
)
#: A broadcast between two sizes of any width, for the draft's code when no spec v2 tree explains it.
BROADCAST_MISMATCH = re.compile(r"^.*The size of tensor a \(\d+\) must match the size of tensor b \(\d+\).*$", _M)
#: The draft's own code in the log's traceback: an EAGLE/MTP model file, a file of ``srt/speculative/`` named for
#: the draft (its CUDA-graph runners ``eagle_draft_cuda_graph_runner.py`` and ``eagle_draft_extend_...``,
#: ``draft_utils.py``), the draft runner or worker, or the draft's forward (``draft_forward``).
DRAFT_CODE = re.compile(
    r'File "[^"\n]*/sglang/srt/models/[^"/\n]*(?:eagle|mtp|nextn|draft)[^"/\n]*\.py"|'
    r'File "[^"\n]*/sglang/srt/speculative/[^"/\n]*draft[^"/\n]*\.py"|'
    r"\bdraft_(?:runner|worker|model_runner)\b|\bin draft_forward\b",
    _I,
)
#: A vocabulary check that names both sides: STANDALONE's (0.5.17 ``speculative/standalone_worker_v2.py``, "requires
#: the draft model to share the same vocabulary as the target model, but got target vocab_size=... and draft
#: vocab_size=...").
VOCABULARY_REFUSED = re.compile(r"^.*requires the draft model to share the same vocabulary as the target model.*$", _M)
DRAFT_SHAPE_SUGGESTION = (
    "The draft model's config does not match the target's: a hidden size (or vocabulary) mismatch between them "
    "(the evidence shows the two sizes). Use the draft trained for this target, and check the draft's config.json "
    "(hidden_size, target_hidden_size, vocab_size / draft_vocab_size) against the target's config.json (hidden_size, "
    "vocab_size)."
)

# -- spec v2 with tree drafting -----------------------------------------------------------------------------

#: Spec v2 in the log or the launch: its switch (SGLang 0.5.6-0.5.12), its worker's frames (the only worker from
#: 0.5.13, when ``speculative/eagle_worker.py`` left the wheel), its draft-extend step.
SPEC_V2 = re.compile(r"SGLANG_ENABLE_SPEC_V2=(?:1|true)|eagle_worker_v2|eagle_info_v2|_draft_extend_for_decode", _I)
#: Tree drafting: a topk above 1 on the command line, in ServerArgs as SGLang logs it, or in a message.
TOPK_ABOVE_1 = re.compile(r"(?:--speculative-eagle-topk[ =]|speculative_eagle_topk=|\btopk ?= ?)0*(?:[2-9]|[1-9]\d+)\b")
#: The release refusing the combination by name: 0.5.8-0.5.12 ``ServerArgs`` ("Spec v2 currently only supports topk = 1
#: for speculative decoding.") and 0.5.10-0.5.12 ``eagle_worker_v2.py`` at run time.
SPEC_V2_TOPK_REFUSED = re.compile(r"^.*Spec v2 currently only supports topk = 1.*$", _M)
#: A shape error on the tokens of a speculative step (the batch times topk times steps): a view or reshape that
#: does not fit (0.5.6 ``EAGLEWorkerV2.draft_forward`` reshapes ``out_cache_loc`` to ``(bs, topk, steps)``), 0.5.17's
#: own check of that layout (``eagle_utils.per_step_draft_out_cache_loc``: "out_cache_loc.shape[0]=... != batch_size
#: * topk * num_steps"), a broadcast or expand, an index past a dimension.
STEP_SHAPE = re.compile(
    r"^.*(?:shape '\[[-\d, ]*\]' is invalid for input of size \d+|out_cache_loc\.shape\[0\]=\d+ != batch_size \* topk|"
    r"The size of tensor a \(\d+\) must match the size of tensor b \(\d+\)|The expanded size of the tensor \(\d+\) "
    r"must match the existing size|index -?\d+ is out of bounds for dimension \d+ with size \d+).*$",
    _M,
)
SPEC_V2_TOPK_SUGGESTION = (
    "Spec v2 (SGLANG_ENABLE_SPEC_V2) with --speculative-eagle-topk > 1 breaks in the draft extend "
    "(sglang#13352, #14077): set speculative-eagle-topk = 1 (and num_draft_tokens = num_steps + 1), or drop "
    "SGLANG_ENABLE_SPEC_V2 to run tree drafting on spec v1."
)
SPEC_V2_TREE_SUGGESTION = (
    "Spec v2 (SGLANG_ENABLE_SPEC_V2 before SGLang 0.5.13, the only speculative worker since) with "
    "--speculative-eagle-topk > 1 failed a shape check of its draft step, or this release refuses the pair at start: "
    "set speculative-eagle-topk = 1 with num_draft_tokens = num_steps + 1 (chain drafting); on a release that still "
    "ships spec v1 (0.5.12 and earlier) unset SGLANG_ENABLE_SPEC_V2 to keep tree drafting there."
)

# -- a fault on the GPU in the speculative path -------------------------------------------------------------

#: A fault the GPU reports from inside a kernel (asynchronously: the Python frame may be a later call): the CUDA
#: runtime's strings, and the asserts of PyTorch's gather and index kernels ("index out of bounds", the
#: index-select kernels' ``srcIndex < srcSelectDimSize``).
DEVICE_FAULT = re.compile(
    r"^.*(?:an illegal memory access was encountered|an illegal instruction was encountered|"
    r"device-side assert(?:ion)? triggered|misaligned address|index out of bounds|cudaErrorIllegalAddress|"
    r"srcIndex < srcSelectDimSize|unspecified launch failure).*$",
    _M | _I,
)
#: The speculative path: its frames (``sglang/srt/speculative/``, the draft and verify CUDA-graph runners, the
#: draft's model code), or a launch with speculative flags (the command line, or ServerArgs as SGLang logs them).
SPEC_PATH = re.compile(
    r"/sglang/srt/speculative/|(?:draft|verify)\w*_cuda_graph_runner|/sglang/srt/models/[^\"/\n]*(?:eagle|mtp)|"
    r"--speculative-(?:algorithm|adaptive|draft-model-path)\b|speculative_algorithm='"
)
#: The target loaded again as its own draft: an EAGLE launch (the command line, or ServerArgs as SGLang logs them)
#: whose second weight load is of the target's own class (``type=LlamaForCausalLM`` twice). SGLang 0.5.17 does that
#: when --speculative-draft-model-path is missing (tests/fixtures/sglang_logs_real/eagle3_no_draft.log, an H100): the
#: copy takes a second set of full weights and the draft's full-depth KV pool then runs out of memory. An EAGLE draft
#: loads as its own class (``LlamaForCausalLMEagle3``); a STANDALONE draft may share the target's class, hence the
#: EAGLE launch.
EAGLE_LAUNCH = re.compile(r"--speculative-algorithm[ =]EAGLE3?\b|speculative_algorithm='EAGLE3?'", _I)
TARGET_AS_DRAFT = re.compile(
    r"Load weight end\.[^\n]*type=(?P<cls>\w+),[\s\S]*?^(?P<line>[^\n]*Load weight end\.[^\n]*type=(?P=cls),[^\n]*)$",
    _M,
)
TARGET_AS_DRAFT_SUGGESTION = (
    "EAGLE was started without --speculative-draft-model-path, so SGLang loaded the target checkpoint a second "
    "time as its own draft (the evidence: a second weight load of the target's class), and that copy's weights and "
    "full-depth KV pool did not fit: set draft_model_path in the variant to an EAGLE-3 draft trained for this "
    "target (the memory advice does not apply)."
)
#: Any out-of-memory line (CUDA's, PyTorch's) that the rule above ties to the target loaded as its own draft.
OUT_OF_MEMORY = re.compile(r"CUDA out of memory|OutOfMemoryError|CUDA error: out of memory", _I)
#: A grammar-constrained request beside it: frames of ``srt/constrained/`` or a grammar library, the grammar's
#: vocabulary mask in the speculative tree (0.5.17 ``eagle_worker_common.build_grammar_vocab_mask``,
#: ``GrammarMask.apply``; 0.5.9 ``spec_utils.generate_token_bitmask``, ``traverse_tree``), or a logged request whose
#: sampling parameters hold a grammar (``json_schema``, ``regex``, ``ebnf``, ``structural_tag``).
GRAMMAR = re.compile(
    r'File "[^"\n]*/(?:sglang/srt/constrained|xgrammar|llguidance|outlines)/|\b(?:apply_vocab_mask|'
    r"build_grammar_vocab_mask|generate_token_bitmask|apply_token_bitmask\w*|traverse_tree|grammar_mask\.apply)\b|"
    r"""['"]?\b(?:json_schema|regex|ebnf|structural_tag)\b['"]?\s*[:=]\s*['"{]"""
)
SPEC_KERNEL_FAULT_SUGGESTION = (
    "A device-side fault (illegal memory access, device-side assert, out-of-bounds index) in SGLang's speculative "
    "path: an SGLang bug there, not a memory-size problem (lowering --mem-fraction-static or --cuda-graph-max-bs "
    "will not fix it). Run the variant without the speculative feature it adds (e.g. drop --speculative-adaptive), "
    "try another --attention-backend, or set CUDA_LAUNCH_BLOCKING=1 to locate the kernel; report it upstream "
    "(https://github.com/sgl-project/sglang/issues) with the log."
)
_GRAMMAR_FAULT = (
    "A grammar-constrained request (json_schema / regex / ebnf) was being decoded beside it: the grammar's "
    "vocabulary mask meets the draft tree there, so send constrained requests to a server without speculation, or "
    "try another --grammar-backend (xgrammar, llguidance), and check the draft's vocabulary is the target's. "
)


def kernel_fault_advice(match: re.Match[str]) -> str:
    """The kernel fault's advice, led by the grammar's when a grammar-constrained request is in the log."""
    return (_GRAMMAR_FAULT if GRAMMAR.search(match.string) else "") + SPEC_KERNEL_FAULT_SUGGESTION


# -- a kernel never built for this GPU ----------------------------------------------------------------------

#: The CUDA runtime's ``cudaErrorNoKernelImageForDevice`` (and ``cudaErrorInvalidDeviceFunction``), or nvcc refusing
#: the architecture while a kernel is compiled just in time (flashinfer, deep_gemm).
GPU_ARCH = re.compile(
    r"^.*(?:no kernel image is available for execution on the device|cudaErrorNoKernelImageForDevice|"
    r"CUDA error: invalid device function|Unsupported gpu architecture '[^'\n]+').*$",
    _M | _I,
)
GPU_ARCH_SUGGESTION = (
    "A kernel was not built for this GPU's architecture (CUDA found no kernel image for the device): the installed "
    "torch / sgl-kernel / flashinfer builds lack it, which no memory or graph setting changes. Compare `nvidia-smi "
    "--query-gpu=name,compute_cap --format=csv` with `python -c 'import torch; print(torch.cuda.get_arch_list())'` "
    "on the host and install the builds whose CUDA version covers this GPU (the SGLang release's wheels for that "
    "CUDA); a kernel compiled at start-up (flashinfer) needs a CUDA toolkit that knows the GPU, with "
    "FLASHINFER_CUDA_ARCH_LIST / TORCH_CUDA_ARCH_LIST naming it and ~/.cache/flashinfer cleared. "
    "--attention-backend triton compiles its attention kernels for this GPU at run time."
)
_GPU_ARCH_IN_DRAFT = (
    " It failed in the draft's CUDA-graph capture, the first place the draft's attention backend and the "
    "speculative kernels run: --speculative-draft-attention-backend triton avoids a prebuilt kernel there when the "
    "draft's attention kernel is the one missing."
)


def gpu_arch_advice(match: re.Match[str]) -> str:
    """The missing kernel's advice, with the draft's attention backend when the draft's capture met it."""
    return GPU_ARCH_SUGGESTION + (_GPU_ARCH_IN_DRAFT if DRAFT_CODE.search(match.string) else "")


# -- an attention backend that refuses the algorithm ---------------------------------------------------------

#: The refusals with no exception name in the line (the forms quoted in public issues).
BACKEND_REFUSED_BARE = re.compile(
    r"^.*(?:Backend does not support speculative decoding|only supports topk ?= ?1 for speculative decoding|"
    r"speculative decoding is currently not supported with \S+ attention backend).*$",
    _M | _I,
)
#: An exception whose message names a backend (or attention), what speculation it refuses and how: 0.5.17's
#: ``draft_utils.DraftBackendFactory`` ("EAGLE is not supported in attention backend torch_native"), ServerArgs'
#: and ``arg_groups/speculative_hook.py``'s checks (Flex Attention, trtllm_mha with topk > 1, tree drafting with
#: ``page_size`` > 1 off flashinfer/fa3/triton), the backends' own (FlashMLA, Flashinfer MLA, hpc_ops, XPU, Aiter's
#: spec v2, the linear-attention and MiniMax backends, Frozen-KV MTP's topk > 1).
BACKEND_REFUSED = re.compile(
    r"^(?:\S+ )?[\w.]*(?:Error|Exception): (?=.*(?:[Bb]ackend|\b[Aa]ttention\b))"
    r"(?=.*(?:[Ss]peculative|EAGLE|MTP|topk|[Dd]raft))"
    r"(?=.*(?:not supported|n't support|does not support|only supports?|only supported|currently supports|is unstable|"
    r"not implemented)).*$",
    _M,
)
ATTENTION_BACKEND_SUGGESTION = (
    "The attention backend does not support speculative decoding as configured (the evidence names the backend and "
    "what it refuses): pick one that does (on NVIDIA GPUs fa3, flashinfer or triton: --attention-backend, and "
    "--speculative-draft-attention-backend for the draft), or change what it refuses: speculative-eagle-topk = 1 "
    "where a backend drafts only chains (the MLA backends, trtllm_mha), --page-size 1 for tree drafting on a paged "
    "backend, and one backend for prefill and decode (drop --prefill-attention-backend) where a hybrid refuses "
    "speculation (sglang#9330)."
)


def own_fix(line: str) -> str:
    """The sentences of an error line that tell the user what to do (SGLang's messages often end with one).

    Args:
        line: an exception line, e.g. ``ValueError: ... got attention_backend='flashmla'. Use page_size == 1 or
            one of those backends.``

    Returns:
        Those sentences joined (``Use page_size == 1 or one of those backends.``), or '' when there is none.
    """
    message = line.split(": ", 1)[-1]
    found = re.findall(
        r"(?:^|[.;,]\s+)((?:please\s+)?(?:use|set|re-run|rerun|pass|disable|enable|add|drop|remove)\b"
        r"(?:[^.;]|\.(?=\w))*\.?)",
        message,
        _I,
    )
    return " ".join(sentence.strip() for sentence in found)


def backend_advice(match: re.Match[str]) -> str:
    """The backend's refusal advice, quoting SGLang's own fix when its message gives one."""
    fix = own_fix(match.group(0))
    return ATTENTION_BACKEND_SUGGESTION + (f" SGLang's message says: {fix}" if fix else "")


# -- SGLang's server-argument checks ------------------------------------------------------------------------

#: A traceback whose last frame is in SGLang's server-argument checks (``srt/server_args.py``: ``__post_init__``,
#: its ``_handle_*`` steps and ``check_server_args``; ``srt/arg_groups/*_hook.py``; ``speculative/spec_info.py``'s,
#: ``spec_registry.py``'s and ``adaptive_spec_params.py``'s) and the ValueError, AssertionError or
#: NotImplementedError it raised there (a bare ``assert`` leaves only ``AssertionError``). Groups: ``file``,
#: ``line``, ``func``, ``source`` (the frame's source lines), ``error`` (the evidence).
SERVER_ARGS_REFUSED = re.compile(
    r'^[ \t]*File "[^"\n]*/sglang/(?P<file>srt/(?:server_args\.py|arg_groups/[^"/\n]+\.py|speculative/'
    r'(?:spec_info|spec_registry|adaptive_spec_params)\.py))", line (?P<line>\d+), in (?P<func>\S+)\n'
    r'(?P<source>(?:[ \t]+(?!File ")\S.*\n)*?)'
    r"(?P<error>(?:ValueError|AssertionError|NotImplementedError)(?:: .*)?)$",
    _M,
)
SERVER_ARGS_SUMMARY = (
    "SGLang's checks of its server arguments refused this launch (the evidence is the error; the advice names where "
    "it was raised and SGLang's own fix when its message gives one): change the flags (or env) it names in the "
    "variant, and run `workbench variants check` to check the variant against the release's source before "
    "launching."
)


def server_args_advice(match: re.Match[str]) -> str:
    """Where SGLang's server-argument check raised, what it said, and what to do."""
    error, fix = match.group("error"), own_fix(match.group("error"))
    source = " ".join(line.strip() for line in match.group("source").splitlines() if line.strip(" ^~\t"))
    where = f"{match.group('file')}:{match.group('line')} in {match.group('func')}"
    said = (
        f"SGLang's message says: {fix.rstrip('.')}"
        if fix
        else "Its message names the flags that cannot go together in this release"
        if ": " in error
        else f"A bare assert (`{source}`): read the check with `workbench inspect {match.group('func')} --sglang "
        "<the server's release> --source`"
    )
    return (
        f"SGLang's check of its server arguments refused this launch at {where} ({error}). {said}. Change "
        "those flags (or env) in the variant, and run `workbench variants check` to check it against the "
        "release's source before launching."
    )


# -- a server spanning nodes --------------------------------------------------------------------------------

#: torch.distributed's rendezvous at ``--dist-init-addr`` (``tcp://host:port``, 0.5.17 ``distributed/bootstrap.py``
#: then ``parallel_state.init_distributed_environment``): a client rank timing out on rank 0's TCPStore (c10d's
#: ``socket.cpp``: "The client socket has timed out after 600000ms while trying to connect to (host, port)",
#: sglang#2561),
#: failing to connect or to resolve the address, rank 0's store waiting for clients ("Timed out after N seconds
#: waiting for clients. 1/2 clients joined."), a store key never set ("wait timeout after Nms, keys: ..."), NCCL's
#: unique id never fetched from rank 0 through the store ("[1] is setting up NCCL communicator and retrieving
#: ncclUniqueId from [0] via c10d key-value store ..."), rank 0 unable to bind the port, or a peer's connection
#: closed (gloo's "Connection closed by peer"). Group ``where``: the ``(host, port)`` when the line names it.
RENDEZVOUS = re.compile(
    r"^.*(?:client socket has timed out after \d+m?s while trying to connect to (?P<where>\([^)\n]+\))?|"
    r"DistNetworkError|DistStoreError|waiting for clients\. \d+/\d+ clients joined|Connection closed by peer|"
    r"retr(?:ie|ei)ving ncclUniqueId from \[0\] via c10d key-value store|wait timeout after \d+ms, keys: |"
    r"client socket has failed to connect to|network addresses of \([^)\n]+\) cannot be retrieved|"
    r"server socket has failed to (?:bind|listen)).*$",
    _M,
)
_REACH = "check that every node reaches rank 0's address and port"
_MULTI_NODE_REST = (
    " (firewall, the right interface: GLOO_SOCKET_IFNAME / NCCL_SOCKET_IFNAME), that every rank got the same "
    "--nnodes and --dist-init-addr, and read the other ranks' log tails for the rank that failed first."
)
MULTI_NODE_SUGGESTION = (
    f"A rank of this multi-node server could not reach the others at --dist-init-addr, or lost them: {_REACH}"
    f"{_MULTI_NODE_REST}"
)
_TIMED_OUT = re.compile(r"timed out|[Tt]imeout|clients joined")
_TIMEOUT_REMEDY = (
    " Start every node's command within --dist-timeout of the first (each with its own --node-rank 0..nnodes-1), "
    "or raise --dist-timeout (seconds) when nodes start minutes apart (weights loading)."
)


def multi_node_advice(match: re.Match[str]) -> str:
    """The rendezvous advice, with the address to test, a timeout's remedy or a taken port's."""
    line, where = match.group(0), match.group("where")
    if "server socket has failed to" in line:
        return (
            "Rank 0 could not listen on the --dist-init-addr port (another process holds it on rank 0's node, "
            "or the address is not one of its own): pick a free port of rank 0's own address in "
            "--dist-init-addr (the same on every node; `ss -ltnp` there shows what holds it)."
        )
    test = ""
    if where:
        host, _, port = where.strip("()").partition(", ")
        test = f" (`nc -zv {host} {port}` from each node tests it)"
    return (
        f"A rank of this multi-node server could not reach the others at --dist-init-addr, or lost them: "
        f"{_REACH}{test}{_MULTI_NODE_REST}" + (_TIMEOUT_REMEDY if _TIMED_OUT.search(line) else "")
    )
