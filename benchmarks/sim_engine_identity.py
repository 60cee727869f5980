"""Dump a fixed set of offline simulations to JSON, to check that an engine change is output-identical.

Covers the seed profile's variants ``baseline``, ``eagle3-topk4``, ``eagle3-topk1-v2``,
``eagle3-topk4-off-above-8`` and ``adaptive`` (0.5.12 rules) at several levels, through
``workbench.sim._predict`` (the prediction's engine: unlimited memory) and through engines built
from the parsed server configuration (KV pool, speculation policy and off-cost), both client loops
(ends only, and every chunk), plus small KV pools (``--max-total-tokens``) that retract. Every
request row, the closed loop's counters, the engine's counters and, for the engine cases, every
iteration (kind, duration, batch, speculative, log line, emissions) are dumped.

Run it on the old code and on the new one and compare the files byte for byte::

    .venv/bin/python benchmarks/sim_engine_identity.py /tmp/before.json
    .venv/bin/python benchmarks/sim_engine_identity.py /tmp/after.json && cmp /tmp/before.json /tmp/after.json
"""

from __future__ import annotations

import json
import random
import sys
from typing import Any

from workbench.sim import _predict as predict_mod
from workbench.sim._engine import EngineCore
from workbench.sim._offline import simulate_closed_loop
from workbench.sim._profiles import load_profile
from workbench.sim._server_args import parse_server_args
from workbench.sim._variant_flags import variant_argv

VARIANTS = ("baseline", "eagle3-topk4", "eagle3-topk1-v2", "eagle3-topk4-off-above-8", "adaptive")
LEVELS = (1, 4, 10, 16, 48)
SMALL_POOL = (
    ("baseline", 30_000),
    ("eagle3-topk4", 30_000),
    ("eagle3-topk1-v2", 30_000),
    ("adaptive", 30_000),
    ("baseline", 12_000),
    ("eagle3-topk4", 12_000),
    ("eagle3-topk1-v2", 12_000),
    ("adaptive", 12_000),
)
SMALL_LEVELS = (16, 48)


def _loop(result) -> dict[str, Any]:
    return {
        "rows": result.rows,
        "duration_s": result.duration_s,
        "decode_iterations": result.decode_iterations,
        "spec_iterations": result.spec_iterations,
        "decode_s": result.decode_s,
        "prefill_s": result.prefill_s,
        "decode_batch_sum": result.decode_batch_sum,
    }


def _counters(eng: EngineCore) -> dict[str, Any]:
    return {
        "total_retractions": eng.total_retractions,
        "last_retracted": eng.last_retracted,
        "kv_used": eng.kv_used,
        "decode_iterations": eng.decode_iterations,
        "total_accepted_tokens": eng.total_accepted_tokens,
        "total_forward_ct": eng.total_forward_ct,
        "last_gen_throughput": eng.last_gen_throughput,
        "current_steps": eng.current_steps,
        "new_token_ratio": eng.new_token_ratio.value,
        "avg_spec_accept_length": eng.avg_spec_accept_length,
        "rng_next": eng.rng.random(),
    }


def _config(profile, variant: str, extra: list[str]):
    _, argv, env = variant_argv(variant)
    return parse_server_args([*argv, *extra, "--sim-profile", str(profile.path)], environ=env)


class _Stepping:
    """A policy whose draft steps change with the batch (0 to 3), to cover step switches and stale probabilities."""

    def steps(self, batch: int) -> int:
        return 0 if batch > 20 else 1 + batch % 3

    def observe(self, batch: int, accepted_drafts: int) -> None:
        pass


