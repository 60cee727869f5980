"""Real-engine calibration tables: SGLang 0.5.17's own step costs on the GPU machine (issue 31).

Called by ``benchmarks/real_sglang_gpu.py calib [POINTS] --out DIR`` on the GPU machine. For each calibration
server (a model, plain decoding or an EAGLE-3 shape, a forced accept length) it starts the server through
:class:`workbench.servers.ServerHandle`, then at each batch size ``b``:

* **a closed wave**: ``b`` requests sent at once (random token ids, ``--input-len`` prompt tokens, ``--wave-tokens``
  output tokens, ``ignore_eos``, greedy), so the batch decodes at exactly ``b`` running requests. Output tok/s is
  the wave's output tokens over its wall time (prefill included); the **step time** comes from SGLang's own
  ``Decode batch`` log lines (``--decode-log-interval 8``) at ``#running-req: b``: ``b x accept len / gen
  throughput``, the median over the wave's intervals (its first interval, which holds the prefill and the idle
  gap before the wave, is dropped);
* at the profiled batches, **GPU time versus host time**: a second wave, during which SGLang's own torch
  profiler (``/start_profile``, CUDA activity only: the kernels CUPTI records, including those replayed from CUDA
  graphs) records ``num_steps`` forward steps. The union of kernel intervals over the trace's window is the GPU
  busy fraction; the rest of the step is time the GPU waited on the host (scheduling, planning, syncs).

Everything measured is written after each server (``calib-<label>.json``), so a call cut short keeps it.
"""

from __future__ import annotations

import dataclasses
import gzip
import json
import random
import re
import statistics
import threading
import time
from pathlib import Path
from typing import Any, Callable

#: Calibration servers: (name, model, EAGLE-3 shape (num_steps, topk, num_draft_tokens) or None, forced accept
#: length). Typical accept lengths of each shape, and a second one for the chain of 3 and the 16-token tree.
POINTS: tuple[tuple[str, str, tuple[int, int, int] | None, float | None], ...] = (
    ("l8b-baseline", "llama31-8b", None, None),
    ("l8b-chain3-acc3.0", "llama31-8b", (3, 1, 4), 3.0),
    ("l8b-chain7-acc4.5", "llama31-8b", (7, 1, 8), 4.5),
    ("l8b-tree16-acc3.6", "llama31-8b", (3, 4, 16), 3.6),
    ("l8b-tree8-acc3.4", "llama31-8b", (3, 4, 8), 3.4),
    ("l8b-chain3-acc2.0", "llama31-8b", (3, 1, 4), 2.0),
    ("l8b-tree16-acc2.5", "llama31-8b", (3, 4, 16), 2.5),
    ("q30b-baseline", "qwen3-30b-a3b", None, None),
    ("q30b-chain3-acc3.0", "qwen3-30b-a3b", (3, 1, 4), 3.0),
    ("q30b-tree16-acc3.6", "qwen3-30b-a3b", (3, 4, 16), 3.6),
    ("q30b-chain7-acc4.5", "qwen3-30b-a3b", (7, 1, 8), 4.5),
    ("q30b-tree8-acc3.4", "qwen3-30b-a3b", (3, 4, 8), 3.4),
    ("q30b-chain3-acc2.0", "qwen3-30b-a3b", (3, 1, 4), 2.0),
    ("q30b-tree16-acc2.5", "qwen3-30b-a3b", (3, 4, 16), 2.5),
)
#: Each model's folder under the models directory, its EAGLE-3 draft's folder and its static memory fraction
#: (the MoE model's 61 GB of weights need more of an 80 GB card).
MODELS = {"llama31-8b": ("llama31-8b", "eagle3", 0.8), "qwen3-30b-a3b": ("qwen3-30b-a3b", "eagle3-qwen3-30b-a3b", 0.88)}
DECODE_LINE = re.compile(
    r"Decode batch.*?#running-req: (?P<running>\d+).*?(?:accept len: (?P<acc>[\d.]+).*?)?"
    r"gen throughput \(token/s\): (?P<tput>[\d.]+)"
)
#: Kernel name -> the part of the step it belongs to (first match wins).
CATEGORIES = (
    ("moe", re.compile(r"moe|expert|topk_softmax|fused_moe|align_block", re.I)),
    ("attention", re.compile(r"attn|attention|flash|decode_kernel|extend|_fwd_kernel|mla", re.I)),
    ("gemm", re.compile(r"gemm|cutlass|sm90_xmma|nvjet|cublas|matmul|splitK|ampere|hopper", re.I)),
    (
        "tree_and_sampling",
        re.compile(
            r"tree|mask|verify|accept|sample|argmax|topk|sort|softmax|scan|cumsum|gather|"
            r"index|scatter",
            re.I,
        ),
    ),
    ("norm_rope_act", re.compile(r"norm|rope|rotary|silu|act_and_mul|gelu", re.I)),
    ("copy_memset", re.compile(r"copy|memcpy|memset|fill|cat_|elementwise", re.I)),
)


