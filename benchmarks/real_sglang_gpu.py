"""The workbench against a real SGLang 0.5.17 server on a GPU machine without network.

Run on the GPU machine from the repository root, with the payload built here first
(``make sglang-payload`` writes ``.sgl/``, which travels when a call carries it)::

    python3 benchmarks/real_sglang_gpu.py prepare                  # unpack, stand-ins, model folders (once)
    python3 benchmarks/real_sglang_gpu.py bench real-baseline real-eagle3-chain --out DIR
    python3 benchmarks/real_sglang_gpu.py shapes real-eagle3-chain --out DIR
    python3 benchmarks/real_sglang_gpu.py failures --out DIR
    python3 benchmarks/real_sglang_gpu.py all --out DIR            # all of it (about 25 minutes of GPU time)

What is real and what is not (docs/REAL_SGLANG.md): SGLang 0.5.17's own server, scheduler, CUDA graphs,
speculative workers and kernels on a real GPU; the weights are random (``--load-format dummy``, Llama-3.1-8B's
shapes), so the acceptance is forced with ``SGLANG_SIMULATE_ACC_LEN`` (set per variant, recorded in each
run's manifest); attention is triton (the FA3 library is not carried); IPython, xgrammar and deep_gemm are
import stand-ins on paths this run never calls.

* ``bench``: ``python -m workbench bench`` (the product's own command: pre-flight against the installed
  0.5.17, launch, ready wait, load generator, records, stop) over ``benchmarks/real_sglang/variants/``;
  the runs folder comes back as ``runs-<label>.tar.gz`` with every server log.
* ``shapes``: starts a variant through :class:`workbench.servers.ServerHandle` and records every route's
  raw answer (``shapes-<variant>.json``): the fixtures ``tests/test_real_sglang_shapes.py`` reads.
* ``failures``: launches deliberately broken servers through the same handle and records how each ended
  (``failures.json``: the class, advice, evidence, seconds to the failure, the log tail, what was left).

Each step writes what it has measured before the next begins, so a call cut short keeps its results.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import re
import shutil
import socket
import signal
import subprocess
import sys
import tarfile
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
RECIPE = ROOT / "benchmarks" / "real_sglang"
VARIANTS = RECIPE / "variants"
PAYLOAD = ROOT / ".sgl" / "sgl017_payload.tar.xz"
SITE = Path("/tmp/site")
MODELS = Path("/tmp/models")
SERVERS_DIR = Path("/tmp/wb-servers")
#: Variables every SGLang start needs here: NVLink multicast stays off (the machine's rule), DeepGEMM is a
#: stand-in (its JIT must not be taken for a working one), nothing is fetched from the Hub.
SERVER_ENV = {
    "NCCL_NVLS_ENABLE": "0",
    "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1",
    "NVSHMEM_DISABLE_NVLS": "1",
    "SGLANG_ENABLE_JIT_DEEPGEMM": "0",
    "SGLANG_DEEPGEMM_PDL": "0",
    "HF_HUB_OFFLINE": "1",
    "PYTHONUNBUFFERED": "1",
    "WORKBENCH_SERVERS_DIR": str(SERVERS_DIR),
}
#: A process this script may have started: an SGLang server or scheduler, a workbench watchdog or helper.
LEFTOVER = re.compile(r"sglang|workbench")
ALL_VARIANTS = ("real-baseline", "real-eagle3-chain", "real-eagle3-tree", "real-eagle3-adaptive")


def _real(engine: str) -> bool:
    """True for an engine that runs SGLang itself on GPUs (it needs the payload unpacked)."""
    from workbench.engines import get_engine

    return get_engine(engine).wants_gpus


def log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", flush=True)


def environment() -> None:
    """Set this process's environment (inherited by the workbench, its servers and its helpers)."""
    os.environ.update(SERVER_ENV)
    nvcc = shutil.which("nvcc") or "/usr/local/cuda/bin/nvcc"
    os.environ.setdefault("CUDA_HOME", str(Path(nvcc).parent.parent))  # SGLang's JIT kernels need nvcc
    parts = [str(SITE), str(ROOT)] + [p for p in os.environ.get("PYTHONPATH", "").split(":") if p]
    os.environ["PYTHONPATH"] = ":".join(dict.fromkeys(parts))
    for p in (str(ROOT), str(SITE)):
        if p not in sys.path:
            sys.path.insert(0, p)


