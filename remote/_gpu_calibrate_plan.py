"""The plan of a GPU calibration run: model shapes, the grid of points, memory and time estimates.

Pure standard library (no torch), so ``gpu_calibrate.py --dry-run`` and the workbench's tests
use it on machines without PyTorch. Python 3.8+.

A *point* is one timed configuration: a family (``decode``, ``verify``, ``prefill``, ``draft``,
``lm_head``, ``allreduce``), the tokens of one step (``tokens``), how they split into sequences
(``seqs`` sequences of ``q_len`` query tokens each), and the cached context each sequence reads
(``context`` tokens; ``kv_tokens = seqs x context`` in all). Each point times one or more kernel
*groups* (``layers``: the whole decoder-layer stack; ``attention``: KV-cache write and attention
core; ``dense``: every dense GEMM, norm and elementwise op of the layers without attention or
experts; ``experts``: the MoE block's routed experts; ``lm_head``: final norm and vocabulary GEMM;
``step``: a draft's whole step; ``allreduce``: one all-reduce of ``tokens x hidden`` activations).

Shapes are one tensor-parallel rank's (``tp``): heads, intermediate sizes, experts' intermediate
size and vocabulary are divided by ``tp``; KV heads too, but never below one (SGLang replicates
KV heads when ``tp`` exceeds them), as ``workbench/sim/_roofline.py`` does.
"""

from __future__ import annotations

import hashlib
import json
import os

#: Bytes per element of a config's ``torch_dtype``.
DTYPE_BYTES = {"bfloat16": 2, "float16": 2, "float32": 4}

#: Model shapes (the fields of ``data/models/<file>.toml``, which ``tests/test_gpu_calibrate.py``
#: checks these against), so the program runs on a host that has only this directory.
MODELS = {
    "llama-3.1-8b-instruct": {
        "name": "meta-llama/Llama-3.1-8B-Instruct",
        "num_hidden_layers": 32,
        "hidden_size": 4096,
        "intermediate_size": 14336,
        "num_attention_heads": 32,
        "num_key_value_heads": 8,
        "head_dim": 128,
        "vocab_size": 128256,
        "torch_dtype": "bfloat16",
    },
    "eagle3-llama3.1-8b": {
        "name": "yuhuili/EAGLE3-LLaMA3.1-Instruct-8B",
        "num_hidden_layers": 1,
        "hidden_size": 4096,
        "intermediate_size": 14336,
        "num_attention_heads": 32,
        "num_key_value_heads": 8,
        "head_dim": 128,
        "vocab_size": 128256,
        "draft_vocab_size": 32000,
        "torch_dtype": "float16",
        "eagle_fused_layers": 3,
    },
    "qwen3-30b-a3b": {
        "name": "Qwen/Qwen3-30B-A3B",
        "num_hidden_layers": 48,
        "hidden_size": 2048,
        "intermediate_size": 6144,
        "num_attention_heads": 32,
        "num_key_value_heads": 4,
        "head_dim": 128,
        "vocab_size": 151936,
        "torch_dtype": "bfloat16",
        "num_experts": 128,
        "num_experts_per_tok": 8,
        "moe_intermediate_size": 768,
        "shared_expert_intermediate_size": 0,
    },
    # Test shapes: small enough to run on a CPU in a second (never a calibration).
    "tiny-dense": {
        "name": "tiny-dense",
        "num_hidden_layers": 2,
        "hidden_size": 64,
        "intermediate_size": 128,
        "num_attention_heads": 4,
        "num_key_value_heads": 2,
        "head_dim": 16,
        "vocab_size": 256,
        "torch_dtype": "float32",
    },
    "tiny-draft": {
        "name": "tiny-draft",
        "num_hidden_layers": 1,
        "hidden_size": 64,
        "intermediate_size": 128,
        "num_attention_heads": 4,
        "num_key_value_heads": 2,
        "head_dim": 16,
        "vocab_size": 256,
        "draft_vocab_size": 96,
        "torch_dtype": "float32",
        "eagle_fused_layers": 3,
    },
    "tiny-moe": {
        "name": "tiny-moe",
        "num_hidden_layers": 2,
        "hidden_size": 64,
        "intermediate_size": 128,
        "num_attention_heads": 4,
        "num_key_value_heads": 2,
        "head_dim": 16,
        "vocab_size": 256,
        "torch_dtype": "float32",
        "num_experts": 8,
        "num_experts_per_tok": 2,
        "moe_intermediate_size": 32,
        "shared_expert_intermediate_size": 0,
    },
}