def points(selected: list[str]) -> list[tuple[str, str, tuple[int, int, int] | None, float | None]]:
    """The calibration servers named (by name or by a name prefix like ``q30b``), all when none are."""
    if not selected:
        return list(POINTS)
    chosen = [p for s in selected for p in POINTS if p[0] == s or p[0].startswith(s)]  # in the order asked
    unknown = [s for s in selected if not any(p[0] == s or p[0].startswith(s) for p in POINTS)]
    if unknown:
        raise SystemExit(f"unknown calibration point(s) {unknown}; known: {[p[0] for p in POINTS]}")
    return chosen


def variant_for(
    point: tuple[str, str, tuple[int, int, int] | None, float | None], base: Any, models_dir: Path, prefill_graphs: bool
) -> Any:
    """The server of one calibration point, from the recipe's baseline variant."""
    name, model, shape, acc = point
    folder, draft, fraction = MODELS[model]
    flags = {k: v for k, v in base.flags.items() if not k.startswith("speculative-")}
    flags.update({"mem-fraction-static": fraction, "decode-log-interval": 8})
    if not prefill_graphs:
        flags["cuda-graph-backend-prefill"] = "disabled"  # decode is what is measured; saves 8-50 s a start
    env: dict[str, str] = {}
    draft_path = None
    if shape is not None:
        steps, topk, tokens = shape
        flags.update(
            {
                "speculative-algorithm": "EAGLE3",
                "speculative-num-steps": steps,
                "speculative-eagle-topk": topk,
                "speculative-num-draft-tokens": tokens,
            }
        )
        env["SGLANG_SIMULATE_ACC_LEN"] = str(acc)
        draft_path = str(models_dir / draft)
    return dataclasses.replace(
        base,
        name=name,
        model_path=str(models_dir / folder),
        draft_model_path=draft_path,
        flags=flags,
        env=env,
        description=f"calibration point {name}",
    )


def _post(url: str, body: Any, timeout_s: float) -> tuple[int, dict[str, Any] | None, str]:
    import urllib.error
    import urllib.request

    req = urllib.request.Request(
        url, data=json.dumps(body).encode(), method="POST", headers={"Content-Type": "application/json"}
    )
    try:
        with urllib.request.urlopen(req, timeout=timeout_s) as resp:
            raw = resp.read().decode("utf-8", "replace")
            status = resp.status
    except urllib.error.HTTPError as exc:
        return exc.code, None, exc.read().decode("utf-8", "replace")[:500]
    except OSError as exc:
        return 0, None, f"{type(exc).__name__}: {exc}"
    try:
        return status, json.loads(raw), ""
    except ValueError:
        return status, None, raw[:500]


def _launch_wave(url: str, b: int, input_len: int, tokens: int, seed: int) -> tuple[list[threading.Thread], list[Any]]:
    rng = random.Random(seed)
    prompts = [[rng.randrange(1000, 100_000) for _ in range(input_len)] for _ in range(b)]
    results: list[Any] = [None] * b

    def one(i: int) -> None:
        t0 = time.monotonic()
        status, body, err = _post(
            url + "/generate",
            {
                "input_ids": prompts[i],
                "sampling_params": {"max_new_tokens": tokens, "ignore_eos": True, "temperature": 0},
            },
            timeout_s=600,
        )
        results[i] = (t0, time.monotonic(), status, body, err)

    threads = [threading.Thread(target=one, args=(i,), daemon=True) for i in range(b)]
    for t in threads:
        t.start()
    return threads, results


def _decode_lines(text: str, b: int) -> list[dict[str, float]]:
    rows = []
    for m in DECODE_LINE.finditer(text):
        if int(m["running"]) == b:
            acc = float(m["acc"]) if m["acc"] else 1.0
            tput = float(m["tput"])
            if tput > 0:
                rows.append({"accept_length": acc, "gen_tok_s": tput, "step_ms": 1000.0 * b * acc / tput})
    return rows