def prepare() -> dict[str, Any]:
    """Unpack the payload (once per machine), write the deep_gemm stand-in and the model folders."""
    t0 = time.monotonic()
    if not (SITE / "sglang" / "launch_server.py").exists():
        if not PAYLOAD.exists():
            raise SystemExit(f"{PAYLOAD} is missing: run `make sglang-payload` on a machine with PyPI and carry .sgl")
        with tarfile.open(PAYLOAD) as tar:
            tar.extractall(SITE.parent, filter="fully_trusted")
        # /tmp/site was on sys.path before it existed: forget the negative finder cache, or this process's own
        # imports of the payload (paramiko for workbench.hosts) fail (2026-12-06, H100: the failures step died)
        sys.path_importer_cache.pop(str(SITE), None)
        importlib.invalidate_caches()
    # deep_gemm: reached from the draft's CUDA-graph capture; datasets: sglang.benchmark.serving imports it for
    # datasets this run never loads (2026-12-06: the bench_serving step died on the missing import)
    for name in ("deep_gemm", "datasets"):
        if not (SITE / name).exists():
            subprocess.run([sys.executable, str(RECIPE / "stubmod.py"), str(SITE), name], check=True)
    (MODELS / "llama31-8b").mkdir(parents=True, exist_ok=True)
    (MODELS / "eagle3").mkdir(parents=True, exist_ok=True)
    shutil.copy(RECIPE / "llama31-8b.config.json", MODELS / "llama31-8b" / "config.json")
    shutil.copy(RECIPE / "tokenizer_config.json", MODELS / "llama31-8b" / "tokenizer_config.json")
    shutil.copy(RECIPE / "eagle3.config.json", MODELS / "eagle3" / "config.json")
    shutil.copy(RECIPE / "adaptive-no-zero-steps.json", MODELS / "adaptive-no-zero-steps.json")
    # the MoE model of the calibration tables (Qwen3-30B-A3B's shapes, 151,936 ids) and its EAGLE-3 draft
    (MODELS / "qwen3-30b-a3b").mkdir(parents=True, exist_ok=True)
    (MODELS / "eagle3-qwen3-30b-a3b").mkdir(parents=True, exist_ok=True)
    shutil.copy(RECIPE / "qwen3-30b-a3b.config.json", MODELS / "qwen3-30b-a3b" / "config.json")
    shutil.copy(RECIPE / "tokenizer_config.json", MODELS / "qwen3-30b-a3b" / "tokenizer_config.json")
    shutil.copy(RECIPE / "eagle3-qwen3-30b-a3b.config.json", MODELS / "eagle3-qwen3-30b-a3b" / "config.json")
    for folder, regular in (("llama31-8b", 128000), ("qwen3-30b-a3b", 151680)):
        if not (MODELS / folder / "tokenizer.json").exists():
            subprocess.run(
                [sys.executable, str(RECIPE / "mktok.py"), str(MODELS / folder), str(regular)],
                check=True,
                env={**os.environ, "PYTHONPATH": str(SITE)},
            )
    return {"prepare_s": round(time.monotonic() - t0, 1)}


def gpu_state() -> str:
    try:
        return subprocess.run(
            ["nvidia-smi", "--query-gpu=name,memory.used,memory.total,driver_version", "--format=csv,noheader"],
            capture_output=True,
            text=True,
            timeout=30,
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError) as exc:
        return f"nvidia-smi: {exc}"


def gpu_total_gb() -> float:
    """GPU 0's memory in GB (80 when nvidia-smi cannot say)."""
    try:
        out = subprocess.run(
            ["nvidia-smi", "--query-gpu=memory.total", "--format=csv,noheader,nounits"],
            capture_output=True,
            text=True,
            timeout=30,
        ).stdout.split()
        return float(out[0]) / 1024 if out else 80.0
    except (OSError, subprocess.SubprocessError, ValueError):
        return 80.0


def leftovers() -> list[str]:
    """Command lines of SGLang or workbench-watchdog processes still running (what a step must not leave)."""
    out = subprocess.run(["ps", "-eo", "pid=,args="], capture_output=True, text=True).stdout
    return [
        line.strip()
        for line in out.splitlines()
        if LEFTOVER.search(line)
        and "real_sglang_gpu.py" not in line
        and "ps -eo" not in line
        and "<defunct>" not in line
    ]  # a zombie runs nothing: it waits for the container's init to reap it


