"""The start-failure classifier on log tails written from SGLang's own raise sites (tests/fixtures/sglang_logs_written).

Each fixture names, in its header, the release, file and function it follows (``# Written:``), what went wrong
(``# Case:``), the kind it must get (``# Expect:``) and, where the workbench would know it, the server's launch
(``# Launch:``). The tests check each kind with the advice a user acts on, that the generic kinds (a scheduler
traceback's last frame, unknown) never swallow them, and that the new rules leave the older kinds' cases alone.
"""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import pytest

from workbench.servers._failure_signs import own_fix
from workbench.servers._failure_rules import REFUSED_COMBINATION
from workbench.servers._failures import _scheduler_exception, classify, suggestions

WRITTEN = Path(__file__).parent / "fixtures" / "sglang_logs_written"
WRITTEN_FILES = sorted(WRITTEN.glob("*.log"))
PUBLIC = Path(__file__).parent / "fixtures" / "sglang_logs"

#: What each tail's suggestion must tell the user to do (a flag, a setting, a command).
ACTIONS = {
    "attention_backend_draft_factory": (
        "--attention-backend",
        "fa3, flashinfer or triton",
        "--speculative-draft-attention-backend",
    ),
    "attention_backend_paged_tree": (
        "--page-size 1",
        "SGLang's message says: Use page_size == 1 or one of those backends.",
    ),
    "bad_flags_bare_assert": (
        "arg_groups/speculative_hook.py:592 in _handle_eagle_family",
        "`workbench inspect _handle_eagle_family --sglang",
        "`workbench variants check`",
    ),
    "bad_flags_spec_hook_assert": (
        "arg_groups/speculative_hook.py:133 in handle_speculative_decoding",
        "names the flags",
        "`workbench variants check`",
    ),
    "draft_shape_hidden_draft_graph": ("Use the draft trained for this target", "hidden_size"),
    "draft_shape_vocab_draft_graph": ("Use the draft trained for this target", "vocab_size / draft_vocab_size"),
    "gpu_arch_draft_graph": (
        "compute_cap",
        "torch.cuda.get_arch_list()",
        "FLASHINFER_CUDA_ARCH_LIST",
        "--speculative-draft-attention-backend triton",
    ),
    "multi_node_nccl_unique_id": ("--dist-init-addr", "--node-rank", "raise --dist-timeout"),
    "multi_node_rank0_waiting": ("--dist-init-addr", "GLOO_SOCKET_IFNAME", "raise --dist-timeout"),
    "spec_kernel_fault_gather": ("not a memory-size problem", "CUDA_LAUNCH_BLOCKING=1", "another --attention-backend"),
    "spec_kernel_fault_grammar": (
        "grammar-constrained request",
        "another --grammar-backend",
        "to a server without speculation",
        "CUDA_LAUNCH_BLOCKING=1",
    ),
    "spec_v2_topk_out_cache_loc": ("speculative-eagle-topk = 1", "num_draft_tokens = num_steps + 1"),
    "spec_v2_topk_refused": ("speculative-eagle-topk = 1", "unset SGLANG_ENABLE_SPEC_V2"),
    "spec_v2_topk_reshape": ("speculative-eagle-topk = 1", "unset SGLANG_ENABLE_SPEC_V2"),
}
#: The kinds the written tails name (besides those of the public excerpts and the recorded logs).
NAMED = {"gpu_arch", "spec_v2_topk", "draft_shape", "spec_kernel_fault", "attention_backend", "bad_flags", "multi_node"}


@dataclasses.dataclass(frozen=True)
class Tail:
    stem: str
    written: str
    expect: str
    launch: str
    body: str


def _read(path: Path) -> Tail:
    head, sep, body = path.read_text().partition("# ---\n")
    assert sep, f"{path.name}: no '# ---' line after the header"
    fields = dict(re.findall(r"^# (Case|Expect|Launch): (.*)$", head, re.MULTILINE))
    written = re.search(
        r"^# Written: from SGLang (\d+\.\d+\.\d+)'s source.*not copied from any report", head, re.MULTILINE | re.DOTALL
    )
    assert written and {"Case", "Expect"} <= set(fields), f"{path.name}: header needs Written, Case and Expect"
    return Tail(path.stem, written.group(1), fields["Expect"], fields.get("Launch", ""), body)


def _lines(text: str) -> set[str]:
    return {line.strip() for line in text.split("\n")}


def test_every_written_tail_has_its_actions_and_the_kinds_are_covered() -> None:
    tails = [_read(p) for p in WRITTEN_FILES]
    assert {t.stem for t in tails} == set(ACTIONS)
    assert {t.expect for t in tails} == NAMED
    # each follows a release whose source the workbench reads (the wheels unpacked for `workbench inspect`)
    assert {t.written for t in tails} <= {"0.5.6", "0.5.9", "0.5.10", "0.5.17"}


