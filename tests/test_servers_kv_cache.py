"""workbench.servers._kv_cache: the KV pool a server became ready with, and when it is too small to measure.

The real log lines come from SGLang 0.5.17 (tests/fixtures/sglang_real/0.5.17/); the ready wait's fallback to
``/server_info`` is run against a real simulated server.
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import pytest

from workbench.servers import ServerHandle
from workbench.servers._kv_cache import FAR_BELOW, KvCacheWarning, KvPool, kv_pool, mem_fraction_static
from workbench.variants import load_variant

REAL = Path(__file__).parent / "fixtures" / "sglang_real" / "0.5.17"
H100_LINE = (
    "[2026-12-06 05:15:05] max_total_num_tokens=5759, chunked_prefill_size=8192, max_prefill_tokens=16384, "
    "max_running_requests=64, context_len=131072, available_gpu_mem=61.07 GB"
)


def test_the_log_line_gives_the_pool_and_the_last_start_wins() -> None:
    pool = kv_pool(H100_LINE)
    assert pool == KvPool(tokens=5759, max_running_requests=64, context_len=131072, source="log")
    assert pool.below_context and pool.longest_prompt_tokens == 5753  # min(context - 1, pool - 1) - 5
    roomy = H100_LINE.replace("5759", "362417")
    assert kv_pool(H100_LINE + "\n" + roomy) == KvPool(362417, 64, 131072, "log")  # a restart logs it again
    assert kv_pool("no pool here") is None and kv_pool("") is None


def test_server_info_gives_the_pool_but_not_the_model_s_context() -> None:
    shapes = json.loads((REAL / "shapes-real-eagle3-chain.json").read_text())
    info = json.loads(next(c for c in shapes["calls"] if c["path"] == "/server_info")["body"])
    pool = kv_pool("", info)
    assert pool == KvPool(tokens=747670, max_running_requests=64, context_len=None, source="/server_info")
    assert not pool.below_context and pool.longest_prompt_tokens is None
    assert pool.problems() == () and pool.problems(request_tokens=2963) == ()  # 252 such requests fit
    assert kv_pool("", {**info, "context_length": 1_000_000}).below_context  # --context-length given
    assert kv_pool("", {"max_total_num_tokens": None}) is None and kv_pool("", {}) is None
    assert kv_pool("", {"max_total_num_tokens": True}) is None  # not a count


def test_far_below_the_load_needs_the_request_size() -> None:
    pool = KvPool(tokens=47425, max_running_requests=64, context_len=None, source="/server_info")
    assert pool.warning("v") is None  # nothing to judge without the workload or the context
    assert pool.requests_held(2963) == 16 < FAR_BELOW * 64
    line = pool.warning("v", request_tokens=2963)
    assert line is not None and line.startswith(
        "v: ready with a KV cache too small: 47,425 tokens "
        "(max_total_num_tokens, from its /server_info), room for 16 requests"
    )
    assert "; 741 tokens per running request." in line and "raise --mem-fraction-static until" in line
    assert pool.warning("v", request_tokens=47425 // 32) is None  # 32 of 64 fit: not far below


def test_mem_fraction_static_of_a_command() -> None:
    assert mem_fraction_static(["python", "-m", "sglang.launch_server", "--mem-fraction-static", "0.201"]) == 0.201
    assert mem_fraction_static(["--mem-fraction-static=0.8"]) == 0.8
    assert mem_fraction_static(["--mem-fraction-static"]) is None and mem_fraction_static([]) is None
    assert mem_fraction_static(["--mem-fraction-static", "most"]) is None


def test_a_simulated_server_is_checked_through_server_info_only_when_the_request_size_is_known(tmp_path) -> None:
    """The simulator logs no pool line: without a request size nothing is read; with one larger than its whole
    pool, /server_info is asked and the warning says the pool holds none of them."""
    variant = load_variant("baseline")
    with warnings.catch_warnings():
        warnings.simplefilter("error", KvCacheWarning)
        with ServerHandle.start(variant, engine="sim", state_dir=str(tmp_path / "a")) as quiet:
            assert quiet.kv_pool is None
    with pytest.warns(
        KvCacheWarning,
        match=r"^baseline: ready with a KV cache too small: [\d,]+ tokens "
        r"\(max_total_num_tokens, from its /server_info\), room for 0 requests",
    ):
        with ServerHandle.start(variant, engine="sim", state_dir=str(tmp_path / "b"), request_tokens=10**12) as handle:
            assert handle.kv_pool is not None and handle.kv_pool.source == "/server_info"
            assert handle.kv_pool.tokens == handle.server_info()["max_total_num_tokens"]