def variant_file(name: str) -> str:
    path = VARIANTS / f"{name}.toml"
    return str(path) if path.exists() else name


#: How long ``workbench bench`` may take to stop its server after an interrupt before it is killed.
INTERRUPT_GRACE_S = 90.0


def run_interruptibly(argv: list[str], *, stdout: Any, timeout_s: float) -> int:
    """Run ``argv`` for at most ``timeout_s``; past it, interrupt it as Ctrl-C would (SIGINT), so that the
    workbench stops the server it started and keeps what it measured, and kill it only if it is still running
    ``INTERRUPT_GRACE_S`` later. Returns its exit status (negative: the signal that ended it).

    A plain kill at the deadline (what this did first, 2026-12-06) left the SGLang server of the level in
    progress running until the host-side watchdog's lease ran out."""
    proc = subprocess.Popen(argv, stdout=stdout, stderr=subprocess.STDOUT, cwd=ROOT)
    try:
        return proc.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        log(f"past {timeout_s:.0f} s: interrupting (SIGINT) so that the workbench stops its server")
        proc.send_signal(signal.SIGINT)
    try:
        return proc.wait(timeout=INTERRUPT_GRACE_S)
    except subprocess.TimeoutExpired:
        proc.kill()
        return proc.wait()


def bench(
    names: list[str],
    *,
    out: Path,
    label: str,
    levels: str,
    repeats: int,
    max_new_tokens: int,
    engine: str,
    timeout_s: float,
) -> dict[str, Any]:
    """``workbench bench`` over ``names``; the runs folder and the server logs come back as one archive."""
    runs = Path(f"/tmp/wb-runs-{label}")
    argv = [
        sys.executable,
        "-m",
        "workbench",
        "bench",
        *map(variant_file, names),
        "--host",
        "local",
        "--engine",
        engine,
        "--levels",
        levels,
        "--repeats",
        str(repeats),
        "--max-new-tokens",
        str(max_new_tokens),
        "--label",
        label,
        "--runs-dir",
        str(runs),
        "--no-progress",
    ]
    log(" ".join(argv))
    t0 = time.monotonic()
    with open(out / f"bench-{label}.log", "w") as fh:
        rc = run_interruptibly(argv, stdout=fh, timeout_s=timeout_s)
    wall = time.monotonic() - t0
    with tarfile.open(out / f"runs-{label}.tar.gz", "w:gz") as tar:
        if runs.exists():
            tar.add(runs, arcname="runs")
        if SERVERS_DIR.exists():
            tar.add(SERVERS_DIR, arcname="servers")
    from workbench.servers import startup_timings

    starts = {}  # where each server's time to ready went (SGLang's own start-up line), by log file
    for path in sorted(SERVERS_DIR.glob("*.log")) if SERVERS_DIR.exists() else []:
        if not path.name.endswith(".watchdog.log"):
            starts[path.name] = startup_timings(path.read_text(errors="replace"))
    result = {
        "label": label,
        "variants": names,
        "rc": rc,
        "wall_s": round(wall, 1),
        "left_running": leftovers(),
        "startup": starts,
    }
    log(f"bench {label}: exit {rc} in {wall:.0f} s; left running: {result['left_running']}")
    return result


def _request(url: str, method: str, body: Any, timeout_s: float) -> dict[str, Any]:
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(
        url, data=data, method=method, headers={"Content-Type": "application/json"} if data else {}
    )
    t0 = time.monotonic()
    try:
        with urllib.request.urlopen(req, timeout=timeout_s) as resp:
            status, ctype, raw = resp.status, resp.headers.get("Content-Type", ""), resp.read()
    except urllib.error.HTTPError as exc:
        status, ctype, raw = exc.code, exc.headers.get("Content-Type", ""), exc.read()
    except (urllib.error.URLError, OSError) as exc:
        return {"error": f"{type(exc).__name__}: {exc}"}
    return {
        "status": status,
        "content_type": ctype,
        "elapsed_s": round(time.monotonic() - t0, 3),
        "body": raw.decode("utf-8", "replace")[:200_000],
    }