@pytest.mark.parametrize("path", WRITTEN_FILES, ids=[p.stem for p in WRITTEN_FILES])
def test_written_tail_is_named_with_a_line_of_it_and_advice_to_act_on(path: Path) -> None:
    tail = _read(path)
    failure = classify(tail.body, launch=tail.launch)
    assert failure.kind == tail.expect, failure
    assert failure.evidence and failure.evidence in _lines(tail.body)
    missing = [action for action in ACTIONS[tail.stem] if action not in failure.suggestion]
    assert not missing, (missing, failure.suggestion)
    assert "\n" not in failure.suggestion


@pytest.mark.parametrize("path", WRITTEN_FILES, ids=[p.stem for p in WRITTEN_FILES])
def test_the_generic_kinds_do_not_swallow_the_named_ones(path: Path) -> None:
    tail = _read(path)
    generic = _scheduler_exception(tail.body)
    if "Scheduler hit an exception" in tail.body:  # the scheduler's traceback would have been the fallback
        assert generic is not None and generic.kind == "scheduler_exception"
    assert classify(tail.body, launch=tail.launch).kind not in {"scheduler_exception", "unknown", "cuda_graph"}


def test_what_the_rules_named_before_stays_as_it_was() -> None:
    # a draft capture that ran out of memory is a capture failure (memory advice), not a draft mismatch or a fault
    vocab = _read(WRITTEN / "draft_shape_vocab_draft_graph.log")
    oom = vocab.body.replace(
        "stack expects each tensor to be equal size, but got [64, 128256] at entry 0 and [64, 32000] at entry 1",
        "CUDA out of memory. Tried to allocate 2.00 GiB",
    )
    assert "stack expects" not in oom and classify(oom, launch=vocab.launch).kind == "cuda_graph"
    # a broadcast between model-sized dimensions outside the draft's code is no draft mismatch
    target = (
        "Scheduler hit an exception: Traceback (most recent call last):\n"
        '  File "/x/sglang/srt/models/llama.py", line 300, in forward\n'
        "    hidden_states = hidden_states + residual\n"
        "RuntimeError: The size of tensor a (4096) must match the size of tensor b (2048) at non-singleton "
        "dimension 1\n"
    )
    assert classify(target).kind == "scheduler_exception"
    # an argparse refusal and a combination refusal keep the older advice, word for word
    argparse_body, combination_body = (
        (PUBLIC / name).read_text().partition("# ---\n")[2]
        for name in ("bad_flags_unrecognized_4116.log", "bad_flags_combination_qwen108.log")
    )
    assert classify(argparse_body).suggestion == suggestions()["bad_flags"]
    assert classify(combination_body).suggestion == REFUSED_COMBINATION
    # a ValueError out of the model's config (not SGLang's argument checks) is no refused flag
    config = (
        "Traceback (most recent call last):\n"
        '  File "/x/sglang/srt/server_args.py", line 3592, in __post_init__\n'
        "    self.get_model_config()\n"
        '  File "/x/transformers/configuration_utils.py", line 700, in get_config_dict\n'
        "    raise ValueError(\n"
        "ValueError: Unrecognized model in /models/target. Should have a `model_type` key in its config.json\n"
    )
    assert classify(config).kind == "unknown"


def test_spec_v2_tree_shapes_need_both_spec_v2_and_a_tree() -> None:
    tail = _read(WRITTEN / "spec_v2_topk_reshape.log")
    assert classify(tail.body, launch=tail.launch).kind == "spec_v2_topk"
    chain = tail.launch.replace("--speculative-eagle-topk 4", "--speculative-eagle-topk 1")
    assert classify(tail.body, launch=chain).kind == "scheduler_exception"  # no tree: the fallback points at the frame
    assert classify(tail.body).kind == "scheduler_exception"  # the tail alone names no topk
    # SGLang's refusal of spec v2 with topk > 1 says "only supports topk = 1 for speculative decoding" too: it is
    # spec v2's, not an attention backend's
    refused = _read(WRITTEN / "spec_v2_topk_refused.log")
    assert "only supports topk = 1 for speculative decoding" in refused.body
    assert classify(refused.body).kind == "spec_v2_topk"


def test_a_kernel_fault_names_the_grammar_only_when_one_is_beside_it() -> None:
    plain = classify(_read(WRITTEN / "spec_kernel_fault_gather.log").body)
    grammar = classify(_read(WRITTEN / "spec_kernel_fault_grammar.log").body)
    assert plain.kind == grammar.kind == "spec_kernel_fault"
    assert "grammar" not in plain.suggestion and plain.suggestion == suggestions()["spec_kernel_fault"]
    assert grammar.suggestion.startswith("A grammar-constrained request") and grammar.suggestion.endswith(
        plain.suggestion
    )
    # the same grammar fault without the speculative path (no speculative frame, no launch) is not speculation's
    outside = "\n".join(
        line
        for line in _read(WRITTEN / "spec_kernel_fault_grammar.log").body.split("\n")
        if "/speculative/" not in line and "eagle_" not in line
    )
    assert classify(outside).kind == "scheduler_exception"


