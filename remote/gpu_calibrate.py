#!/usr/bin/env python3
"""Time a model's kernel groups on this machine's GPU: the raw table a roofline profile is fitted to.

Runs on the GPU host with the Python that has PyTorch (standard library plus torch; Python 3.8+).
For each shape (a preset, or ``--model`` with ``--draft``) it builds decoder layers of the model's
shape (one tensor-parallel rank's, ``--tp``) with random weights in the model's dtype and times,
with CUDA graphs and CUDA events after warm-up:

- the target's forward over 1..4096 tokens per step at several contexts (0..32k cached tokens per
  sequence), as decode (one query token per sequence), verify (4 or 16 per sequence) and prefill
  (one sequence, no cache), each point split into kernel groups (whole layer stack, attention,
  dense GEMMs, MoE experts);
- the target's LM head over 1..4096 logit rows;
- the draft's step (its layer, EAGLE-3's fusion FC and its LM head) over batch x topk tokens;
- with ``--gpus`` naming two or more GPUs, an all-reduce of ``tokens x hidden`` activations over
  them (NCCL through torch.distributed, NVLink multicast off: ``NCCL_NVLS_ENABLE=0``).

Every point is written as soon as it is timed (the table is rewritten atomically), so a run that
stops is resumed by running the same command again; ``--restart`` discards an older table.
Nothing runs that would not fit: the plan's memory (weights, KV pool, activations, logits) is
checked against the GPU's free memory first, and refused with the figures if it is larger.

Usage::

    python remote/gpu_calibrate.py --preset llama3-8b --quick --out DIR
    python remote/gpu_calibrate.py --preset llama3-8b,qwen3-30b-a3b --quick --out DIR   # both, resumable
    python remote/gpu_calibrate.py --preset llama3-8b --dry-run                         # the plan; no torch
    python remote/gpu_calibrate.py --model qwen3-30b-a3b --draft none --tp 2 --gpus 0,1 --out DIR

Writes, per shape ``NAME`` (the preset, or the model file's stem): ``DIR/NAME.json`` (format
``workbench-gpu-calibration/1``: the plan, the environment — GPU name, driver, torch, CUDA,
clocks seen — status, and every row) and ``DIR/NAME.csv`` (the rows: one per point and kernel
group, times in ms). ``--dry-run`` writes ``DIR/NAME.plan.json`` when ``--out`` is given.
Exit status: 0 done, 2 refused (bad request, no GPU, does not fit), 1 failed.
"""

from __future__ import annotations

import argparse
import csv
import datetime
import io
import json
import os
import platform
import socket
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _gpu_calibrate_plan as plan_mod  # noqa: E402  (a companion module beside this script)

FORMAT = "workbench-gpu-calibration/1"
#: Columns of the CSV table, in order (units in the names).
COLUMNS = [
    "shape",
    "model",
    "role",
    "family",
    "group",
    "point",
    "tokens",
    "seqs",
    "q_len",
    "context",
    "kv_tokens",
    "layers_timed",
    "layers_model",
    "touched_experts",
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
    "moe_impl",
    "attention",
    "message_bytes",
    "gpus",
]
#: Seconds between two readings of the clocks (nvidia-smi costs tens of milliseconds).
CLOCK_EVERY_S = 2.0
#: Share of the GPU's free memory a plan may use.
FREE_FRACTION = 0.9


class Refused(Exception):
    """The request cannot run here (exit status 2); the message says why and what to do."""


def _repo_models_dir():
    here = os.path.dirname(os.path.abspath(__file__))
    path = os.path.join(os.path.dirname(here), "data", "models")
    return path if os.path.isdir(path) else None


def _now():
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")


def _write_atomic(path, text):
    tmp = "%s.tmp-%d" % (path, os.getpid())
    with open(tmp, "w", encoding="utf-8") as fh:
        fh.write(text)
    os.replace(tmp, path)


def rows_csv(rows):
    """The rows as CSV text (:data:`COLUMNS`)."""
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=COLUMNS, extrasaction="ignore", lineterminator="\n")
    writer.writeheader()
    for row in rows:
        writer.writerow(row)
    return out.getvalue()


def _progress(msg):
    sys.stdout.write(msg + "\n")
    sys.stdout.flush()