#: The routes recorded, in order: (method, path, body). Requests come before /metrics and the second
#: /server_info, so the per-interval spec gauges and the lifetime accept length have something to show.
def shape_requests() -> list[tuple[str, str, Any]]:
    ids = [128000, 9906, 1917, 374, 264, 1296]
    greedy = {"max_new_tokens": 24, "ignore_eos": True, "temperature": 0}
    return [
        ("GET", "/health", None),
        ("GET", "/health_generate", None),
        ("GET", "/model_info", None),
        ("GET", "/get_model_info", None),
        ("GET", "/server_info", None),
        ("GET", "/get_server_info", None),
        ("GET", "/v1/models", None),
        ("POST", "/generate", {"input_ids": ids, "sampling_params": greedy}),
        ("POST", "/generate", {"input_ids": ids, "sampling_params": greedy, "stream": True}),
        ("POST", "/generate", {"text": "The capital of France is", "sampling_params": {**greedy, "max_new_tokens": 8}}),
        ("POST", "/generate", {"text": ["one", "two"], "sampling_params": {**greedy, "max_new_tokens": 4}}),
        (
            "POST",
            "/generate",
            {
                "input_ids": ids,
                "sampling_params": {**greedy, "max_new_tokens": 6},
                "return_logprob": True,
                "top_logprobs_num": 2,
            },
        ),
        ("POST", "/generate", {"input_ids": ids, "sampling_params": {"max_new_tokens": 64, "temperature": 0}}),
        ("POST", "/v1/completions", {"model": "default", "prompt": "Hello world", "max_tokens": 8, "temperature": 0}),
        (
            "POST",
            "/v1/completions",
            {
                "model": "default",
                "prompt": "Hello world",
                "max_tokens": 8,
                "temperature": 0,
                "stream": True,
                "stream_options": {"include_usage": True},
            },
        ),
        (
            "POST",
            "/v1/chat/completions",
            {"model": "default", "messages": [{"role": "user", "content": "Hi"}], "max_tokens": 8, "temperature": 0},
        ),
        (
            "POST",
            "/v1/chat/completions",
            {
                "model": "default",
                "messages": [{"role": "user", "content": "Hi"}],
                "max_tokens": 8,
                "temperature": 0,
                "stream": True,
                "stream_options": {"include_usage": True},
            },
        ),
        ("POST", "/generate", {"text": "x", "sampling_params": {"max_new_tokens": -5}}),
        ("POST", "/generate", {"text": "x", "sampling_params": {"no_such_param": 1}}),
        ("POST", "/generate", {"input_ids": ids, "sampling_params": {**greedy, "max_new_tokens": 200}}),
        ("GET", "/metrics", None),
        ("GET", "/server_info", None),
        ("POST", "/flush_cache", None),
        ("GET", "/server_info", None),
    ]


def shapes(names: list[str], *, out: Path, engine: str) -> list[dict[str, Any]]:
    """Start each variant through the workbench's handle and record every route's raw answer."""
    from workbench.servers import ServerHandle
    from workbench.variants import load_variant

    results = []
    for name in names:
        variant = load_variant(variant_file(name))
        name = variant.name
        t0 = time.monotonic()
        record: dict[str, Any] = {"variant": name, "engine": engine, "gpu_before": gpu_state()}
        with ServerHandle.start(variant, host="local", engine=engine, ready_timeout_s=480) as server:
            record.update(ready_after_s=server.ready_after_s, command=server.command, gpu_at_ready=gpu_state())
            calls = []
            for method, path, body in shape_requests():
                answer = _request(server.url + path, method, body, timeout_s=120)
                calls.append({"method": method, "path": path, "request": body, **answer})
            record["calls"] = calls
            if _real(engine):
                record["bench_serving"] = bench_serving(server.port, out=out, name=name)
            record["log_tail"] = server.logs_tail(400)
        record["wall_s"] = round(time.monotonic() - t0, 1)
        record["left_running"] = leftovers()
        (out / f"shapes-{name}.json").write_text(json.dumps(record, indent=1))
        log(f"shapes {name}: ready after {record['ready_after_s']} s, {len(record['calls'])} calls recorded")
        results.append(record)
    return results


