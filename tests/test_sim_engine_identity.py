"""The engine core's results pinned: a few cases of benchmarks/sim_engine_identity.py against the values the
four-pass decode loop (before the one-pass rewrite) produced, so a speed-up that changes a random draw, a token,
a timestamp or a retraction fails here (the benchmark checks the full set byte for byte)."""

from __future__ import annotations

import hashlib
import json
import random

import pytest

from workbench.sim import _predict as predict_mod
from workbench.sim._engine import EngineCore, SimRequest
from workbench.sim._offline import simulate_closed_loop
from workbench.sim._profiles import load_profile
from workbench.sim._server_args import parse_server_args
from workbench.sim._variant_flags import variant_argv


class _Stepping:
    """Draft steps that change with the batch (0 to 3)."""

    def steps(self, batch: int) -> int:
        return 0 if batch > 20 else 1 + batch % 3

    def observe(self, batch: int, accepted_drafts: int) -> None:
        pass


def _setup(variant: str, extra: list[str], c: int):
    profile = load_profile("seed-pcie-8gpu")
    _, argv, env = variant_argv(variant)
    cfg = parse_server_args([*argv, *extra, "--sim-profile", str(profile.path)], environ=env)
    plan = predict_mod.prediction_plan(profile, concurrency_levels=(c,), max_new_tokens=256, seed=0)
    order = list(predict_mod._schedule(plan.prompt_lengths, max(16, 2 * c), 0))
    return cfg, order, 7 * c + 1


@pytest.mark.parametrize(
    ("variant", "extra", "c", "digest", "iterations", "retractions", "accepted", "forward", "seconds", "stepping"),
    [
        (
            "eagle3-topk4",
            ["--max-total-tokens", "12000"],
            48,
            "08a7a8ef15ba3c59",
            727,
            2,
            13859,
            5052,
            59.95102955060845,
            False,
        ),
        ("eagle3-topk4-off-above-8", [], 10, "5dcac838ae357324", 287, 0, 423, 151, 11.586990755819338, False),
        ("eagle3-topk4", [], 10, "f246f2c2ffa7fec3", 158, 0, 2522, 992, 11.830661599280202, True),
        ("baseline", ["--max-total-tokens", "12000"], 16, "76eac37d6bee84f0", 657, 0, 0, 0, 14.85762156322496, False),
        ("adaptive", [], 4, "5856ab4682a12a6d", 239, 0, 1920, 779, 7.135291114627961, False),
    ],
)
def test_step_trace_unchanged(
    variant, extra, c, digest, iterations, retractions, accepted, forward, seconds, stepping
) -> None:
    cfg, order, seed = _setup(variant, extra, c)
    eng = EngineCore.from_config(cfg, rng=random.Random(seed))
    if stepping:
        eng.spec_policy = _Stepping()
    sent = 0

    def send() -> None:
        nonlocal sent
        eng.submit(SimRequest(rid=f"r{sent}", prompt_tokens=order[sent], max_new_tokens=40 + (sent * 37) % 217))
        sent += 1

    for _ in range(min(c, len(order))):
        send()
    trace, total_s = [], 0.0
    while (it := eng.step()) is not None:
        trace.append([it.kind, it.batch_size, it.speculative, [[e.new_tokens, e.finished] for e in it.emissions]])
        total_s += it.duration_s
        for e in it.emissions:
            if e.finished and sent < len(order):
                send()
    assert hashlib.sha256(json.dumps(trace).encode()).hexdigest()[:16] == digest
    assert (len(trace), eng.total_retractions, eng.total_accepted_tokens, eng.total_forward_ct) == (
        iterations,
        retractions,
        accepted,
        forward,
    )
    assert total_s == pytest.approx(seconds, rel=1e-12)


@pytest.mark.parametrize(
    ("variant", "extra", "c", "duration", "retractions", "decode", "spec", "last"),
    [
        (
            "eagle3-topk4",
            ["--max-total-tokens", "12000"],
            48,
            87.77310473682876,
            4,
            1204,
            1204,
            (95, 39258.07517962193, 34988.49775933752, 97),
        ),
        ("adaptive", [], 4, 10.418743541183309, 0, 437, 437, (15, 1594.0980138502923, 181.00093385032955, 94)),
        (
            "baseline",
            ["--max-total-tokens", "12000"],
            16,
            20.90646810643109,
            3,
            1025,
            0,
            (25, 13261.37148510246, 6845.85905803395, None),
        ),  # TTFT: the first token, not the re-prefill's
    ],
)
def test_closed_loop_rows_unchanged(variant, extra, c, duration, retractions, decode, spec, last) -> None:
    cfg, order, seed = _setup(variant, extra, c)
    eng = EngineCore.from_config(cfg, rng=random.Random(seed))
    res = simulate_closed_loop(eng, prompt_tokens=order, concurrency=c, max_new_tokens=256, chunks=False)
    assert res.duration_s == pytest.approx(duration, rel=1e-12)
    assert (eng.total_retractions, res.decode_iterations, res.spec_iterations) == (retractions, decode, spec)
    row = res.rows[-1]
    assert row["request_index"] == last[0] and row["spec_verify_ct"] == last[3]
    assert (row["e2e_ms"], row["ttft_ms"]) == pytest.approx(last[1:3], rel=1e-12)


@pytest.mark.parametrize(("variant", "c"), [("baseline", 16), ("eagle3-topk4", 48)])
def test_both_client_loops_agree_on_ttft_when_requests_are_retracted(variant: str, c: int) -> None:
    ttft = []
    for chunks in (False, True):
        cfg, order, seed = _setup(variant, ["--max-total-tokens", "12000"], c)
        eng = EngineCore.from_config(cfg, rng=random.Random(seed))
        res = simulate_closed_loop(eng, prompt_tokens=order, concurrency=c, max_new_tokens=256, chunks=chunks)
        assert eng.total_retractions > 0
        ttft.append({r["request_index"]: r["ttft_ms"] for r in res.rows})
    assert ttft[0] == ttft[1]