# -- environment ---------------------------------------------------------------------------------
def nvidia_smi(query, index=None):
    """One ``nvidia-smi --query-gpu`` reading as a list of dicts (one per GPU), or [] when absent."""
    cmd = ["nvidia-smi", "--query-gpu=" + ",".join(query), "--format=csv,noheader,nounits"]
    if index is not None:
        cmd.append("--id=%s" % index)
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=20, check=True).stdout
    except (OSError, subprocess.SubprocessError):
        return []
    return [dict(zip(query, [v.strip() for v in line.split(",")])) for line in out.splitlines() if line.strip()]


def environment(torch, device):
    """Facts about this machine that a table must carry: GPU, driver, torch, CUDA, clocks."""
    env = {
        "hostname": socket.gethostname(),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "torch": torch.__version__,
        "cuda": getattr(torch.version, "cuda", None),
        "device": device.type,
        "started_at": _now(),
    }
    if device.type == "cuda":
        props = torch.cuda.get_device_properties(device)
        free, total = torch.cuda.mem_get_info(device)
        env.update(
            {
                "gpu_name": props.name,
                "sm_count": props.multi_processor_count,
                "memory_total_bytes": total,
                "memory_free_bytes": free,
                "capability": "%d.%d" % (props.major, props.minor),
                "cudnn": torch.backends.cudnn.version() if torch.backends.cudnn.is_available() else None,
                "cuda_visible_devices": os.environ.get("CUDA_VISIBLE_DEVICES"),
            }
        )
        smi = nvidia_smi(
            [
                "name",
                "driver_version",
                "pci.bus_id",
                "clocks.sm",
                "clocks.mem",
                "clocks.max.sm",
                "clocks.max.mem",
                "power.limit",
                "temperature.gpu",
                "memory.used",
            ],
            index=torch.cuda.current_device() if not os.environ.get("CUDA_VISIBLE_DEVICES") else None,
        )
        env["nvidia_smi"] = smi[0] if smi else None
        env["driver"] = smi[0].get("driver_version") if smi else None
    else:
        env.update(
            {
                "gpu_name": None,
                "calibration_note": "CPU timing with time.perf_counter: a test of the program, NEVER a calibration",
            }
        )
    env["nccl_nvls_enable"] = os.environ.get("NCCL_NVLS_ENABLE")
    return env


class Clocks:
    """The SM and memory clocks, read with nvidia-smi at most every :data:`CLOCK_EVERY_S` seconds."""

    def __init__(self, enabled, clock=time.monotonic):
        self.enabled, self.clock, self.last, self.value = enabled, clock, -1e9, (None, None)
        self.seen = {}

    def read(self):
        if not self.enabled:
            return self.value
        now = self.clock()
        if now - self.last >= CLOCK_EVERY_S:
            smi = nvidia_smi(["clocks.sm", "clocks.mem"])
            if smi:
                try:
                    self.value = (float(smi[0]["clocks.sm"]), float(smi[0]["clocks.mem"]))
                except ValueError:
                    self.value = (None, None)
                if self.value[0] is not None:
                    self.seen[int(self.value[0])] = self.seen.get(int(self.value[0]), 0) + 1
            self.last = now
        return self.value


# -- one shape ------------------------------------------------------------------------------------
def _load_table(path, plan, env, restart):
    """Rows already measured for this plan (resuming), or [] for a fresh table.

    Raises:
        Refused: an existing table of another plan or GPU, without ``restart``.
    """
    if restart or not os.path.exists(path):
        return []
    try:
        with open(path, encoding="utf-8") as fh:
            old = json.load(fh)
    except ValueError as exc:
        raise Refused("%s exists but is not a JSON table (%s); pass --restart to overwrite it" % (path, exc))
    if old.get("format") != FORMAT or old.get("plan", {}).get("key") != plan["key"]:
        raise Refused(
            "%s holds a table of another plan (key %s, this plan %s): pass --restart to discard it, or "
            "another --out" % (path, old.get("plan", {}).get("key"), plan["key"])
        )
    old_gpu = (old.get("environment") or {}).get("gpu_name")
    if old_gpu != env.get("gpu_name"):
        raise Refused(
            "%s was measured on %r, this is %r: pass --restart or another --out" % (path, old_gpu, env.get("gpu_name"))
        )
    return list(old.get("rows", []))


