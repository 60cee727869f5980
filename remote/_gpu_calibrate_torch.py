"""The PyTorch side of ``gpu_calibrate.py``: layers of a model's shape with random weights, and
their kernel groups timed with CUDA graphs and CUDA events.

Imported only when a run times something (``--dry-run`` never imports it). Needs PyTorch 2.1+
(``torch._grouped_mm``, PyTorch 2.8+ on Hopper, for the MoE experts where present; otherwise a
loop over the touched experts, labelled ``moe_impl = "loop"`` in the table).

What one decoder layer runs (per TP rank; kernels in brackets), close to SGLang's kernel count
so the fixed per-step costs stay comparable (about a dozen kernels a layer):
RMSNorm [1] -> QKV GEMM [1] -> rotary stand-in: one elementwise pass over q and k [1] -> KV-cache
write of the new tokens [2] -> attention over the cache [1-2] -> O GEMM [1] -> residual [1] ->
RMSNorm [1] -> gate/up GEMM [1] -> SiLU x up [2] -> down GEMM [1] -> residual [1]; an MoE layer
replaces the MLP by router GEMM + top-k [2], a gather of the tokens by expert [1], two grouped
GEMMs with SiLU x up between [4], the gate weights and a scatter-add back [2].

The KV cache is token-major, ``[sequences, context + new, kv_heads, head_dim]`` per layer (as
SGLang's pool is ``[tokens, kv_heads, head_dim]``), views of one pool per layer filled with
random values once. Attention: PyTorch's ``scaled_dot_product_attention`` restricted to its fused
kernels (flash / memory-efficient / cuDNN); the GQA group is folded into the query length (each
KV head's ``g`` query heads as ``g x q_len`` queries, non-causal), so no KV is copied; a prefill
(no cache, one sequence) runs causal with ``enable_gqa``. MoE routing is drawn once per point with
a seeded RNG (each token picks ``top_k`` distinct experts uniformly, the roofline's assumption),
so shapes are static and the step can be captured; the table records the experts it touched.

Timing (CUDA): two eager warm-up calls on a side stream, capture into a CUDA graph, ``warmup``
replays, then ``reps`` replays each between two CUDA events, with a 256 MiB buffer written
before each so no replay finds the last one's weights or KV in L2. Statistics are over the
per-replay times. On a CPU (tests only) the same code is timed with ``time.perf_counter`` and the
table is marked as no calibration.
"""

from __future__ import annotations

import math
import os
import random
import statistics
import time

import torch
import torch.nn.functional as F

DTYPES = {"bfloat16": torch.bfloat16, "float16": torch.float16, "float32": torch.float32}


