"""The client, proven: chunk timing error and streamed tok/s of the workbench's load generator,
beside sglang.bench_serving's, against the same simulated server in the same run.

The server is ``python -m workbench.sim`` with a flat cost profile (every iteration 20 ms,
whatever the batch: 50 tokens/s per stream, one token per chunk, cumulative text and
output ids as SGLang 0.5.9 streams them) and ``--sim-emit-timestamps``, so every chunk
carries ``meta_info.emit_ts``: the Unix time just before the server wrote it. At each
concurrency (default 64, 256, 1,024; one request per stream, ``--output-len`` tokens
each, random token ids as the prompt):

1. the workbench client (``workbench.bench`` closed loop, ``/generate``; in ``--procs``
   worker processes, each with its share of the streams, on asyncio or ``--loop uvloop``)
   records each read's arrival (the kernel's receive stamp of the read, ``SO_TIMESTAMPNS``,
   as the load generator takes it by default; or, with ``--rx-stamps off``, when the event
   loop hands the read over: ``Timebase``, perf_counter anchored to the epoch; ``both``, the
   default, runs the client both ways one after the other at each level) and
   compares it with the emission time of every chunk in it: ``|arrival - emit_ts|``
   per chunk, its p50/p99/max; the share of chunks that shared a read; the streamed
   tokens per second (tokens over first to last chunk arrival); client CPU seconds
   (user + system, of the worker processes) per million tokens;
2. ``python -m sglang.bench_serving --backend sglang`` (installed from the 0.5.9 wheel the
   ``benchmarks/bench_serving_compat.sh`` way, in ``$BS_VENV``, default ``/tmp/bsvenv``)
   with the same streams, prompt length and output length: it records no arrival times,
   so its figures are its ITL list's share of gaps under 1 ms (chunks that came in one
   read: it stamps each line as it reads it, microseconds apart) and p99 excess over the
   server's step, its output tok/s, and its CPU seconds per million tokens.

A read that carries several chunks has one arrival: with kernel stamps, the newest segment's, so
its older chunks count as late; the p99 over chunks alone in their read is printed beside the
p99 over all chunks. uvloop does not call ``socket.recv``, so there every read keeps the loop's
time (the "reads kernel-stamped" column says so).

For both clients the ITL excess ``|gap - 20 ms|`` p99 is printed too: it mixes the
client's error with the server's own lateness (a server behind its 20 ms schedule on a
busy machine), which the emission stamps separate for the workbench client.

Prints a markdown table (and ``--json`` writes every figure). The machine's load
average before and after each client is printed: on a shared machine the figures
carry that noise.

Usage::

    .venv/bin/python benchmarks/client_fidelity.py [--levels 64 256 1024] [--output-len 256]
        [--procs 1] [--loop asyncio|uvloop] [--rx-stamps on|off|both] [--no-bench-serving] [--json out.json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
STEP_MS = 20.0
PROFILE = f"""[profile]
name = "flat-{STEP_MS:g}ms"
description = "Client fidelity: every iteration takes {STEP_MS:g} ms, whatever the batch."
sglang_version = "0.5.9"

[hardware]
kv_capacity_tokens = 50000000