def _save(out_dir, plan, env, rows, status, clocks):
    doc = {
        "format": FORMAT,
        "status": status,
        "calibration": env.get("device") == "cuda",
        "plan": plan,
        "environment": dict(env, updated_at=_now(), sm_clocks_seen_mhz=sorted(clocks.seen)),
        "rows": rows,
    }
    _write_atomic(os.path.join(out_dir, plan["name"] + ".json"), json.dumps(doc, indent=1))
    _write_atomic(os.path.join(out_dir, plan["name"] + ".csv"), rows_csv(rows))


def _check_memory(plan, env):
    need = plan["memory"]["total"]
    free = env.get("memory_free_bytes")
    if free is not None and need > FREE_FRACTION * free:
        parts = ", ".join("%s %.1f GB" % (k, v / 1e9) for k, v in plan["memory"].items() if k != "total")
        raise Refused(
            "shape %s does not fit: it needs %.1f GB (%s) and %.0f%% of the %.1f GB free is %.1f GB; "
            "time fewer layers (--layers N) or use --quick"
            % (plan["name"], need / 1e9, parts, 100 * FREE_FRACTION, free / 1e9, FREE_FRACTION * free / 1e9)
        )


def run_shape(plan, *, out_dir, device, torch, restart=False, seed=0, gpu_ids=None):
    """Time every point of ``plan`` not yet in ``out_dir/NAME.json``; write the table as it goes.

    Returns:
        The table's rows.
    """
    import _gpu_calibrate_torch as tm

    env = environment(torch, device)
    env["moe_impl"] = None
    path = os.path.join(out_dir, plan["name"] + ".json")
    rows = _load_table(path, plan, env, restart)
    done = {r["point"] for r in rows}
    todo = [p for p in plan["points"] if p["id"] not in done]
    _check_memory(plan, env)
    clocks = Clocks(device.type == "cuda")
    clocks.read()
    t, d = plan["target"], plan["draft"]
    if not todo:
        _progress("[%s] complete already (%d rows in %s)" % (plan["name"], len(rows), path))
        _save(out_dir, plan, env, rows, "complete", clocks)
        return rows
    _progress(
        "[%s] %s: %d points to time (%d done), %d of %d layers, %s, on %s"
        % (
            plan["name"],
            t["name"],
            len(todo),
            len(plan["points"]) - len(todo),
            plan["layers_timed"],
            t["layers"],
            plan["mode"],
            env.get("gpu_name") or "CPU (test only, not a calibration)",
        )
    )
    moe_impl = None
    if t["is_moe"]:
        moe_impl = "grouped_mm" if tm.grouped_mm_works(device, tm.DTYPES[t["dtype"]]) else "loop"
        env["moe_impl"] = moe_impl
    timer = tm.Timer(device, reps=plan["reps"], warmup=plan["warmup"], flush_bytes=plan_mod.FLUSH_BYTES)
    pool_t = max([p["kv_tokens"] + p["tokens"] for p in plan["points"] if p["role"] == "target"] or [1])
    pool_d = max([p["kv_tokens"] + p["tokens"] for p in plan["points"] if p["role"] == "draft"] or [1])
    torch.manual_seed(seed)
    started = time.monotonic()
    built = time.monotonic()
    stacks = {}
    if any(p["role"] == "target" and p["family"] != "allreduce" for p in todo):
        stacks["target"] = tm.Stack(
            t,
            layers=plan["layers_timed"],
            device=device,
            pool_tokens=pool_t,
            attention=plan["attention"],
            moe_impl=moe_impl,
        )
    if d is not None and any(p["role"] == "draft" for p in todo):
        stacks["draft"] = tm.Stack(
            d, layers=1, device=device, pool_tokens=pool_d, attention=plan["attention"], fused_fc=True
        )
    if device.type == "cuda":
        torch.cuda.synchronize()
    _progress("[%s] weights and KV pool built in %.1f s" % (plan["name"], time.monotonic() - built))
    fused_only = device.type == "cuda" and plan["attention"] == "sdpa"
    errors = []
    allreduce = [p for p in todo if p["family"] == "allreduce"]
    timed = [p for p in todo if p["family"] != "allreduce"]
    for n, p in enumerate(timed, 1):
        role = p["role"]
        shape = d if role == "draft" else t
        stack = stacks[role]
        try:
            ctx = tm.Context(p, shape, device=device, seed=seed)
            fns = stack.groups(ctx)
            timings = [
                (group, _time_group(timer, fns[group], fused_only, tm, plan["attention"])) for group in p["groups"]
            ]
        except torch.cuda.OutOfMemoryError as exc:  # this point only; a later run retries it
            ctx = fns = None
            torch.cuda.empty_cache()
            errors.append({"point": p["id"], "error": "out of memory: %s" % str(exc).splitlines()[0]})
            _progress("[%s] %3d/%d %-24s OUT OF MEMORY, left for a later run" % (plan["name"], n, len(timed), p["id"]))
            continue
        point_rows = []
        for group, (st, attention) in timings:
            sm, mem = clocks.read()
            layers_timed = 1 if role == "draft" else (0 if group == "lm_head" else plan["layers_timed"])
            layers_model = shape["layers"] if group not in ("lm_head",) else 0
            point_rows.append(
                dict(
                    st,
                    shape=plan["name"],
                    model=shape["name"],
                    role=role,
                    family=p["family"],
                    group=group,
                    point=p["id"],
                    tokens=p["tokens"],
                    seqs=p["seqs"],
                    q_len=p["q_len"],
                    context=p["context"],
                    kv_tokens=p["kv_tokens"],
                    layers_timed=layers_timed,
                    layers_model=layers_model,
                    touched_experts=ctx.routing.touched if ctx.routing is not None else None,
                    sm_clock_mhz=sm,
                    mem_clock_mhz=mem,
                    device=env.get("gpu_name") or "cpu",
                    timer="cuda-events" if device.type == "cuda" else "cpu-perf_counter (NOT a calibration)",
                    moe_impl=moe_impl if shape["is_moe"] else None,
                    attention=attention,
                    message_bytes=None,
                    gpus=1,
                )
            )
        rows.extend(point_rows)
        del ctx, fns
        _save(out_dir, plan, env, rows, "running", clocks)
        elapsed = time.monotonic() - started
        eta = elapsed / n * (len(timed) - n)
        summary = " ".join("%s %.3f" % (r["group"], r["median_ms"]) for r in point_rows)
        _progress(
            "[%s] %3d/%d %-24s %s ms  (%.0f s, ~%.0f s left)"
            % (plan["name"], n, len(timed), p["id"], summary, elapsed, eta)
        )
    stacks.clear()
    if device.type == "cuda":
        torch.cuda.empty_cache()
    if allreduce:
        rows.extend(time_allreduce(plan, allreduce, gpu_ids=gpu_ids, device=device, torch=torch, env=env))
    env["errors"] = errors
    _save(out_dir, plan, env, rows, "incomplete" if errors else "complete", clocks)
    _progress(
        "[%s] %s: %d rows in %s (%.0f s)"
        % (
            plan["name"],
            "INCOMPLETE (%d points failed; run the same command again to retry them)" % len(errors)
            if errors
            else "complete",
            len(rows),
            path,
            time.monotonic() - started,
        )
    )
    return rows