#: Presets: target and draft model files, and the decoder layers ``--quick`` times (the rest of a
#: model's layers are identical, so a stack's time scales by ``layers_model / layers_timed``).
#: Llama-3.1-8B: all 32 layers even with --quick (15 GB of weights fit beside a 64 GB KV pool on
#: an H200, and no scaling is then needed); Qwen3-30B-A3B: 8 of 48 layers with --quick (its experts
#: are 1.2 GB per layer: all 48 would be 58 GB), all 48 without.
PRESETS = {
    "llama3-8b": {"target": "llama-3.1-8b-instruct", "draft": "eagle3-llama3.1-8b", "quick_layers": 32},
    "qwen3-30b-a3b": {"target": "qwen3-30b-a3b", "draft": None, "quick_layers": 8},
    "tiny": {"target": "tiny-dense", "draft": "tiny-draft", "quick_layers": 2},
    "tiny-moe": {"target": "tiny-moe", "draft": None, "quick_layers": 1},
}

#: Tokens per step of the decode sweep. Dense around the expected knee: an H200's dense bf16
#: FLOP/s over its HBM bandwidth is about 206 FLOP/byte, and a bf16 GEMM does 1 FLOP per weight
#: byte per token, so the weight-bound floor ends near 100-400 tokens at achieved rates.
TOKENS = {
    "quick": [1, 4, 16, 32, 64, 96, 128, 160, 192, 256, 320, 384, 512, 1024, 2048, 4096],
    "full": [
        1,
        2,
        4,
        8,
        12,
        16,
        24,
        32,
        48,
        64,
        80,
        96,
        112,
        128,
        144,
        160,
        192,
        224,
        256,
        320,
        384,
        448,
        512,
        640,
        768,
        1024,
        1536,
        2048,
        3072,
        4096,
    ],
}
#: Context (cached tokens per sequence) of the decode sweep.
CONTEXTS = {"quick": [0, 2048, 8192, 32768], "full": [0, 1024, 4096, 16384, 32768]}
#: Verify (EAGLE target verify): query tokens per sequence (a chain of 3 drafts -> 4, topk 4 with
#: 16 draft tokens -> 16), sequences, contexts.
VERIFY = {
    "quick": {"q_len": [4, 16], "seqs": [1, 4, 16, 64], "contexts": [2048]},
    "full": {"q_len": [4, 8, 16], "seqs": [1, 2, 4, 8, 16, 32, 64, 128], "contexts": [1024, 4096]},
}
#: Prefill: one sequence of this many prompt tokens, no cache.
PREFILL = {"quick": [256, 1024, 4096], "full": [128, 256, 512, 1024, 2048, 4096, 8192]}
#: Draft steps: batch (sequences) x topk (query tokens per sequence), at these contexts.
DRAFT = {
    "quick": {"seqs": [1, 4, 16, 64], "topk": [1, 4], "contexts": [2048]},
    "full": {"seqs": [1, 2, 4, 8, 16, 32, 64, 128], "topk": [1, 4, 8], "contexts": [0, 1024, 4096]},
}
#: Most cached tokens (over all sequences of a point) per layer; points above it are left out.
KV_BUDGET_TOKENS = {"quick": 512 * 1024, "full": 1024 * 1024}
#: Timed replays (after warm-up) per kernel group and point.
REPS = {"quick": 10, "full": 25}
WARMUP = {"quick": 3, "full": 5}
#: Bytes of the buffer written between timed replays so no replay reads another's data from L2
#: (an H200 has 60 MB of L2).
FLUSH_BYTES = 256 * 1024 * 1024


class PlanError(ValueError):
    """The request cannot be planned (unknown preset or model, a shape that does not fit)."""