[cost]
base_ms = {STEP_MS}
per_token_ms = 0.0
"""
INPUT_LEN = 32


def _pct(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    pos = (len(ordered) - 1) * q / 100.0
    lo = int(pos)
    hi = min(lo + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (pos - lo)


# -- the workbench client, in a worker process ----------------------------------------------------


async def _worker(url: str, streams: int, output_len: int, seed: int, kernel_stamps: bool) -> dict:
    from workbench.bench._loadgen import closed_loop
    from workbench.bench._measure import open_session
    from workbench.bench._prompts import random_token_prompts
    from workbench.bench._timing import Timebase

    tb = Timebase.start()
    reads: list[tuple[float, list[float]]] = []

    def observe(events, t):
        stamps = [
            e.data["meta_info"]["emit_ts"]
            for e in events
            if e.kind == "chunk" and e.data and "emit_ts" in e.data.get("meta_info", {})
        ]
        if stamps:
            reads.append((t, stamps))

    prompts = random_token_prompts(streams, INPUT_LEN, seed=seed)
    cpu0 = resource.getrusage(resource.RUSAGE_SELF)
    async with open_session(streams, kernel_stamps=kernel_stamps) as session:
        records = await closed_loop(
            session,
            url,
            prompts,
            concurrency=streams,
            max_new_tokens=output_len,
            timebase=tb,
            timeout_s=600.0,
            observer=observe,
        )
    cpu1 = resource.getrusage(resource.RUSAGE_SELF)
    errors_ms = [abs(tb.epoch_s(t) - emit) * 1000.0 for t, stamps in reads for emit in stamps]
    alone_ms = [abs(tb.epoch_s(t) - stamps[0]) * 1000.0 for t, stamps in reads if len(stamps) == 1]
    signed_ms = [(tb.epoch_s(t) - emit) * 1000.0 for t, stamps in reads for emit in stamps]
    itl = [g for r in records for g in r.itl_ms]
    return {
        "errors_ms": errors_ms,
        "alone_errors_ms": alone_ms,
        "min_signed_ms": min(signed_ms) if signed_ms else float("nan"),
        "reads": sum(r.num_reads for r in records),
        "kernel_reads": sum(r.kernel_stamped_reads for r in records),
        "chunks": len(errors_ms),
        "shared_read_chunks": sum(len(s) for _, s in reads if len(s) > 1),
        "tokens": sum(r.output_tokens or 0 for r in records),
        "failed": sum(not r.ok for r in records),
        "first_epoch": min((tb.epoch_s(t) for t, _ in reads), default=float("nan")),
        "last_epoch": max((tb.epoch_s(t) for t, _ in reads), default=float("nan")),
        "cpu_s": (cpu1.ru_utime - cpu0.ru_utime) + (cpu1.ru_stime - cpu0.ru_stime),
        "itl_excess_ms": [abs(g - STEP_MS) for g in itl],
        "itls": len(itl),
        "sub_ms_itls": sum(g < 1.0 for g in itl),
    }


def worker_main(args: argparse.Namespace) -> int:
    if args.loop == "uvloop":
        import uvloop  # SGLang depends on it; optional for the workbench

        uvloop.install()
    result = asyncio.run(_worker(args.url, args.streams, args.output_len, args.seed, args.rx_stamps == "on"))
    json.dump(result, sys.stdout)
    return 0


# -- orchestration ---------------------------------------------------------------------------------


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _loadavg() -> str:
    return " ".join(f"{x:.1f}" for x in os.getloadavg())


def start_server(port: int, max_streams: int, log_path: Path, profile_path: Path) -> subprocess.Popen:
    cmd = [
        sys.executable,
        "-m",
        "workbench.sim",
        "--model-path",
        "meta-llama/Llama-3.3-70B-Instruct",
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--sim-profile",
        str(profile_path),
        "--sim-emit-timestamps",
        "--max-running-requests",
        str(max_streams),
        "--chunked-prefill-size",
        str(max_streams * INPUT_LEN),
    ]
    proc = subprocess.Popen(cmd, stdout=log_path.open("w"), stderr=subprocess.STDOUT, cwd=REPO)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"the simulated server exited {proc.returncode}; log: {log_path}")
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=5) as resp:
                if resp.status == 200:
                    return proc
        except OSError:
            time.sleep(0.5)
    proc.kill()
    raise SystemExit(f"the simulated server did not get ready in 120 s; log: {log_path}")


def run_workbench(url: str, streams: int, output_len: int, procs: int, loop: str, rx_stamps: str) -> dict:
    shares = [streams // procs + (1 if i < streams % procs else 0) for i in range(procs)]
    workers = [
        subprocess.Popen(
            [
                sys.executable,
                __file__,
                "--worker",
                "--url",
                url,
                "--streams",
                str(n),
                "--output-len",
                str(output_len),
                "--seed",
                str(i),
                "--loop",
                loop,
                "--rx-stamps",
                rx_stamps,
            ],
            stdout=subprocess.PIPE,
            cwd=REPO,
        )
        for i, n in enumerate(shares)
        if n
    ]
    parts = []
    for w in workers:
        out, _ = w.communicate(timeout=900)
        if w.returncode != 0:
            raise SystemExit(f"client worker exited {w.returncode}")
        parts.append(json.loads(out))
    errors = [e for p in parts for e in p["errors_ms"]]
    itl_excess = [e for p in parts for e in p["itl_excess_ms"]]
    tokens = sum(p["tokens"] for p in parts)
    span = max(p["last_epoch"] for p in parts) - min(p["first_epoch"] for p in parts)
    cpu = sum(p["cpu_s"] for p in parts)
    alone = [e for p in parts for e in p["alone_errors_ms"]]
    return {
        "p50_error_ms": _pct(errors, 50),
        "p99_error_ms": _pct(errors, 99),
        "max_error_ms": max(errors),
        "p99_alone_error_ms": _pct(alone, 99),
        "rx_stamps": rx_stamps,
        "kernel_read_share": sum(p["kernel_reads"] for p in parts) / max(1, sum(p["reads"] for p in parts)),
        "min_signed_error_ms": min(p["min_signed_ms"] for p in parts),
        "shared_read_share": sum(p["shared_read_chunks"] for p in parts) / max(1, len(errors)),
        "chunks": len(errors),
        "tokens": tokens,
        "failed": sum(p["failed"] for p in parts),
        "streamed_tok_s": tokens / span if span > 0 else float("nan"),
        "cpu_s": cpu,
        "cpu_s_per_mtok": cpu / tokens * 1e6 if tokens else float("nan"),
        "p99_itl_excess_ms": _pct(itl_excess, 99),
        "sub_ms_itl_share": sum(p["sub_ms_itls"] for p in parts) / max(1, sum(p["itls"] for p in parts)),
    }


def run_bench_serving(
    url: str, streams: int, output_len: int, bs_python: Path, out_dir: Path, startup_cpu_s: float = 0.0
) -> dict:
    """One bench_serving run; its CPU counts from process start, so ``startup_cpu_s`` (what a run of
    one 1-token request costs: imports, tokenizer, warmup) is taken off for the per-token figure."""
    out = out_dir / f"bs_{streams}_{output_len}.jsonl"
    env = dict(os.environ, HF_HUB_OFFLINE="1", HF_DATASETS_OFFLINE="1", TRANSFORMERS_OFFLINE="1")
    cmd = [
        str(bs_python),
        "-m",
        "sglang.bench_serving",
        "--backend",
        "sglang",
        "--base-url",
        url,
        "--dataset-name",
        "random-ids",
        "--random-input-len",
        str(INPUT_LEN),
        "--random-output-len",
        str(output_len),
        "--random-range-ratio",
        "1.0",
        "--num-prompts",
        str(streams),
        "--max-concurrency",
        str(streams),
        "--tokenizer",
        str(REPO / "data" / "tokenizer"),
        "--output-file",
        str(out),
        "--output-details",
        "--disable-tqdm",
        "--warmup-requests",
        "1",
    ]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=900)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        raise SystemExit(f"bench_serving exited {proc.returncode}:\n{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}")
    record = json.loads(out.read_text().splitlines()[-1])
    itls = [g * 1000.0 for request in record.get("itls", []) for g in request]
    tokens = int(record.get("total_output_tokens") or sum(record.get("output_lens", [])))
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return {
        "output_tok_s": float(record.get("output_throughput", float("nan"))),
        "tokens": tokens,
        "completed": record.get("completed"),
        "cpu_s": cpu,
        "startup_cpu_s": startup_cpu_s,
        "cpu_s_per_mtok": (cpu - startup_cpu_s) / tokens * 1e6 if tokens else float("nan"),
        "zero_itl_share": sum(g == 0.0 for g in itls) / max(1, len(itls)),
        "sub_ms_itl_share": sum(g < 1.0 for g in itls) / max(1, len(itls)),
        "p99_itl_excess_ms": _pct([abs(g - STEP_MS) for g in itls if g > 0.0], 99),
        "p99_itl_ms": _pct(itls, 99),
    }


def table(rows: list[dict], args: argparse.Namespace) -> str:
    head = (
        "| streams | client | chunks | streamed tok/s | p50 \\|arrival − emit\\| ms | p99 ms | max ms "
        "| p99 ms, chunks alone in their read | reads kernel-stamped | chunks sharing a read | ITLs < 1 ms "
        "| p99 \\|ITL − 20 ms\\| ms | CPU s / Mtok | load avg before → after |"
    )
    lines = [head, "|" + "---|" * 14]
    for r in rows:
        bs = r.get("bench_serving")
        for key in ("workbench", "workbench_loop"):
            wb = r.get(key)
            if wb is None:
                continue
            stamps = "kernel stamps" if wb["rx_stamps"] == "on" else "loop stamps"
            lines.append(
                f"| {r['streams']:,} | workbench ({args.procs} proc, {args.loop}, {stamps}) | {wb['chunks']:,} | "
                f"{wb['streamed_tok_s']:,.0f} | {wb['p50_error_ms']:.2f} | {wb['p99_error_ms']:.2f} | "
                f"{wb['max_error_ms']:.1f} | {wb['p99_alone_error_ms']:.2f} | {wb['kernel_read_share']:.1%} | "
                f"{wb['shared_read_share']:.1%} | {wb['sub_ms_itl_share']:.1%} | "
                f"{wb['p99_itl_excess_ms']:.2f} | {wb['cpu_s_per_mtok']:.0f} | {r['load_' + key]} |"
            )
        if bs is not None:
            lines.append(
                f"| {r['streams']:,} | bench_serving 0.5.9 | {bs['tokens']:,} tok | {bs['output_tok_s']:,.0f} "
                f"(its output tok/s) | n/a (no arrival times) | n/a | n/a | n/a | n/a | n/a | "
                f"{bs['sub_ms_itl_share']:.1%} | {bs['p99_itl_excess_ms']:.2f} | {bs['cpu_s_per_mtok']:.0f} | "
                f"{r['load_bs']} |"
            )
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--levels", type=int, nargs="+", default=[64, 256, 1024])
    parser.add_argument("--output-len", type=int, default=256)
    parser.add_argument("--procs", type=int, default=1, help="client worker processes sharing the streams")
    parser.add_argument("--loop", choices=("asyncio", "uvloop"), default="asyncio")
    parser.add_argument(
        "--rx-stamps",
        choices=("on", "off", "both"),
        default="both",
        help="time reads by the kernel's receive stamps (on), by the event loop (off), or run "
        "the client both ways, one after the other, at each level (both)",
    )
    parser.add_argument("--no-bench-serving", action="store_true")
    parser.add_argument("--bs-venv", default=os.environ.get("BS_VENV", "/tmp/bsvenv"))
    parser.add_argument("--json", default=None, help="write every figure here")
    # worker mode (internal)
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--url", help=argparse.SUPPRESS)
    parser.add_argument("--streams", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--seed", type=int, default=0, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        return worker_main(args)
    bs_python = Path(args.bs_venv) / "bin" / "python"
    if not args.no_bench_serving and not bs_python.exists():
        raise SystemExit(
            f"no bench_serving client venv at {args.bs_venv}: run benchmarks/bench_serving_compat.sh "
            "once (it creates it), or pass --no-bench-serving"
        )
    from workbench.bench._measure import ensure_fd_limit

    ensure_fd_limit(2 * max(args.levels))
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        tmp_path = Path(tmp)
        profile = tmp_path / "flat.toml"
        profile.write_text(PROFILE)
        port = _free_port()
        server = start_server(port, max(args.levels), tmp_path / "sim.log", profile)
        url = f"http://127.0.0.1:{port}"
        try:
            startup = 0.0
            if not args.no_bench_serving:  # its fixed cost: imports, tokenizer, one warmup request
                startup = run_bench_serving(url, 1, 1, bs_python, tmp_path)["cpu_s"]
            for streams in args.levels:
                row = {"streams": streams}
                for key, stamps in (("workbench", "on"), ("workbench_loop", "off")):
                    if args.rx_stamps not in (stamps, "both"):
                        continue
                    row["load_" + key] = _loadavg()
                    row[key] = run_workbench(url, streams, args.output_len, args.procs, args.loop, stamps)
                    row["load_" + key] += f" → {_loadavg()}"
                if not args.no_bench_serving:
                    row["load_bs"] = _loadavg()
                    row["bench_serving"] = run_bench_serving(
                        url, streams, args.output_len, bs_python, tmp_path, startup_cpu_s=startup
                    )
                    row["load_bs"] += f" → {_loadavg()}"
                rows.append(row)
                print(
                    f"# {streams} streams done: {json.dumps(row.get('workbench') or row.get('workbench_loop'))}",
                    file=sys.stderr,
                    flush=True,
                )
        finally:
            server.terminate()  # the one process this script started
            deadline = time.monotonic() + 20
            while server.poll() is None and time.monotonic() < deadline:
                time.sleep(0.2)
            if server.poll() is None:
                server.kill()
            shutil.copy(tmp_path / "sim.log", Path(tempfile.gettempdir()) / "client_fidelity_sim.log")
    print(
        f"Machine: {os.cpu_count()} cores, shared with other work; server: workbench.sim, flat {STEP_MS:g} ms "
        f"per iteration, one token per chunk, {args.output_len} output tokens, prompt {INPUT_LEN} random ids."
        + (
            ""
            if args.no_bench_serving
            else f" bench_serving's CPU per Mtok leaves out its start-up ({startup:.2f} CPU s for one 1-token request)."
        )
        + "\n"
    )
    print(table(rows, args))
    if args.json:
        Path(args.json).write_text(json.dumps({"args": vars(args), "rows": rows}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