def _time_group(timer, fn, fused_only, tm, label):
    """(statistics, attention label): under SDPA's fused kernels where asked; when PyTorch has
    none for a shape, once more with its default choice, labelled ``sdpa-any``."""
    if not fused_only:
        return timer.time(fn), label
    try:
        with tm.fused_attention_context():
            return timer.time(fn), "sdpa-fused"
    except RuntimeError as exc:
        if "kernel" not in str(exc).lower():
            raise
        return timer.time(fn), "sdpa-any"


def time_allreduce(plan, points, *, gpu_ids, device, torch, env):
    """Rows of the all-reduce family: one process per GPU (NCCL; gloo on a CPU test)."""
    import tempfile

    import _gpu_calibrate_torch as tm

    world = plan["gpus"]
    h = plan["target"]["hidden"]
    sizes = [p["tokens"] * h for p in points]
    use_cuda = device.type == "cuda"
    if use_cuda and gpu_ids:
        os.environ["CUDA_VISIBLE_DEVICES"] = ",".join(str(g) for g in gpu_ids)
    os.environ["NCCL_NVLS_ENABLE"] = "0"
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with tempfile.TemporaryDirectory() as tmp:
        result = os.path.join(tmp, "allreduce.json")
        _progress(
            "[%s] all-reduce over %d %s, %d sizes"
            % (plan["name"], world, "GPUs" if use_cuda else "CPU ranks", len(sizes))
        )
        torch.multiprocessing.spawn(
            tm.allreduce_worker,
            nprocs=world,
            join=True,
            args=(world, port, sizes, plan["reps"], plan["warmup"], plan["target"]["dtype"], result, use_cuda),
        )
        with open(result, encoding="utf-8") as fh:
            stats = json.load(fh)
    b = plan["target"]["dtype_bytes"]
    rows = []
    for p, numel in zip(points, sizes):
        st = stats[str(numel)]
        rows.append(
            dict(
                st,
                shape=plan["name"],
                model=plan["target"]["name"],
                role="target",
                family="allreduce",
                group="allreduce",
                point=p["id"],
                tokens=p["tokens"],
                seqs=p["seqs"],
                q_len=1,
                context=0,
                kv_tokens=0,
                layers_timed=0,
                layers_model=0,
                touched_experts=None,
                sm_clock_mhz=None,
                mem_clock_mhz=None,
                device=env.get("gpu_name") or "cpu",
                timer="cuda-events" if use_cuda else "cpu-perf_counter (NOT a calibration)",
                moe_impl=None,
                attention=None,
                message_bytes=numel * b,
                gpus=world,
            )
        )
        _progress(
            "[%s] all-reduce %d tokens (%d bytes): %.3f ms" % (plan["name"], p["tokens"], numel * b, st["median_ms"])
        )
    return rows


