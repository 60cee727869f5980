#!/usr/bin/env python3
"""Time the speculative step on this machine's GPU: its small kernels, and the whole step.

Runs on the GPU host with the Python that has PyTorch (standard library plus torch; Python 3.8+),
beside ``gpu_calibrate.py`` (it reuses that program's layers, timer and model shapes). With random
weights of the preset's target and EAGLE-3 draft (Llama-3.1-8B and its EAGLE-3 head by default), CUDA
graphs and CUDA events, it times:

1. **kernels**: PyTorch equivalents of the speculative step's small kernels (``_gpu_spec_kernels``:
   draft top-k, tree selection, tree building with its attention mask, greedy and sampled verification,
   the accepted tokens' KV bookkeeping and KV move) at every batch size, for each spec shape;
2. **decode**: the plain decode step (target forward, LM head, argmax) at every batch size: the
   calibration points of the comparison (``benchmarks/spec_step_accuracy.py``);
3. **spec**: the whole EAGLE step (draft extend, ``num_steps - 1`` draft forwards, the tree, the
   verify forward with all its logits, greedy acceptance and KV bookkeeping) captured as one CUDA graph,
   and each of those parts alone, for each spec shape at every batch size.

Every request reads ``--context`` cached tokens (default 1,024). Writes ``DIR/spec_step.csv`` (one row
per timed callable, times in ms) and ``DIR/spec_step.json`` (format ``workbench-spec-step/1``: the
settings, the environment and the rows), rewritten after each row. Exit status: 0 done, 2 refused
(no GPU, bad request), 1 failed.

Usage::

    python remote/gpu_spec_step.py --preset llama3-8b --out DIR
    python remote/gpu_spec_step.py --families decode,spec --step-shapes tree-8x8-64,tree-7x4-16 --out DIR   # wide trees
    python remote/gpu_spec_step.py --preset tiny --device cpu --batches 1,2 --out DIR   # a test, never a calibration
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _gpu_calibrate_plan as plan_mod  # noqa: E402
import gpu_calibrate as cal  # noqa: E402  (environment, clocks, atomic writes)

FORMAT = "workbench-spec-step/1"
COLUMNS = [
    "family",
    "part",
    "shape",
    "num_steps",
    "topk",
    "num_draft_tokens",
    "batch",
    "context",
    "tokens",
    "rows",
    "median_ms",
    "min_ms",
    "p90_ms",
    "mean_ms",
    "reps",
    "cuda_graph",
    "sm_clock_mhz",
    "mem_clock_mhz",
    "device",
    "timer",
]
#: Spec shapes (name, num_steps, topk, num_draft_tokens): SGLang's rules (topk 1: N = steps + 1).
#: The whole step runs for the first three by default (``--step-shapes`` picks any of the kernel shapes); the
#: kernels also for the shipped wider trees.
STEP_SHAPES = [("chain3", 3, 1, 4), ("chain7", 7, 1, 8), ("tree-2x4-16", 2, 4, 16)]
KERNEL_SHAPES = STEP_SHAPES + [("tree-7x4-16", 7, 4, 16), ("tree-8x8-64", 8, 8, 64)]
BATCHES = [1, 2, 4, 8, 16, 32, 64, 128, 256]
#: Largest verify-logit rows a kernel point may use (rows x vocab x 4 bytes, about three copies live).
MAX_LOGIT_ROWS = 8192


def parse_args(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--preset", default="llama3-8b", help="a gpu_calibrate preset with a draft (llama3-8b, tiny)")
    ap.add_argument("--batches", default=",".join(str(b) for b in BATCHES))
    ap.add_argument("--context", type=int, default=1024, help="cached tokens per request (default 1024)")
    ap.add_argument("--families", default="kernels,decode,spec", help="which families to time")
    ap.add_argument(
        "--step-shapes",
        default=",".join(n for n, _, _, _ in STEP_SHAPES),
        help="spec shapes whose whole step is timed (names of the kernel shapes: %s)"
        % ", ".join(n for n, _, _, _ in KERNEL_SHAPES),
    )
    ap.add_argument("--reps", type=int, default=20, help="timed replays per callable (default 20)")
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--out", default="spec-step")
    ap.add_argument("--device", choices=["auto", "cuda", "cpu"], default="auto")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    try:
        args.batches = [int(b) for b in args.batches.split(",") if b]
    except ValueError:
        ap.error("--batches takes comma-separated integers, e.g. 1,2,4")
    if not args.batches or min(args.batches) < 1:
        ap.error("--batches needs positive integers")
    args.families = [f for f in args.families.split(",") if f]
    bad = set(args.families) - {"kernels", "decode", "spec"}
    if bad:
        ap.error("unknown --families %s; known: kernels, decode, spec" % ", ".join(sorted(bad)))
    return args


class Table:
    """The rows so far, written to ``DIR/spec_step.{csv,json}`` after each one."""

    def __init__(self, out_dir, settings, env, clocks):
        self.out_dir, self.settings, self.env, self.clocks, self.rows = out_dir, settings, env, clocks, []

    def add(self, stats, **fields):
        sm, mem = self.clocks.read()
        row = dict(
            stats,
            sm_clock_mhz=sm,
            mem_clock_mhz=mem,
            device=self.env.get("gpu_name") or "cpu",
            timer="cuda-events" if self.env.get("gpu_name") else "cpu-perf_counter (NOT a calibration)",
        )
        row.update(fields)
        self.rows.append(row)
        self.save("running")
        cal._progress(
            "%-8s %-15s %-12s B=%-4d %9.4f ms"
            % (row["family"], row["part"], row["shape"], row["batch"], row["median_ms"])
        )

    def save(self, status):
        import csv
        import io

        doc = {
            "format": FORMAT,
            "status": status,
            "settings": self.settings,
            "environment": dict(self.env, updated_at=cal._now()),
            "rows": self.rows,
        }
        cal._write_atomic(os.path.join(self.out_dir, "spec_step.json"), json.dumps(doc, indent=1))
        buf = io.StringIO()
        w = csv.DictWriter(buf, fieldnames=COLUMNS, extrasaction="ignore", lineterminator="\n")
        w.writeheader()
        for r in self.rows:
            w.writerow(r)
        cal._write_atomic(os.path.join(self.out_dir, "spec_step.csv"), buf.getvalue())


def _shape_fields(name, steps, topk, N):
    return {"shape": name, "num_steps": steps, "topk": topk, "num_draft_tokens": N}


def time_kernels(table, timer, torch, sk, target, draft, batches, context, device, layers):
    """The small kernels at every batch size and kernel shape (``layers``: the target's, whose KV pools
    kv_move copies within)."""
    V, Vd = target["vocab"], draft["vocab"]
    for name, steps, k, N in KERNEL_SHAPES:
        f = _shape_fields(name, steps, k, N)
        for B in batches:
            if B * N > MAX_LOGIT_ROWS:
                continue
            rows_d = B * k
            dlog = torch.randn((rows_d, Vd), device=device, dtype=torch.bfloat16)
            table.add(
                timer.time(lambda: sk.draft_topk(dlog, k)),
                family="kernels",
                part="draft_topk",
                batch=B,
                context=context,
                tokens=rows_d,
                rows=rows_d,
                **f,
            )
            if k > 1:
                beam = torch.rand((B, k), device=device)
                cp, ci = sk.draft_topk(dlog, k)
                table.add(
                    timer.time(lambda: sk.tree_select(beam, cp, ci, k)),
                    family="kernels",
                    part="tree_select",
                    batch=B,
                    context=context,
                    tokens=B * k * k,
                    rows=B,
                    **f,
                )
                s, t, par = sk.candidate_list(B, steps, k, device, V)
                table.add(
                    timer.time(lambda: sk.tree_build(s, t, par, N, context)),
                    family="kernels",
                    part="tree_build",
                    batch=B,
                    context=context,
                    tokens=B * N,
                    rows=B,
                    **f,
                )
                tokens, parent, anc, _, _ = sk.tree_build(s, t, par, N, context)
            else:
                parent, anc = sk.chain_tree(B, N, device)
                tokens = torch.randint(0, V, (B, N), device=device)
            logits = torch.randn((B * N, V), device=device, dtype=torch.bfloat16)
            table.add(
                timer.time(lambda: sk.verify_greedy(logits, tokens, parent, anc)),
                family="kernels",
                part="verify_greedy",
                batch=B,
                context=context,
                tokens=B * N,
                rows=B * N,
                **f,
            )
            table.add(
                timer.time(lambda: sk.verify_sampled(logits, tokens, parent, anc)),
                family="kernels",
                part="verify_sampled",
                batch=B,
                context=context,
                tokens=B * N,
                rows=B * N,
                **f,
            )
            _, best, _ = sk.verify_greedy(logits, tokens, parent, anc)
            r2t = torch.zeros((B, context + N + 1), dtype=torch.int32, device=device)
            loc = torch.arange(B * N, dtype=torch.int32, device=device).view(B, N)
            lens = torch.full((B,), context, dtype=torch.long, device=device)
            table.add(
                timer.time(lambda: sk.kv_accept(r2t, loc, best, anc, lens)),
                family="kernels",
                part="kv_accept",
                batch=B,
                context=context,
                tokens=B * N,
                rows=B,
                **f,
            )
            moved = B * steps  # at most num_steps accepted drafts per request
            pools_k = [layer.k_pool for layer in layers]
            pools_v = [layer.v_pool for layer in layers]
            src = torch.randperm(pools_k[0].shape[0], device=device)[:moved]
            dst = torch.randperm(pools_k[0].shape[0], device=device)[:moved]
            table.add(
                timer.time(lambda: sk.kv_move(pools_k, pools_v, src, dst)),
                family="kernels",
                part="kv_move",
                batch=B,
                context=context,
                tokens=moved,
                rows=moved,
                **f,
            )
            del dlog, logits


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    if args.preset not in plan_mod.PRESETS or not plan_mod.PRESETS[args.preset].get("draft"):
        sys.stderr.write(
            "gpu_spec_step: refused: --preset must be one with a draft: %s\n"
            % ", ".join(sorted(p for p, v in plan_mod.PRESETS.items() if v.get("draft")))
        )
        return 2
    known = {n: shape for shape in KERNEL_SHAPES for n in shape[:1]}
    wanted = [n for n in args.step_shapes.split(",") if n]
    if not wanted or any(n not in known for n in wanted):
        sys.stderr.write(
            "gpu_spec_step: refused: --step-shapes takes names of %s, got %r\n" % (", ".join(known), args.step_shapes)
        )
        return 2
    step_shapes = [known[n] for n in wanted]
    pre = plan_mod.PRESETS[args.preset]
    t_shape = plan_mod.rank_shape(plan_mod.load_model(pre["target"]), 1)
    d_shape = plan_mod.rank_shape(plan_mod.load_model(pre["draft"]), 1)
    try:
        torch, device = cal.pick_device(args.device, [{"name": args.preset, "target": t_shape}])
    except cal.Refused as exc:
        sys.stderr.write("gpu_spec_step: refused: %s\n" % exc)
        return 2
    import _gpu_calibrate_torch as tm
    import _gpu_spec_kernels as sk

    os.makedirs(args.out, exist_ok=True)
    env = cal.environment(torch, device)
    clocks = cal.Clocks(device.type == "cuda")
    settings = {
        "preset": args.preset,
        "target": t_shape,
        "draft": d_shape,
        "batches": args.batches,
        "context": args.context,
        "reps": args.reps,
        "warmup": args.warmup,
        "families": args.families,
        "step_shapes": step_shapes,
        "kernel_shapes": KERNEL_SHAPES,
        "attention": "sdpa (fused kernels on CUDA)",
        "note": "random weights; PyTorch equivalents of SGLang's kernels (see _gpu_spec_kernels.py)",
    }
    table = Table(args.out, settings, env, clocks)
    torch.manual_seed(args.seed)
    Bmax = max(args.batches)
    Nmax = max(n for _, _, _, n in step_shapes)
    Smax = max(steps for _, steps, _, _ in step_shapes)
    started = time.monotonic()
    target = tm.Stack(
        t_shape, layers=t_shape["layers"], device=device, pool_tokens=Bmax * (args.context + Nmax), attention="sdpa"
    )
    draft = tm.Stack(
        d_shape,
        layers=1,
        device=device,
        pool_tokens=Bmax * (args.context + max(8, Smax + 1)),
        attention="sdpa",
        fused_fc=True,
    )
    if device.type == "cuda":
        torch.cuda.synchronize()
    cal._progress(
        "weights and KV pools built in %.1f s on %s"
        % (time.monotonic() - started, env.get("gpu_name") or "CPU (a test only)")
    )
    timer = tm.Timer(device, reps=args.reps, warmup=args.warmup, flush_bytes=plan_mod.FLUSH_BYTES)
    big = tm.Timer(device, reps=max(5, args.reps // 2), warmup=args.warmup, flush_bytes=plan_mod.FLUSH_BYTES)
    fused = tm.fused_attention_context if device.type == "cuda" else None
    status = "complete"
    try:
        if "kernels" in args.families:
            time_kernels(table, timer, torch, sk, t_shape, d_shape, args.batches, args.context, device, target.layers)
        for B in args.batches:
            if "decode" in args.families:
                run, _ctx = sk.decode_step(target, batch=B, context=args.context, device=device, seed=args.seed)
                with fused() if fused else _null():
                    st = big.time(run)
                table.add(
                    st,
                    family="decode",
                    part="step",
                    shape="decode",
                    num_steps=0,
                    topk=0,
                    num_draft_tokens=1,
                    batch=B,
                    context=args.context,
                    tokens=B,
                    rows=B,
                )
            if "spec" not in args.families:
                continue
            for name, steps, k, N in step_shapes:
                f = _shape_fields(name, steps, k, N)
                step = sk.SpecStep(
                    target,
                    draft,
                    sk.Point(name, steps, k, N),
                    batch=B,
                    context=args.context,
                    device=device,
                    seed=args.seed,
                )
                logits = step.verify_forward()
                tree = step.tree()
                parts = [
                    ("draft_extend", step.draft_extend, B * (steps + 1)),
                    ("draft_steps", step.draft_steps, B * k * (steps - 1)),
                    ("tree", step.tree, B * N),
                    ("verify_forward", step.verify_forward, B * N),
                    ("accept", lambda: step.accept(logits, tree), B * N),
                    ("whole", step.whole, B * N),
                ]
                for part, fn, tokens in parts:
                    if part == "draft_steps" and steps < 2:
                        continue
                    with fused() if fused else _null():
                        st = big.time(fn)
                    table.add(st, family="spec", part=part, batch=B, context=args.context, tokens=tokens, rows=B, **f)
                del step, logits, tree
                if device.type == "cuda":
                    torch.cuda.empty_cache()
    except Exception:  # noqa: BLE001 - the program's boundary: keep what was timed
        import traceback

        sys.stderr.write("gpu_spec_step: FAILED (the table keeps the rows timed so far):\n%s" % traceback.format_exc())
        status = "failed"
    table.save(status)
    cal._progress("%s: %d rows in %s (%.0f s)" % (status, len(table.rows), args.out, time.monotonic() - started))
    return 0 if status == "complete" else 1


def _null():
    import contextlib

    return contextlib.nullcontext()


if __name__ == "__main__":
    sys.exit(main())