def _trace(cfg, order: list[int], concurrency: int, seed: int, policy=None) -> dict[str, Any]:
    """Drive an engine step by step (closed loop, new request when one finishes), recording every iteration;
    output lengths vary (40 to 256 tokens), so batches shrink and grow (policies switch) mid-run."""
    from workbench.sim._engine import SimRequest

    eng = EngineCore.from_config(cfg, rng=random.Random(seed))
    if policy is not None:
        eng.spec_policy = policy
    sent = 0
    its = []
    reqs = []

    def send() -> None:
        nonlocal sent
        r = SimRequest(rid=f"r{sent}", prompt_tokens=order[sent], max_new_tokens=40 + (sent * 37) % 217)
        reqs.append(r)
        eng.submit(r)
        sent += 1

    for _ in range(min(concurrency, len(order))):
        send()
    while (it := eng.step()) is not None:
        its.append(
            [
                it.kind,
                it.duration_s,
                it.batch_size,
                it.speculative,
                it.log_line,
                [[e.request.rid, e.new_tokens, e.finished] for e in it.emissions],
                eng.kv_used,
                len(eng.running),
                len(eng.waiting),
            ]
        )
        for e in it.emissions:
            if e.finished and sent < len(order):
                send()
    requests = [
        [
            r.rid,
            r.prompt_tokens,
            r.output_tokens,
            r.verify_ct,
            r.accepted_drafts,
            r.accept_histogram,
            r.finished,
            r.kv_held,
            r.retractions,
            r.prefilled,
        ]
        for r in reqs
    ]
    return {"iterations": its, "requests": requests, "counters": _counters(eng)}


def collect() -> dict[str, Any]:
    profile = load_profile("seed-pcie-8gpu")
    out: dict[str, Any] = {}
    plan = predict_mod.prediction_plan(profile, concurrency_levels=LEVELS, max_new_tokens=256, seed=0)
    # 1. the prediction (predict's engine: unlimited memory), summary rows and every request row
    for v in VARIANTS:
        config = predict_mod.variant_configuration(profile, v)
        out[f"predict/{v}"] = predict_mod.predict(
            profile, [config], concurrency_levels=LEVELS, max_new_tokens=256, seed=0
        )
        for c in LEVELS:
            for chunks in (False, True):
                out[f"simulate_level/{v}/{c}/chunks={chunks}"] = _loop(
                    predict_mod.simulate_level(profile, config, plan, c, chunks=chunks)
                )
    # 2. the server's engine (KV pool, policy, off-cost) from the parsed flags; adaptive under 0.5.12 rules
    cases = [(v, [], LEVELS) for v in VARIANTS]
    cases += [(v, ["--max-total-tokens", str(tokens)], SMALL_LEVELS) for v, tokens in SMALL_POOL]
    cases += [("adaptive", ["--sim-sglang-version", "0.5.16"], LEVELS)]
    for v, extra, levels in cases:
        cfg = _config(profile, v, extra)
        name = f"{v}{''.join(extra)}"
        for c in levels:
            seed = 7 * c + 1
            order = list(predict_mod._schedule(plan.prompt_lengths, max(16, 2 * c), 0))
            for chunks in (False, True):
                eng = EngineCore.from_config(cfg, rng=random.Random(seed))
                res = simulate_closed_loop(eng, prompt_tokens=order, concurrency=c, max_new_tokens=256, chunks=chunks)
                out[f"config/{name}/{c}/chunks={chunks}"] = {**_loop(res), "engine": _counters(eng)}
            out[f"trace/{name}/{c}"] = _trace(cfg, order, c, seed)
            if v == "eagle3-topk4" and not extra:
                out[f"trace/{name}/{c}/stepping"] = _trace(cfg, order, c, seed, _Stepping())
    return out


def main() -> int:
    data = collect()
    retracted = sum(v["engine"]["total_retractions"] for k, v in data.items() if k.startswith("config/"))
    text = json.dumps(data, sort_keys=True)
    path = sys.argv[1] if len(sys.argv) > 1 else "-"
    if path == "-":
        sys.stdout.write(text)
    else:
        with open(path, "w") as f:
            f.write(text)
    print(f"{len(data)} cases, {retracted} retractions in the config cases, {len(text)} bytes", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