# -- command line ---------------------------------------------------------------------------------
def parse_args(argv):
    ap = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument(
        "--preset",
        action="append",
        default=[],
        help="shape preset(s): %s (repeat, or comma-separated)" % ", ".join(sorted(plan_mod.PRESETS)),
    )
    ap.add_argument("--model", help="target model: a data/models stem, or a .json/.toml shape file")
    ap.add_argument("--draft", help="draft model likewise ('none' for no draft)")
    ap.add_argument("--tp", type=int, default=1, help="tensor-parallel ranks: time one rank's shapes (default 1)")
    ap.add_argument(
        "--gpus",
        default=None,
        help="GPU indices, e.g. 0,1: the first times the layers; "
        "two or more also time the all-reduce (default: GPU 0, no all-reduce)",
    )
    mode = ap.add_mutually_exclusive_group()
    mode.add_argument(
        "--quick",
        action="store_const",
        const="quick",
        dest="mode",
        help="the short grid (about 1-3 min of GPU time per shape on an H200)",
    )
    mode.add_argument("--full", action="store_const", const="full", dest="mode", help="the full grid (default)")
    ap.add_argument(
        "--layers", type=int, default=None, help="decoder layers to time (default: preset's with --quick, else all)"
    )
    ap.add_argument("--attention", choices=["sdpa", "math"], default="sdpa")
    ap.add_argument("--reps", type=int, default=None, help="timed replays per kernel group")
    ap.add_argument("--warmup", type=int, default=None, help="untimed replays per kernel group")
    ap.add_argument("--out", default=None, help="output folder (default ./gpu-calibration)")
    ap.add_argument(
        "--device",
        choices=["auto", "cuda", "cpu"],
        default="auto",
        help="cpu: time the tiny test shapes on the CPU (a test of the program, never a calibration)",
    )
    ap.add_argument("--restart", action="store_true", help="discard an existing table of another plan")
    ap.add_argument("--dry-run", action="store_true", help="print the plan (points, memory, time) and exit; no torch")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    args.mode = args.mode or "full"
    args.presets = [p for item in args.preset for p in item.split(",") if p]
    return args


def plans_from_args(args):
    """One validated plan per shape asked for.

    Raises:
        plan_mod.PlanError: a bad request.
    """
    gpu_ids = [int(g) for g in args.gpus.split(",")] if args.gpus else None
    gpus = len(gpu_ids) if gpu_ids else 1
    common = dict(
        mode=args.mode,
        tp=args.tp,
        gpus=gpus,
        layers=args.layers,
        attention=args.attention,
        models_dir=_repo_models_dir(),
        reps=args.reps,
        warmup=args.warmup,
    )
    if args.model:
        if args.presets:
            raise plan_mod.PlanError("give --preset or --model, not both")
        return [plan_mod.make_plan(None, model=args.model, draft=args.draft, **common)]
    if not args.presets:
        raise plan_mod.PlanError("give --preset (%s) or --model" % ", ".join(sorted(plan_mod.PRESETS)))
    return [plan_mod.make_plan(p, draft=args.draft, **common) for p in args.presets]


