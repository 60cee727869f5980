"""A sweep checks the KV pool its server became ready with against the largest request of its plan, and records
the pool in the run's manifest (2026-12-06: real SGLang 0.5.17 started with a 5,759-token pool at
--mem-fraction-static 0.201 on an H100 and said nothing; the workbench now warns: servers/_kv_cache.py)."""

from __future__ import annotations

import json

from workbench.bench import SweepPlan
from workbench.bench._prompts import Prompt
from workbench.sweeps import benchmark_variant
from workbench.sweeps._sweep_pass import request_tokens


def test_request_tokens_is_the_largest_request_of_the_plan() -> None:
    texts = (Prompt("a", "coding", "x" * 400), Prompt("b", "coding", "y" * 40))
    assert (
        request_tokens(SweepPlan(concurrency_levels=(1,), requests_per_level=(2,), prompts=texts, max_new_tokens=64))
        == 100 + 64
    )
    ids = (Prompt("r", "random", "", input_ids=tuple(range(300))),)
    assert (
        request_tokens(SweepPlan(concurrency_levels=(1,), requests_per_level=(2,), prompts=ids, max_new_tokens=32))
        == 332
    )


def test_the_manifest_records_the_pool_the_server_became_ready_with(tmp_path) -> None:
    run_dir = benchmark_variant(
        "baseline",
        concurrency_levels=[1],
        requests_per_level=2,
        max_new_tokens=8,
        time_scale=20.0,
        progress=False,
        runs_dir=tmp_path,
    )
    pool = json.loads((run_dir / "manifest.json").read_text())["kv_pool"]
    assert pool["tokens"] > 0 and pool["source"] in ("log", "/server_info")
    assert pool["max_running_requests"] is None or pool["max_running_requests"] > 0


def test_the_pool_is_judged_against_the_load_the_sweep_sends_not_the_default_cap() -> None:
    from workbench.servers._kv_cache import KvPool

    big = KvPool(tokens=1_520_065, max_running_requests=4096, context_len=131_072, source="log")
    assert big.problems(request_tokens=2_928)  # SGLang's default cap of 4,096 would not fit ...
    assert big.problems(request_tokens=2_928, concurrency=64) == ()  # ... but a sweep up to 64 at once does
    tiny = KvPool(tokens=5_759, max_running_requests=64, context_len=131_072, source="log")
    said = tiny.warning("broken", request_tokens=1_000, concurrency=16, mem_fraction=0.201)
    assert said is not None and "room for 5 requests of 1,000 tokens" in said
    assert "where the load keeps 16 in flight" in said and "(now 0.201)" in said