def load_model(name_or_path, models_dir=None):
    """A model shape dict: a name in :data:`MODELS`, a ``data/models/<name>.toml`` beside this
    checkout (``models_dir``, read with ``tomllib`` where Python has it), or a JSON file path.

    Raises:
        PlanError: unknown name, unreadable file or missing fields.
    """
    shape = None
    if name_or_path in MODELS:
        shape = dict(MODELS[name_or_path])
    elif name_or_path.endswith(".json") and os.path.isfile(name_or_path):
        with open(name_or_path, encoding="utf-8") as fh:
            shape = json.load(fh)
    else:
        path = (
            name_or_path if name_or_path.endswith(".toml") else os.path.join(models_dir or "", name_or_path + ".toml")
        )
        if models_dir is not None or name_or_path.endswith(".toml"):
            if os.path.isfile(path):
                try:
                    import tomllib  # Python 3.11+
                except ImportError:
                    raise PlanError("reading %s needs Python 3.11+ (tomllib); pass a preset or a JSON shape" % path)
                with open(path, "rb") as fh:
                    shape = tomllib.load(fh)
    if shape is None:
        raise PlanError(
            "unknown model %r: not one of %s, nor a .json/.toml file" % (name_or_path, ", ".join(sorted(MODELS)))
        )
    for key in ("num_hidden_layers", "hidden_size", "num_attention_heads", "vocab_size"):
        if key not in shape:
            raise PlanError("model %r lacks %r" % (name_or_path, key))
    return shape