def summary(plan):
    """A short JSON-able description of a plan (for --dry-run)."""
    fams = {}
    for p in plan["points"]:
        fams[p["family"]] = fams.get(p["family"], 0) + 1
    return {
        "name": plan["name"],
        "key": plan["key"],
        "target": plan["target"]["name"],
        "draft": plan["draft"]["name"] if plan["draft"] else None,
        "mode": plan["mode"],
        "tp": plan["tp"],
        "layers_timed": plan["layers_timed"],
        "layers_model": plan["target"]["layers"],
        "points": len(plan["points"]),
        "families": fams,
        "left_out": len(plan["left_out"]),
        "memory_gb": {k: round(v / 1e9, 2) for k, v in plan["memory"].items()},
        "estimated_gpu_s": round(plan_mod.estimate_seconds(plan), 1),
    }


def pick_device(choice, plans):
    """The torch module and device to time on.

    Raises:
        Refused: no torch, no GPU (with --device auto/cuda), or a CPU run of a real shape.
    """
    try:
        import torch
    except ImportError:
        raise Refused(
            "PyTorch is not installed for %s (%s); run this with the Python that has torch, e.g. "
            "--python /path/to/env/bin/python" % (sys.executable, platform.python_version())
        )
    if choice in ("auto", "cuda"):
        if not torch.cuda.is_available():
            raise Refused(
                "no CUDA GPU is visible to torch %s (CUDA build %s) on %s: calibration needs a GPU. "
                "To test the program on a CPU: --device cpu --preset tiny"
                % (torch.__version__, torch.version.cuda, socket.gethostname())
            )
        return torch, torch.device("cuda", 0)
    big = [p["name"] for p in plans if p["target"]["hidden"] > 1024]
    if big:
        raise Refused(
            "--device cpu times only test shapes (preset tiny, tiny-moe): %s is a real model; CPU timings "
            "are never a calibration" % ", ".join(big)
        )
    return torch, torch.device("cpu")


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    try:
        plans = plans_from_args(args)
        if args.dry_run:
            for plan in plans:
                if args.out:
                    os.makedirs(args.out, exist_ok=True)
                    _write_atomic(os.path.join(args.out, plan["name"] + ".plan.json"), json.dumps(plan, indent=1))
            sys.stdout.write(json.dumps({"ok": True, "plans": [summary(p) for p in plans]}, indent=1) + "\n")
            return 0
        torch, device = pick_device(args.device, plans)
        out_dir = args.out or "gpu-calibration"
        os.makedirs(out_dir, exist_ok=True)
        os.environ.setdefault("NCCL_NVLS_ENABLE", "0")
        gpu_ids = [int(g) for g in args.gpus.split(",")] if args.gpus else None
        if gpu_ids and device.type == "cuda":
            torch.cuda.set_device(gpu_ids[0])
            device = torch.device("cuda", gpu_ids[0])
        failed, refused = [], []
        for plan in plans:
            s = summary(plan)
            _progress(
                "[%s] plan %s: %d points, %.1f GB on the GPU, about %.0f s of GPU time"
                % (plan["name"], plan["key"], s["points"], plan["memory"]["total"] / 1e9, s["estimated_gpu_s"])
            )
            try:
                run_shape(
                    plan,
                    out_dir=out_dir,
                    device=device,
                    torch=torch,
                    restart=args.restart,
                    seed=args.seed,
                    gpu_ids=gpu_ids,
                )
            except Refused as exc:  # this shape only (e.g. it does not fit); the next one still runs
                sys.stderr.write("gpu_calibrate: refused: %s\n" % exc)
                refused.append(plan["name"])
            except Exception:  # noqa: BLE001 - the program's boundary: the next shape still runs
                import traceback

                sys.stderr.write(
                    "gpu_calibrate: shape %s FAILED (its table keeps the points timed so far; run "
                    "the same command again to resume):\n%s" % (plan["name"], traceback.format_exc())
                )
                failed.append(plan["name"])
            if device.type == "cuda":
                import gc

                gc.collect()
                torch.cuda.empty_cache()
        return 1 if failed else (2 if refused else 0)
    except (plan_mod.PlanError, Refused) as exc:
        sys.stderr.write("gpu_calibrate: refused: %s\n" % exc)
        return 2


if __name__ == "__main__":
    sys.exit(main())