# -- timing ---------------------------------------------------------------------------------------
class Timer:
    """Times a callable's replays (see module docstring).

    Args:
        device: where the callable runs.
        reps: timed replays.
        warmup: untimed replays after capture.
        flush_bytes: bytes written before each timed replay (CUDA only).
        graphs: capture CUDA graphs (CUDA only).
    """

    def __init__(self, device, *, reps, warmup, flush_bytes, graphs=True):
        self.device, self.reps, self.warmup = device, int(reps), int(warmup)
        self.cuda = device.type == "cuda"
        self.graphs = graphs and self.cuda
        self.flush = torch.empty(flush_bytes // 4, dtype=torch.int32, device=device) if self.cuda else None

    def time(self, fn):
        """Statistics of ``fn``'s replay time: a dict with ``median_ms``, ``min_ms``, ``p90_ms``,
        ``mean_ms``, ``reps``, ``cuda_graph``."""
        if not self.cuda:
            fn()
            times = []
            for _ in range(self.reps):
                start = time.perf_counter()
                fn()
                times.append((time.perf_counter() - start) * 1e3)
            return _stats(times, graph=False)
        stream = torch.cuda.Stream()
        stream.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(stream):
            for _ in range(2):
                fn()
        torch.cuda.current_stream().wait_stream(stream)
        torch.cuda.synchronize()
        graph, run, captured = None, fn, False
        if self.graphs:
            graph = torch.cuda.CUDAGraph()
            try:
                with torch.cuda.graph(graph):
                    fn()
                run, captured = graph.replay, True
            except RuntimeError:  # an op that cannot be captured: time it eagerly, labelled
                torch.cuda.synchronize()
                graph, run = None, fn
        for _ in range(self.warmup):
            run()
        starts = [torch.cuda.Event(enable_timing=True) for _ in range(self.reps)]
        ends = [torch.cuda.Event(enable_timing=True) for _ in range(self.reps)]
        for i in range(self.reps):
            self.flush.fill_(i + 1)
            starts[i].record()
            run()
            ends[i].record()
        torch.cuda.synchronize()
        times = [s.elapsed_time(e) for s, e in zip(starts, ends)]
        del graph
        return _stats(times, graph=captured)


def _stats(times, *, graph):
    ordered = sorted(times)
    p90 = ordered[min(len(ordered) - 1, int(math.ceil(0.9 * len(ordered))) - 1)]
    return {
        "median_ms": statistics.median(times),
        "min_ms": ordered[0],
        "p90_ms": p90,
        "mean_ms": statistics.fmean(times),
        "reps": len(times),
        "cuda_graph": graph,
    }


# -- weights --------------------------------------------------------------------------------------
def _weight(shape, fan_in, dtype, device):
    """Random normal weights scaled by 1/sqrt(fan_in) (never zeros: zeros run faster)."""
    w = torch.empty(shape, dtype=dtype, device=device)
    w.normal_(0.0, 1.0 / math.sqrt(fan_in))
    return w


def _rms_norm(x, w, eps=1e-6):
    if hasattr(F, "rms_norm"):
        return F.rms_norm(x, (x.shape[-1],), w, eps)
    var = x.float().pow(2).mean(-1, keepdim=True)
    return (x.float() * torch.rsqrt(var + eps)).to(x.dtype) * w


class Layer:
    """One decoder layer's weights and KV pool (one TP rank's shape), and its parts as callables."""

    def __init__(self, s, *, device, pool_tokens, attention="sdpa", moe_impl=None):
        dt = DTYPES[s["dtype"]]
        h, hd, nh, nkv = s["hidden"], s["head_dim"], s["heads"], s["kv_heads"]
        self.s, self.dt, self.device, self.attention = s, dt, device, attention
        self.q_size, self.kv_size = nh * hd, nkv * hd
        self.w_qkv = _weight((self.q_size + 2 * self.kv_size, h), h, dt, device)
        self.w_o = _weight((h, self.q_size), self.q_size, dt, device)
        self.norm1 = torch.ones(h, dtype=dt, device=device)
        self.norm2 = torch.ones(h, dtype=dt, device=device)
        if s["is_moe"]:
            e, ie = s["experts"], s["expert_intermediate"]
            self.w_router = _weight((e, h), h, dt, device)
            self.w13 = _weight((e, 2 * ie, h), h, dt, device)
            self.w2 = _weight((e, h, ie), ie, dt, device)
            self.moe_impl = moe_impl or "loop"
        else:
            self.w_gate_up = _weight((2 * s["intermediate"], h), h, dt, device)
            self.w_down = _weight((h, s["intermediate"]), s["intermediate"], dt, device)
        self.k_pool = torch.empty((max(1, pool_tokens), nkv, hd), dtype=dt, device=device).normal_()
        self.v_pool = torch.empty((max(1, pool_tokens), nkv, hd), dtype=dt, device=device).normal_()

    # each part takes and returns [tokens, hidden] (attention_core: q, k, v -> [tokens, q_size])
    def qkv(self, x, ctx):
        y = F.linear(_rms_norm(x, self.norm1), self.w_qkv)
        y[:, : self.q_size + self.kv_size].mul_(ctx.rope)  # rotary stand-in: one pass over q and k
        return y

    def attention_core(self, y, ctx):
        s = self.s
        S, q, C = ctx.seqs, ctx.q_len, ctx.context
        nkv, hd, g = s["kv_heads"], s["head_dim"], s["heads"] // s["kv_heads"]
        qt = y[:, : self.q_size]
        kn = y[:, self.q_size : self.q_size + self.kv_size].view(S, q, nkv, hd)
        vn = y[:, self.q_size + self.kv_size :].view(S, q, nkv, hd)
        n = S * (C + q)
        kc = self.k_pool[:n].view(S, C + q, nkv, hd)
        vc = self.v_pool[:n].view(S, C + q, nkv, hd)
        kc[:, C:].copy_(kn)
        vc[:, C:].copy_(vn)
        k, v = kc.transpose(1, 2), vc.transpose(1, 2)  # [S, nkv, C+q, hd], token-major underneath
        if C == 0 and q > 1:  # prefill: causal over the new tokens
            qh = qt.view(S, q, s["heads"], hd).transpose(1, 2)
            out = _sdpa(qh, k, v, causal=True, gqa=g > 1, impl=self.attention)
            return out.transpose(1, 2).reshape(S * q, self.q_size)
        qf = qt.view(S, q, nkv, g, hd).permute(0, 2, 3, 1, 4).reshape(S, nkv, g * q, hd)
        out = _sdpa(qf, k, v, causal=False, gqa=False, impl=self.attention)
        return out.reshape(S, nkv, g, q, hd).permute(0, 3, 1, 2, 4).reshape(S * q, self.q_size)

    def mlp(self, x):
        x2 = _rms_norm(x, self.norm2)
        gu = F.linear(x2, self.w_gate_up)
        i = self.s["intermediate"]
        return F.linear(F.silu(gu[:, :i]) * gu[:, i:], self.w_down)

    def router(self, x):
        x2 = _rms_norm(x, self.norm2)
        logits = F.linear(x2, self.w_router)
        torch.topk(logits, self.s["top_k"], dim=-1)  # timed like SGLang's top-k; routing is static
        return x2

    def experts(self, x2, ctx):
        r = ctx.routing
        xs = x2.index_select(0, r.token_index)
        ie = self.s["expert_intermediate"]
        n = r.touched
        if self.moe_impl == "grouped_mm":
            gu = torch._grouped_mm(xs, self.w13[:n].transpose(-2, -1), offs=r.offsets)
            ys = torch._grouped_mm(F.silu(gu[:, :ie]) * gu[:, ie:], self.w2[:n].transpose(-2, -1), offs=r.offsets)
        else:
            parts, start = [], 0
            for e, count in enumerate(r.counts):
                seg = xs[start : start + count]
                gu = F.linear(seg, self.w13[e])
                parts.append(F.linear(F.silu(gu[:, :ie]) * gu[:, ie:], self.w2[e]))
                start += count
            ys = torch.cat(parts)
        out = torch.zeros_like(x2)
        out.index_add_(0, r.token_index, ys * r.gate)
        return out

    def forward(self, x, ctx, *, attention=True, ffn=True):
        """The whole layer; ``attention=False`` skips the attention core (its output is q),
        ``ffn=False`` skips the MLP or the experts (the router still runs)."""
        y = self.qkv(x, ctx)
        a = self.attention_core(y, ctx) if attention else y[:, : self.q_size]
        x = x + F.linear(a, self.w_o)
        if self.s["is_moe"]:
            x2 = self.router(x)
            return x + self.experts(x2, ctx) if ffn else x + x2
        return x + self.mlp(x) if ffn else x


def _sdpa(q, k, v, *, causal, gqa, impl):
    if impl == "math":
        if gqa:
            rep = q.shape[1] // k.shape[1]
            k, v = k.repeat_interleave(rep, 1), v.repeat_interleave(rep, 1)
        scores = torch.matmul(q, k.transpose(-2, -1)) / math.sqrt(q.shape[-1])
        if causal:
            L = q.shape[-2]
            scores = scores.masked_fill(torch.ones(L, L, dtype=torch.bool, device=q.device).triu(1), float("-inf"))
        return torch.matmul(torch.softmax(scores.float(), -1).to(q.dtype), v)
    kwargs = {"is_causal": causal}
    if gqa:
        kwargs["enable_gqa"] = True
    return F.scaled_dot_product_attention(q, k, v, **kwargs)


def fused_attention_context():
    """A context manager that keeps SDPA on its fused kernels on CUDA (never the math fallback)."""
    try:
        from torch.nn.attention import SDPBackend, sdpa_kernel
    except ImportError:  # PyTorch < 2.3
        import contextlib

        return contextlib.nullcontext()
    backends = [SDPBackend.FLASH_ATTENTION, SDPBackend.EFFICIENT_ATTENTION]
    if hasattr(SDPBackend, "CUDNN_ATTENTION"):
        backends.append(SDPBackend.CUDNN_ATTENTION)
    return sdpa_kernel(backends)


# -- routing --------------------------------------------------------------------------------------
class Routing:
    """A static routing of ``tokens`` tokens to ``top_k`` of ``experts`` experts each (uniform).

    Touched experts are relabelled 0..touched-1 (the weights are random; which experts does not
    matter), so the grouped GEMMs read a contiguous slice of the expert weights.
    """

    def __init__(self, tokens, experts, top_k, *, device, dtype, seed=0):
        rng = random.Random(seed * 1_000_003 + tokens)
        chosen = [rng.sample(range(experts), top_k) for _ in range(tokens)]
        used = sorted({e for picks in chosen for e in picks})
        label = {e: i for i, e in enumerate(used)}
        by_expert = [[] for _ in used]
        for t, picks in enumerate(chosen):
            for e in picks:
                by_expert[label[e]].append(t)
        self.touched = len(used)
        self.counts = [len(b) for b in by_expert]
        index = [t for b in by_expert for t in b]
        self.token_index = torch.tensor(index, dtype=torch.long, device=device)
        ends, total = [], 0
        for c in self.counts:
            total += c
            ends.append(total)
        self.offsets = torch.tensor(ends, dtype=torch.int32, device=device)
        self.gate = torch.rand((len(index), 1), dtype=dtype, device=device)


def grouped_mm_works(device, dtype):
    """Whether ``torch._grouped_mm`` runs here for the MoE experts (Hopper, bf16, PyTorch 2.8+)."""
    if not hasattr(torch, "_grouped_mm") or device.type != "cuda":
        return False
    try:
        a = torch.randn(48, 64, dtype=dtype, device=device)
        b = torch.randn(3, 32, 64, dtype=dtype, device=device).transpose(-2, -1)
        offs = torch.tensor([16, 32, 48], dtype=torch.int32, device=device)
        out = torch._grouped_mm(a, b, offs=offs)
        ref = torch.cat([a[i * 16 : (i + 1) * 16] @ b[i] for i in range(3)])
        return bool(torch.allclose(out.float(), ref.float(), rtol=2e-2, atol=2e-1))
    except (RuntimeError, TypeError, NotImplementedError):
        return False


# -- one point's inputs ---------------------------------------------------------------------------
class Context:
    """A point's static inputs: how the tokens split, the rotary stand-in, the routing."""

    def __init__(self, point, shape, *, device, seed=0):
        dt = DTYPES[shape["dtype"]]
        self.seqs, self.q_len, self.context = point["seqs"], point["q_len"], point["context"]
        self.tokens = point["tokens"]
        width = (shape["heads"] + shape["kv_heads"]) * shape["head_dim"]
        self.rope = (1.0 + 0.01 * torch.rand((self.tokens, width), device=device)).to(dt)
        self.routing = None
        if shape["is_moe"]:
            self.routing = Routing(self.tokens, shape["experts"], shape["top_k"], device=device, dtype=dt, seed=seed)
        self.x = torch.randn((self.tokens, shape["hidden"]), dtype=dt, device=device)


class Stack:
    """``layers`` decoder layers, the final norm and LM head of one model's shape (one TP rank)."""

    def __init__(self, s, *, layers, device, pool_tokens, attention="sdpa", moe_impl=None, fused_fc=False):
        dt = DTYPES[s["dtype"]]
        self.s, self.device, self.dt = s, device, dt
        self.layers = [
            Layer(s, device=device, pool_tokens=pool_tokens, attention=attention, moe_impl=moe_impl)
            for _ in range(layers)
        ]
        self.norm = torch.ones(s["hidden"], dtype=dt, device=device)
        self.w_lm = _weight((s["vocab"], s["hidden"]), s["hidden"], dt, device)
        self.w_fc = (
            _weight((s["hidden"], s["fused_layers"] * s["hidden"]), s["fused_layers"] * s["hidden"], dt, device)
            if fused_fc and s["fused_layers"]
            else None
        )

    def groups(self, ctx):
        """Callables per kernel group for this point (see the plan module's docstring)."""
        x = ctx.x
        ys = [layer.qkv(x, ctx) for layer in self.layers]  # precomputed inputs of the attention-only group
        x2 = self.layers[0].router(x) if self.s["is_moe"] else None
        fc_in = (
            torch.randn((ctx.tokens, self.s["fused_layers"] * self.s["hidden"]), dtype=self.dt, device=self.device)
            if self.w_fc is not None
            else None
        )

        def layers_all(attention=True, ffn=True):
            def run():
                h = F.linear(fc_in, self.w_fc) if fc_in is not None else x
                for layer in self.layers:
                    h = layer.forward(h, ctx, attention=attention, ffn=ffn)
                return h

            return run

        def attention():
            return [layer.attention_core(y, ctx) for layer, y in zip(self.layers, ys)]

        def experts():
            return [layer.experts(x2, ctx) for layer in self.layers]

        def lm_head():
            return F.linear(_rms_norm(x, self.norm), self.w_lm)

        def step():
            h = layers_all()()
            return F.linear(_rms_norm(h, self.norm), self.w_lm)

        dense = layers_all(attention=False, ffn=not self.s["is_moe"])
        return {
            "layers": layers_all(),
            "attention": attention,
            "dense": dense,
            "experts": experts,
            "lm_head": lm_head,
            "step": step,
        }


# -- all-reduce over several GPUs -----------------------------------------------------------------
def allreduce_worker(rank, world, port, sizes, reps, warmup, dtype_name, result_path, use_cuda):
    """One rank of the all-reduce timing (``torch.multiprocessing.spawn`` target).

    Each size (elements) is all-reduced ``warmup`` times, then ``reps`` times 10 back-to-back
    all-reduces between CUDA events (per-op time = elapsed / 10). Rank 0 writes
    ``{size: stats}`` as JSON to ``result_path``.
    """
    import json

    import torch.distributed as dist

    os.environ.setdefault("NCCL_NVLS_ENABLE", "0")
    if use_cuda:
        torch.cuda.set_device(rank)
    device = torch.device("cuda", rank) if use_cuda else torch.device("cpu")
    dist.init_process_group(
        "nccl" if use_cuda else "gloo", init_method="tcp://127.0.0.1:%d" % port, rank=rank, world_size=world
    )
    try:
        dt = DTYPES[dtype_name]
        out = {}
        for numel in sizes:
            buf = torch.randn(numel, dtype=dt, device=device)
            for _ in range(warmup):
                dist.all_reduce(buf)
            times = []
            for _ in range(reps):
                dist.barrier()
                if use_cuda:
                    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                    start.record()
                    for _ in range(10):
                        dist.all_reduce(buf)
                    end.record()
                    torch.cuda.synchronize()
                    times.append(start.elapsed_time(end) / 10)
                else:
                    t0 = time.perf_counter()
                    for _ in range(10):
                        dist.all_reduce(buf)
                    times.append((time.perf_counter() - t0) * 1e3 / 10)
            out[str(numel)] = _stats(times, graph=False)
        if rank == 0:
            with open(result_path, "w", encoding="utf-8") as fh:
                json.dump(out, fh)
    finally:
        dist.destroy_process_group()