def wave(url: str, log_path: Path, b: int, *, input_len: int, tokens: int, seed: int) -> dict[str, Any]:
    """One closed wave of ``b`` requests: client throughput and SGLang's own step times at ``b`` running."""
    start = log_path.stat().st_size
    threads, results = _launch_wave(url, b, input_len, tokens, seed)
    for t in threads:
        t.join(timeout=620)
    time.sleep(0.3)  # the last decode line is flushed
    with open(log_path, "rb") as fh:
        fh.seek(start)
        text = fh.read().decode("utf-8", "replace")
    done = [r for r in results if r is not None and r[2] == 200 and r[3]]
    errors = [r[4] or str(r[2]) for r in results if r is None or r[2] != 200]
    row: dict[str, Any] = {"batch": b, "requests": b, "ok": len(done), "errors": errors[:3]}
    if done:
        wall = max(r[1] for r in done) - min(r[0] for r in done)
        out_tokens = [r[3]["meta_info"].get("completion_tokens", 0) for r in done]
        verify = [r[3]["meta_info"].get("spec_verify_ct", 0) or 0 for r in done]
        row.update(
            wall_s=round(wall, 4),
            output_tokens=sum(out_tokens),
            output_tok_s=round(sum(out_tokens) / wall, 2),
            per_request_tok_s=round(statistics.mean(t / (r[1] - r[0]) for t, r in zip(out_tokens, done)), 2),
        )
        if sum(verify):
            row["accept_length_client"] = round(sum(out_tokens) / sum(verify), 4)
    lines = _decode_lines(text, b)[1:]  # the first interval holds the prefill and the gap before the wave
    row["decode_log_intervals"] = len(lines)
    if lines:
        steps = sorted(x["step_ms"] for x in lines)
        row.update(
            step_ms=round(statistics.median(steps), 4),
            step_ms_lo=round(steps[len(steps) // 4], 4),
            step_ms_hi=round(steps[(3 * len(steps)) // 4], 4),
            accept_length_log=round(statistics.median(x["accept_length"] for x in lines), 4),
            gen_tok_s_log=round(statistics.median(x["gen_tok_s"] for x in lines), 2),
        )
    return row


#: Forward iterations each profile records (``/start_profile``'s ``num_steps``), and how long after a profiled
#: wave's requests are sent the profiler starts (every request prefilled and decoding by then).
PROFILED_STEPS = 16
PROFILE_DELAY_S = 1.5


def gpu_events(path: Path, cats: tuple[str, ...] = ("kernel", "gpu_memcpy", "gpu_memset")) -> list[dict[str, Any]]:
    """The complete GPU events of one torch-profiler trace (``.trace.json.gz``) whose category is in ``cats``."""
    with gzip.open(path, "rt") as fh:
        data = json.load(fh)
    return [e for e in data.get("traceEvents", []) if e.get("ph") == "X" and e.get("cat") in cats and "dur" in e]


def trace_summary(path: Path, num_steps: int) -> dict[str, Any]:
    """GPU busy time, window and per-category kernel time of one torch-profiler trace (CUDA activity)."""
    events = gpu_events(path)
    if not events:
        return {"events": 0}
    spans = sorted((float(e["ts"]), float(e["ts"]) + float(e["dur"])) for e in events)
    busy, cur_s, cur_e = 0.0, spans[0][0], spans[0][1]
    for s, e in spans[1:]:
        if s > cur_e:
            busy += cur_e - cur_s
            cur_s, cur_e = s, e
        else:
            cur_e = max(cur_e, e)
    busy += cur_e - cur_s
    window = max(e for _, e in spans) - spans[0][0]
    cats: dict[str, float] = {}
    names: dict[str, float] = {}
    for e in events:
        name = str(e.get("name", ""))
        cat = "other"
        if e.get("cat") != "kernel":
            cat = "copy_memset"
        else:
            for label, rx in CATEGORIES:
                if rx.search(name):
                    cat = label
                    break
        cats[cat] = cats.get(cat, 0.0) + float(e["dur"])
        names[name[:90]] = names.get(name[:90], 0.0) + float(e["dur"])
    top = sorted(names.items(), key=lambda kv: -kv[1])[:12]
    return {
        "events": len(events),
        "window_ms": round(window / 1000, 3),
        "gpu_busy_ms": round(busy / 1000, 3),
        "busy_fraction": round(busy / window, 4) if window else None,
        "profiled_steps": num_steps,
        "kernel_ms_by_part": {k: round(v / 1000, 3) for k, v in sorted(cats.items())},
        "top_kernels_ms": [[n, round(v / 1000, 3)] for n, v in top],
    }


def profile(
    url: str, b: int, *, input_len: int, prefix: str, trace_dir: Path, num_steps: int, seed: int
) -> dict[str, Any]:
    """SGLang's torch profiler over ``num_steps`` steps at ``b`` running requests; the trace's GPU busy share."""
    trace_dir.mkdir(parents=True, exist_ok=True)
    before = set(trace_dir.glob("*.trace.json.gz"))
    threads, _ = _launch_wave(url, b, input_len, 4000, seed)
    time.sleep(PROFILE_DELAY_S)  # every request prefilled and decoding
    t0 = time.monotonic()
    status, _, err = _post(
        url + "/start_profile",
        {
            "output_dir": str(trace_dir),
            "num_steps": num_steps,
            "activities": ["GPU"],
            "with_stack": False,
            "record_shapes": False,
            "profile_prefix": prefix,
        },
        timeout_s=120,
    )
    trace = None
    while status == 200 and time.monotonic() - t0 < 90:
        new = sorted(set(trace_dir.glob("*.trace.json.gz")) - before)
        if new:
            time.sleep(1.0)  # written out
            trace = new[0]
            break
        time.sleep(0.25)
    _post(url + "/abort_request", {"rid": "", "abort_all": True}, timeout_s=30)
    for t in threads:
        t.join(timeout=60)
    if trace is None:
        return {"batch": b, "error": f"no trace (start_profile {status} {err})"}
    try:
        return {"batch": b, "trace": trace.name, "trace_bytes": trace.stat().st_size, **trace_summary(trace, num_steps)}
    except (OSError, ValueError, KeyError) as exc:
        return {"batch": b, "trace": trace.name, "error": f"{type(exc).__name__}: {exc}"}


def run(
    selected: list[str],
    *,
    out: Path,
    label: str,
    batches: list[int],
    profiled: list[int],
    input_len: int,
    tokens: int,
    models_dir: Path,
    base: Any,
    engine: str,
    deadline_s: float,
    gpu: Callable[[], str],
    leftovers: Callable[[], list[str]],
) -> dict[str, Any]:
    """Every selected calibration server, each at every batch; written to ``calib-<label>.json`` as it goes."""
    from workbench.engines import get_engine
    from workbench.errors import WorkbenchError
    from workbench.servers import ServerHandle, startup_timings

    t_start = time.monotonic()
    doc: dict[str, Any] = {
        "label": label,
        "gpu": gpu(),
        "sglang": "0.5.17",
        "attention_backend": "triton",
        "input_len": input_len,
        "wave_tokens": tokens,
        "batches": batches,
        "profiled": profiled,
        "servers": [],
    }
    path = out / f"calib-{label}.json"
    trace_dir = Path("/tmp/wb-traces")
    for i, point in enumerate(points(selected)):
        if time.monotonic() - t_start > deadline_s:
            doc["servers"].append({"name": point[0], "skipped": "deadline"})
            continue
        record: dict[str, Any] = {
            "name": point[0],
            "model": point[1],
            "shape": point[2],
            "forced_accept_length": point[3],
        }
        t0 = time.monotonic()
        for prefill_graphs in (False, True):
            variant = variant_for(point, base, models_dir, prefill_graphs)
            if not get_engine(engine).wants_gpus:  # a dry run of this script without a GPU: an H200 8B profile
                variant = dataclasses.replace(variant, flags={**variant.flags, "sim-profile": "h200-llama3-8b"})
            try:
                with ServerHandle.start(variant, host="local", engine=engine, ready_timeout_s=600) as server:
                    log_path = Path(server.log_path)
                    record.update(
                        command=server.command,
                        env=variant.env,
                        ready_after_s=server.ready_after_s,
                        gpu_at_ready=gpu(),
                        prefill_cuda_graphs=prefill_graphs,
                    )
                    wave(server.url, log_path, 1, input_len=16, tokens=16, seed=0)  # warm-up, not recorded
                    record["waves"] = []
                    for b in batches:
                        record["waves"].append(
                            wave(server.url, log_path, b, input_len=input_len, tokens=tokens, seed=1000 + b)
                        )
                    record["profiles"] = []
                    for b in profiled:
                        record["profiles"].append(
                            profile(
                                server.url,
                                b,
                                input_len=input_len,
                                trace_dir=trace_dir,
                                prefix=f"{point[0]}-b{b}",
                                num_steps=PROFILED_STEPS,
                                seed=2000 + b,
                            )
                        )
                    record["startup"] = startup_timings(log_path.read_text(errors="replace"))
                    record.pop("error", None)
                break
            except WorkbenchError as exc:
                record["error"] = f"{type(exc).__name__}: {str(exc)[:1500]}"
                said = str(getattr(exc, "log_tail", "")) + str(exc)
                if prefill_graphs or not re.search(r"cuda[-_]graph[-_]backend[-_]prefill", said):
                    break
        record["wall_s"] = round(time.monotonic() - t0, 1)
        record["left_running"] = leftovers()
        doc["servers"].append(record)
        path.write_text(json.dumps(doc, indent=1))
        summary = [(w["batch"], w.get("output_tok_s"), w.get("step_ms")) for w in record.get("waves", [])]
        print(
            f"[{time.strftime('%H:%M:%S')}] calib {point[0]}: {record['wall_s']} s {record.get('error', '')[:200]} "
            f"{summary}",
            flush=True,
        )
    doc["wall_s"] = round(time.monotonic() - t_start, 1)
    path.write_text(json.dumps(doc, indent=1))
    return {
        "file": path.name,
        "servers": [(s["name"], s.get("wall_s"), s.get("error", s.get("skipped", "ok"))[:120]) for s in doc["servers"]],
    }