def rank_shape(model, tp=1):
    """One TP rank's shape of ``model`` (a dict of :func:`load_model`), with derived sizes.

    Returns:
        A dict: ``hidden``, ``heads``, ``kv_heads``, ``head_dim``, ``intermediate``, ``experts``,
        ``top_k``, ``expert_intermediate``, ``vocab`` (LM-head rows: a draft's draft vocabulary),
        ``layers``, ``fused_layers``, ``dtype``, ``dtype_bytes``, ``name``, ``is_moe``,
        ``layer_params``, ``lm_head_params``, ``kv_bytes_per_token_layer``.

    Raises:
        PlanError: ``tp`` does not divide the heads, or an unknown dtype.
    """
    tp = int(tp)
    heads = int(model["num_attention_heads"])
    hidden = int(model["hidden_size"])
    if tp < 1 or heads % tp:
        raise PlanError("tp %d must be >= 1 and divide the %d attention heads" % (tp, heads))
    dtype = str(model.get("torch_dtype", "bfloat16"))
    if dtype not in DTYPE_BYTES:
        raise PlanError("unknown torch_dtype %r; known: %s" % (dtype, ", ".join(sorted(DTYPE_BYTES))))
    kv = int(model.get("num_key_value_heads", heads))
    hd = int(model.get("head_dim", hidden // heads))
    experts = int(model.get("num_experts", model.get("num_local_experts", 0)) or 0)
    s = {
        "name": str(model.get("name", "?")),
        "layers": int(model["num_hidden_layers"]),
        "hidden": hidden,
        "heads": heads // tp,
        "kv_heads": max(1, kv // tp),
        "head_dim": hd,
        "intermediate": int(model.get("intermediate_size", 0)) // tp,
        "experts": experts,
        "top_k": int(model.get("num_experts_per_tok", 0) or 0),
        "expert_intermediate": int(model.get("moe_intermediate_size", 0) or 0) // tp,
        "shared_intermediate": int(model.get("shared_expert_intermediate_size", 0) or 0) // tp,
        "vocab": int(model.get("draft_vocab_size") or model["vocab_size"]) // tp,
        "fused_layers": int(model.get("eagle_fused_layers", 0) or 0),
        "dtype": dtype,
        "dtype_bytes": DTYPE_BYTES[dtype],
        "is_moe": experts > 0,
        "tp": tp,
    }
    h = hidden
    attn = h * (s["heads"] + 2 * s["kv_heads"]) * hd + s["heads"] * hd * h
    if s["is_moe"]:
        mlp = 3 * h * (experts * s["expert_intermediate"] + s["shared_intermediate"]) + h * experts
    else:
        mlp = 3 * h * s["intermediate"]
    s["layer_params"] = attn + mlp + 2 * h
    s["lm_head_params"] = s["vocab"] * h + s["fused_layers"] * h * h
    s["kv_bytes_per_token_layer"] = 2 * s["kv_heads"] * hd * s["dtype_bytes"]
    return s


def point_id(p):
    """A point's stable id, e.g. ``decode:T128:q1:C2048`` (used to resume)."""
    return "%s:T%d:q%d:C%d" % (p["family"], p["tokens"], p["q_len"], p["context"])


def _point(family, role, seqs, q_len, context, groups):
    p = {
        "family": family,
        "role": role,
        "tokens": seqs * q_len,
        "seqs": seqs,
        "q_len": q_len,
        "context": context,
        "kv_tokens": seqs * context,
        "groups": list(groups),
    }
    p["id"] = point_id(p)
    return p


def build_points(target, draft, *, mode, gpus=1):
    """The points of one run, in the order they are timed (cheap families first).

    Args:
        target: :func:`rank_shape` of the target.
        draft: :func:`rank_shape` of the draft, or None.
        mode: ``"quick"`` or ``"full"``.
        gpus: GPUs for the all-reduce family (none below 2).

    Returns:
        (points, left_out): dicts as :func:`_point` makes; ``left_out`` are ``(id, reason)``
        for points above the KV budget.
    """
    if mode not in TOKENS:
        raise PlanError("mode must be 'quick' or 'full', got %r" % mode)
    budget = KV_BUDGET_TOKENS[mode]
    layer_groups = ["layers", "attention", "dense"] + (["experts"] if target["is_moe"] else [])
    points, left_out = [], []

    def add(p):
        if p["kv_tokens"] + p["tokens"] > budget:
            left_out.append((p["id"], "kv_tokens %d over the KV budget of %d tokens" % (p["kv_tokens"], budget)))
        else:
            points.append(p)

    for t in TOKENS[mode]:
        add(_point("lm_head", "target", t, 1, 0, ["lm_head"]))
    for c in CONTEXTS[mode]:
        for t in TOKENS[mode]:
            add(_point("decode", "target", t, 1, c, layer_groups))
    v = VERIFY[mode]
    for c in v["contexts"]:
        for q in v["q_len"]:
            for s in v["seqs"]:
                add(_point("verify", "target", s, q, c, layer_groups))
    for t in PREFILL[mode]:
        add(_point("prefill", "target", 1, t, 0, layer_groups))
    if draft is not None:
        d = DRAFT[mode]
        for c in d["contexts"]:
            for k in d["topk"]:
                for s in d["seqs"]:
                    add(_point("draft", "draft", s, k, c, ["step", "attention", "dense", "lm_head"]))
    if gpus > 1:
        for t in TOKENS[mode]:
            points.append(_point("allreduce", "target", t, 1, 0, ["allreduce"]))
    return points, left_out


def activation_bytes(shape, tokens):
    """Peak bytes of one layer's intermediates over ``tokens`` tokens (generous: x4 headroom)."""
    h, b = shape["hidden"], shape["dtype_bytes"]
    widest = max(2 * shape["intermediate"], (shape["heads"] + 2 * shape["kv_heads"]) * shape["head_dim"], h)
    per = widest + 4 * h
    if shape["is_moe"]:
        per += shape["top_k"] * (3 * shape["expert_intermediate"] + 2 * h) + shape["experts"]
    return 4 * tokens * per * b


def memory_plan(target, draft, points, layers_timed):
    """Bytes the run holds on the GPU at its peak (weights, KV pool, activations, logits, flush).

    Returns:
        A dict of byte counts with ``total``.
    """
    max_tokens = max([p["tokens"] for p in points] or [1])
    kv_tokens = max([p["kv_tokens"] + p["tokens"] for p in points if p["role"] == "target"] or [0])
    b = target["dtype_bytes"]
    out = {
        "weights": layers_timed * target["layer_params"] * b + target["lm_head_params"] * b,
        "kv_pool": layers_timed * kv_tokens * target["kv_bytes_per_token_layer"],
        "activations": activation_bytes(target, max_tokens),
        "logits": max_tokens * target["vocab"] * 4,
        "flush": FLUSH_BYTES,
    }
    if draft is not None:
        dk = max([p["kv_tokens"] + p["tokens"] for p in points if p["role"] == "draft"] or [0])
        out["draft_weights"] = (draft["layer_params"] + draft["lm_head_params"]) * draft["dtype_bytes"]
        out["draft_kv_pool"] = dk * draft["kv_bytes_per_token_layer"]
    out["total"] = sum(out.values())
    return out


def plan_key(plan):
    """A short hash of what makes two runs' tables comparable (shapes, grid, layers, mode, tp)."""
    keep = {k: plan[k] for k in ("target", "draft", "mode", "layers_timed", "tp", "attention", "reps", "warmup")}
    keep["points"] = [p["id"] for p in plan["points"]]
    return hashlib.sha256(json.dumps(keep, sort_keys=True).encode()).hexdigest()[:16]


def make_plan(
    preset=None,
    *,
    model=None,
    draft=None,
    mode="quick",
    tp=1,
    gpus=1,
    layers=None,
    attention="sdpa",
    models_dir=None,
    reps=None,
    warmup=None,
):
    """Validate a request once into the plan every later step takes whole.

    Args:
        preset: a name in :data:`PRESETS` (its target, draft and quick layer count), or None.
        model: a target model (name in :data:`MODELS`, a ``data/models`` stem, or a JSON/TOML path)
            instead of a preset's.
        draft: a draft model likewise ("none" for no draft).
        mode: ``"quick"`` (about a minute or two of GPU time per shape) or ``"full"``.
        tp: tensor-parallel ranks: the shapes timed are one rank's.
        gpus: GPUs for the all-reduce (>= 2 to time it).
        layers: decoder layers to time (default: the preset's quick layers with ``--quick``,
            else all).
        attention: ``"sdpa"`` (PyTorch's fused attention) or ``"math"`` (explicit matmuls).
        models_dir: where ``data/models/*.toml`` lives (for names not in :data:`MODELS`).
        reps, warmup: timed and warm-up replays per group (defaults by mode).

    Returns:
        A JSON-serialisable dict: ``name``, ``target`` and ``draft`` (rank shapes), ``mode``,
        ``layers_timed``, ``tp``, ``gpus``, ``points``, ``left_out``, ``memory``, ``key``.

    Raises:
        PlanError: anything invalid, with what to do.
    """
    if preset is None and model is None:
        raise PlanError("give --preset (%s) or --model" % ", ".join(sorted(PRESETS)))
    if preset is not None and preset not in PRESETS:
        raise PlanError("unknown preset %r; known: %s" % (preset, ", ".join(sorted(PRESETS))))
    if attention not in ("sdpa", "math"):
        raise PlanError("attention must be 'sdpa' or 'math', got %r" % attention)
    pre = PRESETS.get(preset, {})
    target_name = model or pre["target"]
    draft_name = draft if draft is not None else pre.get("draft")
    if draft_name in ("none", ""):
        draft_name = None
    target = rank_shape(load_model(target_name, models_dir), tp)
    draft_shape = rank_shape(load_model(draft_name, models_dir), tp) if draft_name else None
    if layers is None:
        layers = (
            min(pre.get("quick_layers", target["layers"]), target["layers"]) if mode == "quick" else target["layers"]
        )
    layers = int(layers)
    if not 1 <= layers <= target["layers"]:
        raise PlanError("layers must be between 1 and the model's %d, got %d" % (target["layers"], layers))
    points, left_out = build_points(target, draft_shape, mode=mode, gpus=int(gpus))
    plan = {
        "name": preset or os.path.splitext(os.path.basename(target_name))[0],
        "preset": preset,
        "target_model": target_name,
        "draft_model": draft_name,
        "target": target,
        "draft": draft_shape,
        "mode": mode,
        "tp": int(tp),
        "gpus": int(gpus),
        "layers_timed": layers,
        "attention": attention,
        "reps": int(reps or REPS[mode]),
        "warmup": int(warmup or WARMUP[mode]),
        "points": points,
        "left_out": [{"id": i, "reason": r} for i, r in left_out],
        "memory": memory_plan(target, draft_shape, points, layers),
    }
    plan["key"] = plan_key(plan)
    return plan


def estimate_seconds(plan, *, hbm_gb_s=4000.0, tflops=700.0):
    """A rough GPU time of the run (s): each group's replays at roofline speed, plus capture.

    Args:
        plan: :func:`make_plan`'s plan.
        hbm_gb_s: assumed achieved HBM bandwidth (GB/s).
        tflops: assumed achieved dense TFLOP/s.
    """
    t, n = plan["target"], plan["layers_timed"]
    total = 0.0
    for p in plan["points"]:
        shape = plan["draft"] if p["role"] == "draft" else t
        layers = 1 if p["role"] == "draft" else n
        b = shape["dtype_bytes"]
        w = layers * shape["layer_params"] * b
        kv = layers * (p["kv_tokens"] + p["tokens"]) * shape["kv_bytes_per_token_layer"]
        fl = 2.0 * p["tokens"] * layers * shape["layer_params"]
        if shape["is_moe"]:
            w = layers * shape["layer_params"] * b * min(1.0, p["tokens"] * shape["top_k"] / max(1, shape["experts"]))
        step = max((w + kv) / (hbm_gb_s * 1e9), fl / (tflops * 1e12)) + 20e-6 * layers
        per_group = 2 if p["family"] != "lm_head" else 1
        total += per_group * step * (plan["reps"] + plan["warmup"] + 2) + 0.05 * len(p["groups"])
    return total