def bench_serving(port: int, *, out: Path, name: str) -> dict[str, Any]:
    """SGLang's own ``sglang.benchmark.serving`` against the running server at two concurrencies, into one
    JSONL result file: a real file of the tool the importers read (``workbench import``)."""
    path = out / f"bench_serving-{name}.jsonl"
    runs = []
    for concurrency in (1, 4):
        argv = [
            sys.executable,
            "-m",
            "sglang.benchmark.serving",
            "--backend",
            "sglang",
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--dataset-name",
            "random-ids",
            "--random-input-len",
            "128",
            "--random-output-len",
            "64",
            "--random-range-ratio",
            "1.0",
            "--num-prompts",
            str(8 * concurrency),
            "--max-concurrency",
            str(concurrency),
            "--tokenizer",
            str(MODELS / "llama31-8b"),
            "--output-file",
            str(path),
            "--disable-tqdm",
            "--seed",
            "1",
        ]
        t0 = time.monotonic()
        try:
            proc = subprocess.run(argv, capture_output=True, text=True, timeout=150)
            runs.append(
                {
                    "concurrency": concurrency,
                    "rc": proc.returncode,
                    "seconds": round(time.monotonic() - t0, 1),
                    "tail": (proc.stdout + proc.stderr)[-3000:],
                }
            )
        except subprocess.TimeoutExpired:
            runs.append({"concurrency": concurrency, "rc": None, "seconds": 150, "tail": "timed out"})
    return {"file": path.name if path.exists() else None, "runs": runs}


def _busy_port() -> tuple[socket.socket, int]:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(1)
    return sock, sock.getsockname()[1]


def broken_launches() -> list[tuple[str, str, dict[str, Any], dict[str, Any]]]:
    """(case, base variant, flag changes (None removes), extra) for each deliberately broken start."""
    return [
        # cheapest first (refused before any weights load), so a call cut short keeps the most cases
        ("unknown_flag", "real-baseline", {"speculative-no-such-flag": 3}, {}),
        ("spec_refused", "real-eagle3-tree", {"speculative-use-rejection-sampling": True}, {}),
        ("port_in_use", "real-baseline", {}, {"busy_port": True}),
        # a static fraction that holds the 15 GB of weights but leaves nothing for the KV cache, on any GPU size
        # (0.15 was enough on an H200's 141 GB: it started)
        ("kv_cache_memory", "real-baseline", {"mem-fraction-static": round(16.0 / gpu_total_gb(), 3)}, {}),
        (
            "draft_hidden_size",
            "real-eagle3-chain",
            {},
            {"draft_config": {"hidden_size": 2048, "intermediate_size": 8192, "num_attention_heads": 16}},
        ),
        ("draft_vocab", "real-eagle3-chain", {}, {"draft_config": {"vocab_size": 32000}}),
        ("eagle3_no_draft", "real-eagle3-chain", {}, {"no_draft": True}),
    ]