def test_a_missing_kernel_image_is_named_before_the_capture_and_the_fault() -> None:
    tail = _read(WRITTEN / "gpu_arch_draft_graph.log")
    assert "Capture cuda graph failed" in tail.body and "/speculative/" in tail.body
    assert classify(tail.body).kind == "gpu_arch"
    # outside the draft's capture the advice leaves the draft's backend out
    alone = classify("torch.AcceleratorError: CUDA error: no kernel image is available for execution on the device\n")
    assert alone.kind == "gpu_arch" and "--speculative-draft-attention-backend" not in alone.suggestion
    assert alone.suggestion == suggestions()["gpu_arch"]


def test_the_rendezvous_advice_names_the_address_and_a_taken_port() -> None:
    client = classify(
        "[E socket.cpp:1011] [c10d] The client socket has timed out after 600000ms while trying to "
        "connect to (10.0.0.1, 5000).\n"
    )
    assert client.kind == "multi_node" and "`nc -zv 10.0.0.1 5000`" in client.suggestion
    assert "raise --dist-timeout" in client.suggestion
    # rank 0's store port taken: the dist-init-addr port to change, not the HTTP port's advice
    bind = classify(
        "[W socket.cpp:460] [c10d] The server socket has failed to bind to [::]:5000 (errno: 98 - Address "
        "already in use).\n"
    )
    assert (
        bind.kind == "multi_node" and "pick a free port of rank 0's own address in --dist-init-addr" in bind.suggestion
    )
    # a peer that closed its connection is no timeout
    closed = classify(
        "RuntimeError: [../third_party/gloo/gloo/transport/tcp/pair.cc:534] Connection closed by peer [10.0.0.2]:5001\n"
    )
    assert closed.kind == "multi_node" and "--dist-timeout" not in closed.suggestion


def test_backend_refusals_from_sglang_source_are_attention_backend() -> None:
    # messages of 0.5.17's raise sites (server_args.py, layers/attention/*, speculative/*)
    lines = [
        "AssertionError: Speculative decoding is currently not supported with Flex Attention backend",
        "ValueError: trtllm_mha backend only supports topk = 1 for speculative decoding.",
        "ValueError: Currently FlashMLA only supports topk=1 for speculative decoding",
        "AssertionError: XPUAttentionBackend doesn't support speculative decoding yet, please use "
        "--attention-backend triton instead.",
        "ValueError: Frozen-KV MTP topk > 1 currently supports triton and trtllm_mha attention backends, got fa3.",
        "ValueError: The hpc_ops attention backend does not support speculative decoding (MTP/EAGLE) yet.",
    ]
    for line in lines:
        assert classify(line + "\n").kind == "attention_backend", line
    xpu = classify(lines[3] + "\n")
    assert "SGLang's message says: please use --attention-backend triton instead." in xpu.suggestion
    # a speculative refusal that names no backend stays a refused combination
    assert (
        classify("ValueError: --speculative-use-rejection-sampling requires --speculative-eagle-topk=1.\n").kind
        == "bad_flags"
    )


def test_a_draft_vocabulary_refused_by_name_is_a_draft_mismatch() -> None:
    line = (
        "ValueError: STANDALONE speculative decoding requires the draft model to share the same vocabulary as "
        "the target model, but got target vocab_size=151936 and draft vocab_size=32000. Use a draft model with a "
        "matching vocabulary, or a speculative algorithm that supports heterogeneous vocabularies.\n"
    )
    assert classify(line).kind == "draft_shape"


def test_own_fix_quotes_what_sglang_says_to_do() -> None:
    assert (
        own_fix(
            "ValueError: Lightning (seg_la) linear-attention backend does not support speculative decoding "
            "with topk > 1 (got topk=4); seg_la verifies a draft tree as a chain. Use "
            "--speculative-eagle-topk 1."
        )
        == "Use --speculative-eagle-topk 1."
    )
    assert own_fix(
        "ValueError: DSpark dense-draft compact verify under --enable-dp-attention does not yet support "
        "cuda graph (idle DP groups cannot join the token-keyed compact graph). Re-run with "
        "--disable-cuda-graph (eager is lossless), or use SGLANG_RAGGED_VERIFY_MODE=static. The dsv4 (MoE) "
        "draft supports cuda graph under DP."
    ) == ("Re-run with --disable-cuda-graph (eager is lossless), or use SGLANG_RAGGED_VERIFY_MODE=static.")
    assert own_fix("ValueError: trtllm_mha backend only supports topk = 1 for speculative decoding.") == ""