def failures(*, out: Path, engine: str, only: list[str] | None = None) -> list[dict[str, Any]]:
    """Start each broken variant through :meth:`ServerHandle.start` (no pre-flight: SGLang itself must refuse
    it) and record the classified failure, the time to it, its log tail and what was left running."""
    import dataclasses

    from workbench.errors import ServerStartError, WorkbenchError
    from workbench.servers import ServerHandle
    from workbench.variants import load_variant

    results = []
    for case, base, flags, extra in broken_launches():
        if only and case not in only:
            continue
        variant = load_variant(variant_file(base))
        new_flags = {**variant.flags, **flags}
        draft = variant.draft_model_path
        if "draft_config" in extra:
            folder = MODELS / f"eagle3-{case}"
            folder.mkdir(parents=True, exist_ok=True)
            cfg = json.loads((RECIPE / "eagle3.config.json").read_text())
            cfg.update(extra["draft_config"])
            (folder / "config.json").write_text(json.dumps(cfg, indent=1))
            draft = str(folder)
        if extra.get("no_draft"):
            draft = None
        variant = dataclasses.replace(variant, name=f"broken-{case}", flags=new_flags, draft_model_path=draft)
        sock, port = _busy_port() if extra.get("busy_port") else (None, None)
        t0 = time.monotonic()
        record: dict[str, Any] = {"case": case, "base": base, "flags": flags, "extra": extra}
        try:
            with ServerHandle.start(variant, host="local", engine=engine, port=port, ready_timeout_s=420) as server:
                record.update(outcome="ready", ready_after_s=server.ready_after_s, log_tail=server.logs_tail(300))
        except ServerStartError as exc:
            record.update(
                outcome="start_error", kind=exc.kind, suggestion=exc.suggestion, message=str(exc), log_tail=exc.log_tail
            )
        except WorkbenchError as exc:
            record.update(outcome=type(exc).__name__, message=str(exc))
        finally:
            if sock is not None:
                sock.close()
        record["seconds"] = round(time.monotonic() - t0, 1)
        time.sleep(2)
        record["left_running"] = leftovers()
        log(
            f"failure {case}: {record.get('outcome')} {record.get('kind', '')} in {record['seconds']} s; "
            f"left running: {record['left_running']}"
        )
        results.append(record)
        (out / "failures.json").write_text(json.dumps(results, indent=1))
        # the full server logs of the failed starts so far, for the classifier's fixtures
        with tarfile.open(out / "failure-logs.tar.gz", "w:gz") as tar:
            for p in sorted(SERVERS_DIR.glob("broken-*.log")) if SERVERS_DIR.exists() else []:
                tar.add(p, arcname=p.name)
    return results


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("step", choices=["prepare", "bench", "shapes", "failures", "calib", "all"])
    ap.add_argument("variants", nargs="*", help="variant names (benchmarks/real_sglang/variants/NAME.toml) or files")
    ap.add_argument("--out", type=Path, default=Path(os.environ.get("OUT", "/tmp/real-sglang-out")))
    ap.add_argument("--label", default="real-gpu")
    ap.add_argument("--levels", default="1,2,4,8,16,32,64")
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--max-new-tokens", type=int, default=128)
    ap.add_argument("--engine", default="sglang", help="sglang (default), or sim to try this script without a GPU")
    ap.add_argument("--cases", default="", help="failures: only these cases (comma-separated)")
    ap.add_argument(
        "--timeout-s",
        type=float,
        default=560.0,
        help="bench: stop the command after this long; calib: start no further server after this long",
    )
    ap.add_argument("--batches", default="1,2,4,8,16,32,64", help="calib: batch sizes (closed waves)")
    ap.add_argument("--profiled", default="1,8,64", help="calib: batches profiled for GPU versus host time")
    ap.add_argument("--input-len", type=int, default=128, help="calib: prompt tokens per request")
    ap.add_argument("--wave-tokens", type=int, default=256, help="calib: output tokens per request")
    args = ap.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    environment()
    summary: dict[str, Any] = {"gpu": gpu_state(), "step": args.step}
    if _real(args.engine):
        summary.update(prepare())
    names = list(args.variants) or list(ALL_VARIANTS)  # calib: calibration points (real_sglang_calib.POINTS)
    if args.step in ("bench", "all"):
        summary["bench"] = bench(
            names,
            out=args.out,
            label=args.label,
            levels=args.levels,
            repeats=args.repeats,
            max_new_tokens=args.max_new_tokens,
            engine=args.engine,
            timeout_s=args.timeout_s,
        )
    if args.step in ("shapes", "all"):
        summary["shapes"] = [
            {k: r[k] for k in ("variant", "ready_after_s", "wall_s", "left_running")}
            for r in shapes(names if args.step == "shapes" else ["real-eagle3-chain"], out=args.out, engine=args.engine)
        ]
    if args.step in ("failures", "all"):
        summary["failures"] = [
            {k: r.get(k) for k in ("case", "outcome", "kind", "seconds", "left_running")}
            for r in failures(out=args.out, engine=args.engine, only=[c for c in args.cases.split(",") if c] or None)
        ]
    if args.step == "calib":
        import real_sglang_calib
        from workbench.variants import load_variant

        ints = lambda text: [int(x) for x in text.split(",") if x]  # noqa: E731
        summary["calib"] = real_sglang_calib.run(
            list(args.variants),
            out=args.out,
            label=args.label,
            batches=ints(args.batches),
            profiled=ints(args.profiled),
            input_len=args.input_len,
            tokens=args.wave_tokens,
            models_dir=MODELS,
            base=load_variant(variant_file("real-baseline")),
            engine=args.engine,
            deadline_s=args.timeout_s,
            gpu=gpu_state,
            leftovers=leftovers,
        )
    (args.out / f"summary-{args.step}-{args.label}.json").write_text(json.dumps(summary, indent=1))
    log(json.dumps(summary)[:3000])
    return 0


if __name__ == "__main__":
    sys.exit(main())
