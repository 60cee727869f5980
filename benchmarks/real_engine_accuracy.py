"""The simulator's step model against real SGLang 0.5.17 step costs (issue 31): out of the box, and fitted on plain
decoding only with every speculative point held out.

    .venv/bin/python benchmarks/real_engine_accuracy.py [--table DIR] [--json OUT]

Reads the real-engine calibration tables (``data/calibration/h100-sglang-0.5.17-2026-12-06-real``: measured on one
H100 80GB HBM3 by ``benchmarks/real_sglang_gpu.py calib``; random weights, accept length forced with
``SGLANG_SIMULATE_ACC_LEN``, triton attention), writes their tidy form (``steps.csv``) and compares, per point,
the measured step time with the simulator's (:class:`workbench.sim.RooflineCost`), at the measured accept length
and the point's batch and KV (prompt 128 + half the 256 output tokens per request):

* **out of the box**: the shipped profiles as they are (``h100-llama3-8b-eagle3`` for the dense model,
  ``h100x2-qwen3-30b-a3b-eagle3`` at TP 1 for the MoE model);
* **fitted on plain decoding only**: per model, ``hbm_efficiency`` and ``layer_fixed_us`` (and, for the MoE model,
  ``moe_layer_floor_us``) fitted to the seven baseline step times; the host time the GPU waits on per iteration is
  the *measured* one (the trace's idle share at the profiled batches), not fitted; every speculative point predicted;
* **the real-engine profiles** (``data/profiles/*-sglang0517-triton.toml``) as shipped: fitted the same way, with the
  exposed host time, the extend attention (affine in the cache per request, ``kernels.csv``) and the GEMMs' FLOP
  efficiency (:func:`gemm_flops_efficiency`) measured, and SGLang 0.5.17's spec v2 step structure (the draft extend
  over the whole tree width); the refit printed beside them must reproduce their fitted terms.

It writes ``steps.csv`` and ``kernels.csv`` from ``raw/calib-*.json`` alone (``kernels.csv`` from the trace summaries
the calib step stored beside each profile), then the summaries (``--json``): the one command that regenerates the
folder's tables (``tests/test_real_engine_tables.py`` checks the stored ones are what it writes).

Errors are on the step time, which is the error of the steady-state output tok/s (``batch x accept length / step``),
and on the spec/baseline ratio of those throughputs at the same batch. The tree-minus-chain cost (a tree and the
chain with the same num_steps, both measured) is compared at every batch.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
DEFAULT_TABLE = ROOT / "data" / "calibration" / "h100-sglang-0.5.17-2026-12-06-real"
#: Each model's shipped profile and the TP it ran at.
PROFILES = {"llama31-8b": "h100-llama3-8b-eagle3", "qwen3-30b-a3b": "h100x2-qwen3-30b-a3b-eagle3"}
#: Terms fitted on the baseline points (per model).
FIT_TERMS = {
    "llama31-8b": ("hbm_efficiency", "layer_fixed_us"),
    "qwen3-30b-a3b": ("hbm_efficiency", "layer_fixed_us", "moe_layer_floor_us"),
}


def tidy(table: Path) -> pd.DataFrame:
    """One row per (server, batch) of every ``raw/calib-*.json``: the measured step and its GPU/host split."""
    rows = []
    for path in sorted((table / "raw").glob("calib-*.json")):
        doc = json.loads(path.read_text())
        for server in doc["servers"]:
            if "waves" not in server:
                continue
            shape = server.get("shape")
            profiles = {p["batch"]: p for p in server.get("profiles", []) if "busy_fraction" in p}
            for w in server["waves"]:
                if "step_ms" not in w:
                    continue
                b = w["batch"]
                acc = w.get("accept_length_log") or 1.0
                prof = profiles.get(b, {})
                busy = prof.get("busy_fraction")
                rows.append(
                    {
                        "server": server["name"],
                        "model": server["model"],
                        "kind": "baseline" if shape is None else ("chain" if shape[1] == 1 else "tree"),
                        "num_steps": shape[0] if shape else 0,
                        "topk": shape[1] if shape else 1,
                        "num_draft_tokens": shape[2] if shape else 1,
                        "forced_accept_length": server.get("forced_accept_length"),
                        "batch": b,
                        "accept_length": acc,
                        "step_ms": w["step_ms"],
                        "step_ms_q1": w["step_ms_lo"],
                        "step_ms_q3": w["step_ms_hi"],
                        "decode_intervals": w["decode_log_intervals"],
                        "decode_output_tok_s": round(1000.0 * b * acc / w["step_ms"], 2),
                        "wave_output_tok_s": w.get("output_tok_s"),
                        "wave_wall_s": w.get("wall_s"),
                        "gpu_busy_fraction": busy,
                        "gpu_ms": None if busy is None else round(busy * w["step_ms"], 4),
                        "host_exposed_ms": None if busy is None else round((1 - busy) * w["step_ms"], 4),
                        "gpu": doc["gpu"].split(",")[0],
                        "sglang": doc["sglang"],
                        "attention_backend": doc["attention_backend"],
                        "input_len": doc["input_len"],
                        "wave_tokens": doc["wave_tokens"],
                        "source": f"raw/{path.name}",
                    }
                )
    return pd.DataFrame(rows)


#: SGLang 0.5.17's triton attention kernels, by name: the extend kernel (target verify and draft extend) and the
#: two stages of the decode kernel (plain decode and the draft's decode steps).
EXTEND_KERNEL, DECODE_KERNELS = "_fwd_kernel", ("_fwd_grouped_kernel_stage1", "_fwd_kernel_stage2")
#: The calib step's kernel categories (``real_sglang_calib.CATEGORIES``) kept as columns of kernels.csv.
KERNEL_PARTS = ("gemm", "moe", "tree_and_sampling", "copy_memset")


def kernels(table: Path) -> pd.DataFrame:
    """Per profiled point of every ``raw/calib-*.json`` (batch 1, 8, 64): GPU milliseconds per iteration, from the
    trace summary the calib step wrote beside each profile (its 16 iterations' totals divided by 16).

    Columns: the server's ``num_steps``, ``topk`` and ``num_draft_tokens`` (0, 1, 1 for plain decoding),
    ``iteration_ms`` (the trace's window per iteration), ``gpu_busy_ms`` (the union of GPU activity),
    ``kernels_ms`` (every kernel, copy and memset), ``extend_attention_ms`` (the triton extend kernel, by name: the
    target's verify and the draft's extend; 0 for plain decoding), ``decode_attention_ms`` (the triton decode
    kernel's two stages, by name; empty where one of them is not among the summary's twelve largest kernels),
    ``gemm_ms``, ``moe_ms``, ``tree_and_sampling_ms``, ``copy_memset_ms`` (the summary's categories, by kernel name,
    first match wins), ``rest_ms`` (``kernels_ms`` less the extend attention, GEMMs and fused MoE: norms, rotary,
    activations, sampling and tree kernels, copies, decode attention) and ``kv_per_request`` (:func:`with_kv`).
    """
    rows = []
    for path in sorted((table / "raw").glob("calib-*.json")):
        for server in json.loads(path.read_text())["servers"]:
            for prof in server.get("profiles", []):
                if "busy_fraction" not in prof:
                    continue
                steps = prof["profiled_steps"]
                parts = prof["kernel_ms_by_part"]
                top = {name: ms for name, ms in prof["top_kernels_ms"]}
                if server.get("shape") and EXTEND_KERNEL not in top:
                    raise ValueError(
                        f"{path.name}: {server['name']} at batch {prof['batch']}: the extend kernel {EXTEND_KERNEL} "
                        "is not among the trace summary's largest kernels; read it from the trace instead"
                    )
                extend = top.get(EXTEND_KERNEL, 0.0)
                decode = sum(top[k] for k in DECODE_KERNELS) if all(k in top for k in DECODE_KERNELS) else None
                total = sum(parts.values())
                shape = server.get("shape") or (0, 1, 1)
                row = {
                    "server": server["name"],
                    "batch": prof["batch"],
                    "num_steps": shape[0],
                    "topk": shape[1],
                    "num_draft_tokens": shape[2],
                    "iteration_ms": prof["window_ms"] / steps,
                    "gpu_busy_ms": prof["gpu_busy_ms"] / steps,
                    "kernels_ms": total / steps,
                    "extend_attention_ms": extend / steps,
                    "decode_attention_ms": None if decode is None else decode / steps,
                    **{f"{part}_ms": parts.get(part, 0.0) / steps for part in KERNEL_PARTS},
                    "rest_ms": (total - extend - parts.get("gemm", 0.0) - parts.get("moe", 0.0)) / steps,
                }
                rows.append({k: v if v is None or isinstance(v, (str, int)) else round(v, 3) for k, v in row.items()})
    return pd.DataFrame(rows)


def kernel_table(traces: Path) -> pd.DataFrame:
    """Per torch-profiler trace in ``traces`` (``traces-batch8.tar`` unpacked): GPU milliseconds per iteration of
    the extend attention and the fused MoE, read from the kernels themselves; :func:`kernels` reads the same from
    the calib step's summaries (a test checks they agree on the kept traces)."""
    import re

    from real_sglang_calib import PROFILED_STEPS, gpu_events

    rows = []
    for path in sorted(traces.glob("*.trace.json.gz")):
        name = re.sub(r"-\d+(\.\d+)?-TP-0\.trace\.json\.gz$", "", path.name)
        server, batch = name.rsplit("-b", 1)
        events = gpu_events(path, ("kernel",))
        ms = lambda pick: sum(e["dur"] for e in events if pick(e["name"])) / 1000 / PROFILED_STEPS  # noqa: E731
        rows.append(
            {
                "server": server,
                "batch": int(batch),
                "extend_attention_ms": round(ms(lambda n: n == EXTEND_KERNEL), 3),
                "moe_ms": round(ms(lambda n: "moe" in n.lower() or "expert" in n.lower()), 3),
            }
        )
    return pd.DataFrame(rows)


#: The real-engine profiles built from these tables (fitted on plain decoding only; the exposed host time and the
#: extend attention per cached token measured): data/profiles/.
REAL_PROFILES = {
    "llama31-8b": "h100-llama3-8b-sglang0517-triton",
    "qwen3-30b-a3b": "h100-qwen3-30b-a3b-sglang0517-triton",
}


def with_kv(kernels: pd.DataFrame, points: pd.DataFrame) -> pd.DataFrame:
    """Each profiled point's KV tokens per request, estimated: the prompt plus what the wave had generated by the
    middle of the 16 profiled iterations at that server's unprofiled step time and accept length (its timed wave at
    the same batch). The profiled waves ran longer than the timed ones, so the attention they record is over a
    longer cache: the table is charged per cached token."""
    from real_sglang_calib import PROFILE_DELAY_S, PROFILED_STEPS

    steps = points.set_index(["server", "batch"])
    kv = []
    for row in kernels.itertuples(index=False):
        at = steps.loc[(row.server, row.batch)]
        kv.append(
            round(at.input_len + (PROFILE_DELAY_S * 1000.0 / at.step_ms + PROFILED_STEPS / 2) * at.accept_length, 1)
        )
    return kernels.assign(kv_per_request=kv)


def gemm_flops_efficiency(points: pd.DataFrame, kernel_rows: pd.DataFrame, model: str = "llama31-8b") -> float:
    """The achieved fraction of the data sheet's bf16 FLOP/s in the GEMMs, measured: at the profiled points of
    ``model`` with the widest verify (the most target tokens per iteration: the 16-token tree at batch 64, 1,024
    rows, where the GEMMs are compute-bound by the roofline's own reckoning), the FLOPs of every GEMM of the
    iteration as SGLang 0.5.17 runs it (the target's dense layers and LM head over the verify rows; the draft's
    ``num_steps - 1`` forwards over ``batch x topk`` rows and its extend over the verify rows, each with its LM
    head) over the trace's GEMM time; the median over those points."""
    from workbench.sim import load_profile

    profile = load_profile(REAL_PROFILES[model])
    peak = dataclasses.replace(profile.physics.efficiency, flops_efficiency=1.0)
    cost = profile.cost_for({"tp_size": 1, "cuda_graph_max_bs": 64}, efficiency=peak)
    steps = points.set_index(["server", "batch"])
    found = []
    for row in kernel_rows.itertuples(index=False):
        point = steps.loc[(row.server, row.batch)]
        if point.model != model or point.kind == "baseline":
            continue
        spec = _spec(point)
        rows, wide = row.batch * spec.num_draft_tokens, row.batch * spec.topk
        flop_ms = cost.target.dense_flop * rows + cost.target.lm_flop * rows
        flop_ms += (spec.num_steps - 1) * (cost.draft.dense_flop + cost.draft.lm_flop) * wide
        flop_ms += (cost.draft.dense_flop + cost.draft.lm_flop) * rows
        found.append((rows, flop_ms / row.gemm_ms))
    widest = max(r for r, _ in found)
    return float(np.median([e for r, e in found if r == widest]))


def small_kernel_check(kernel_rows: pd.DataFrame, profiles: dict[str, str] = REAL_PROFILES) -> pd.DataFrame:
    """Per profiled speculative point: the small kernels' measured time beyond plain decoding's (``rest_ms`` less
    the plain server's ``rest_ms - decode_attention_ms`` at that batch) beside what each real-engine profile's
    :class:`~workbench.sim.SmallKernelCosts` charges, and whether the point is one of the servers its terms were
    solved from (``solved_from``): the others (the second accept lengths) are the check."""
    from workbench.sim import load_profile

    rows = []
    for model, name in profiles.items():
        small = load_profile(name).physics.spec_kernels
        named = set(getattr(small, "servers", ()))
        prefix = next(iter(named)).split("-")[0] + "-"
        part = kernel_rows[kernel_rows.server.str.startswith(prefix)]
        plain = part[part.num_steps == 0].set_index("batch")
        for row in part[part.num_steps > 0].itertuples(index=False):
            carry = plain.loc[row.batch, "rest_ms"] - plain.loc[row.batch, "decode_attention_ms"]
            measured = row.rest_ms - carry
            charged = small.step_ms(int(row.batch), int(row.num_steps), int(row.topk), int(row.num_draft_tokens))
            rows.append(
                {
                    "model": model,
                    "server": row.server,
                    "batch": int(row.batch),
                    "solved_from": row.server in named,
                    "measured_ms": round(measured, 3),
                    "charged_ms": round(charged, 3),
                    "error_ms": round(charged - measured, 3),
                }
            )
    return pd.DataFrame(rows)


def gemm_check(kernel_rows: pd.DataFrame, profiles: dict[str, str] = REAL_PROFILES) -> pd.DataFrame:
    """Per profiled point of each real-engine profile that names a measured GEMM table (``[spec_kernels] gemm``):
    the iteration's GEMM time in the trace (``gemm_ms``: target and draft) beside what the profile charges (the
    target's dense layers and LM head over ``batch x num_draft_tokens`` rows, the draft's ``num_steps - 1`` forwards
    over ``batch x topk`` rows and its extend over ``batch x num_draft_tokens``; plain decoding: the target over
    ``batch`` rows), and whether the point is one of the servers the curve was solved from (``solved_from``)."""
    rows = []
    for model, name in profiles.items():
        cost, profile = _cost(model, profiles=profiles)
        gemm = profile.physics.gemm
        if gemm is None:
            continue
        prefix = gemm.servers[0].split("-")[0] + "-"

        def ms(tokens: int, which: Any) -> float:
            groups = cost.forward_groups(tokens, 1, 0, tokens, model=which)
            return groups["dense"] + groups["lm_head"]

        for row in kernel_rows[kernel_rows.server.str.startswith(prefix)].itertuples(index=False):
            b, steps = int(row.batch), int(row.num_steps)
            verify = b * int(row.num_draft_tokens)
            charged = ms(verify, "target")
            if steps:
                charged += (steps - 1) * ms(b * int(row.topk), "draft") + ms(verify, "draft")
            rows.append(
                {
                    "model": model,
                    "server": row.server,
                    "batch": b,
                    "target_rows": verify,
                    "solved_from": row.server in gemm.servers,
                    "measured_ms": round(row.gemm_ms, 3),
                    "charged_ms": round(charged, 3),
                    "error_ms": round(charged - row.gemm_ms, 3),
                }
            )
    return pd.DataFrame(rows)


def _cost(model: str, efficiency: Any = None, profiles: dict[str, str] = PROFILES):
    from workbench.sim import load_profile

    profile = load_profile(profiles[model])
    return profile.cost_for({"tp_size": 1, "cuda_graph_max_bs": 64}, efficiency=efficiency), profile


def _spec(row: Any):
    from workbench.sim import SpecConfig

    return SpecConfig(
        "EAGLE3",
        num_steps=int(row.num_steps),
        topk=int(row.topk),
        num_draft_tokens=int(row.num_draft_tokens),
        spec_v2=True,
    )


def predict(
    points: pd.DataFrame, efficiency: Any = None, host_exposed_ms: float = 0.0, profiles: dict[str, str] = PROFILES
) -> np.ndarray:
    """Each point's step time (ms) on its model's profile (with ``efficiency`` if given) plus ``host_exposed_ms``."""
    out = []
    for row in points.itertuples(index=False):
        cost, _ = _cost(row.model, efficiency if efficiency is None else efficiency[row.model], profiles)
        kv = int(row.batch) * (int(row.input_len) + int(row.wave_tokens) // 2)
        if row.kind == "baseline":
            ms = cost.decode_ms(int(row.batch), kv)
        else:
            ms = cost.spec_decode_ms(int(row.batch), kv, _spec(row), round(row.batch * row.accept_length))
        out.append(ms + host_exposed_ms)
    return np.array(out)


def fit_baseline(points: pd.DataFrame, model: str, host_exposed_ms: float, profiles: dict[str, str] = PROFILES) -> Any:
    """The model's efficiency with FIT_TERMS fitted (log least squares) to its baseline step times."""
    from workbench.calibration import least_squares

    _, profile = _cost(model, profiles=profiles)
    base = profile.physics.efficiency
    terms = FIT_TERMS[model]
    rows = points[(points.model == model) & (points.kind == "baseline")]
    goal = np.log(rows.step_ms.to_numpy())

    def eff(x: np.ndarray) -> Any:
        return dataclasses.replace(
            base, **{t: min(math.exp(v), 1.0) if t.endswith("efficiency") else math.exp(v) for t, v in zip(terms, x)}
        )

    def resid(x: np.ndarray) -> np.ndarray:
        return np.log(predict(rows, {model: eff(x)}, host_exposed_ms, profiles)) - goal

    x0 = np.log([max(getattr(base, t), 1e-3) for t in terms])
    x, _ = least_squares(resid, x0)
    return eff(x)


def errors(points: pd.DataFrame, predicted: np.ndarray) -> pd.DataFrame:
    df = points.copy()
    df["predicted_step_ms"] = predicted.round(4)
    df["step_error_pct"] = (100 * (df.step_ms / df.predicted_step_ms - 1)).round(2)  # = error of tok/s
    base = df[df.kind == "baseline"].set_index(["model", "batch"])
    ratio_real, ratio_sim = [], []
    for row in df.itertuples(index=False):
        b = base.loc[(row.model, row.batch)]
        ratio_real.append(row.accept_length / row.step_ms * b.step_ms)
        ratio_sim.append(row.accept_length / row.predicted_step_ms * b.predicted_step_ms)
    df["ratio_real"] = np.round(ratio_real, 4)
    df["ratio_sim"] = np.round(ratio_sim, 4)
    df["ratio_error_pct"] = (100 * (df.ratio_sim / df.ratio_real - 1)).round(2)
    return df


def summary(df: pd.DataFrame, label: str) -> dict[str, Any]:
    out: dict[str, Any] = {"label": label}
    for model in sorted(df.model.unique()):
        for kind in ("baseline", "chain", "tree"):
            part = df[(df.model == model) & (df.kind == kind)]
            if part.empty:
                continue
            key = f"{model}/{kind}"
            out[key] = {
                "n": len(part),
                "tok_s_mean_abs_pct": round(part.step_error_pct.abs().mean(), 1),
                "tok_s_worst_abs_pct": round(part.step_error_pct.abs().max(), 1),
            }
            if kind != "baseline":
                out[key].update(
                    ratio_mean_abs_pct=round(part.ratio_error_pct.abs().mean(), 1),
                    ratio_worst_abs_pct=round(part.ratio_error_pct.abs().max(), 1),
                )
    return out


def tree_minus_chain(df: pd.DataFrame) -> pd.DataFrame:
    """Measured and predicted extra step time of each tree over the chain of the same num_steps (same model)."""
    rows = []
    for (model, batch), part in df.groupby(["model", "batch"]):
        chains = part[(part.kind == "chain") & (part.num_steps == 3) & (part.forced_accept_length == 3.0)]
        if chains.empty:
            continue
        chain = chains.iloc[0]
        for tree in part[part.kind == "tree"].itertuples(index=False):
            real = tree.step_ms - chain.step_ms
            sim = tree.predicted_step_ms - chain.predicted_step_ms
            rows.append(
                {
                    "model": model,
                    "batch": batch,
                    "tree": tree.server,
                    "real_extra_ms": round(real, 3),
                    "sim_extra_ms": round(sim, 3),
                    "error_pct": round(100 * (sim / real - 1), 1) if real else None,
                }
            )
    return pd.DataFrame(rows)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--table", type=Path, default=DEFAULT_TABLE)
    ap.add_argument("--json", type=Path, default=None, help="write the summaries here")
    args = ap.parse_args(argv)
    points = tidy(args.table)
    points.to_csv(args.table / "steps.csv", index=False)
    with_kv(kernels(args.table), points).to_csv(args.table / "kernels.csv", index=False)
    pd.set_option("display.width", 200)
    print(f"{len(points)} points from {args.table} -> steps.csv")
    host = points.dropna(subset=["host_exposed_ms"]).groupby("model").host_exposed_ms.median()
    print(
        "measured host time the GPU waits on per iteration (median over profiled points, ms):", host.round(3).to_dict()
    )
    results: dict[str, Any] = {"host_exposed_ms": host.round(4).to_dict()}
    flops = gemm_flops_efficiency(points, pd.read_csv(args.table / "kernels.csv"))
    print("measured GEMM FLOP efficiency (the widest verify's GEMMs, dense model):", round(flops, 3))
    results["gemm_flops_efficiency"] = round(flops, 4)

    shipped = errors(points, predict(points))
    results["out_of_the_box"] = summary(shipped, "shipped profiles, no fit")
    fitted_eff, fitted_pred = {}, np.zeros(len(points))
    for model in sorted(points.model.unique()):
        fitted_eff[model] = fit_baseline(points, model, float(host[model]))
    for i, row in enumerate(points.itertuples(index=False)):
        fitted_pred[i] = predict(points.iloc[[i]], fitted_eff, float(host[row.model]))[0]
    fitted = errors(points, fitted_pred)
    results["fitted_on_baseline"] = summary(fitted, "fitted on baseline only; host time measured; spec held out")
    results["fitted_terms"] = {m: {t: round(getattr(e, t), 5) for t in FIT_TERMS[m]} for m, e in fitted_eff.items()}
    # the real-engine profiles as shipped (their terms fitted on baseline only by the refit below, which must agree)
    measured = errors(points, predict(points, profiles=REAL_PROFILES))
    refit = {m: fit_baseline(points, m, 0.0, REAL_PROFILES) for m in sorted(points.model.unique())}
    results["real_engine_profiles"] = summary(
        measured,
        "the real-engine profiles: fitted on baseline only; host time, extend attention, small kernels and GEMMs by rows (dense) measured; spec held out",
    )
    results["real_engine_profiles_refit"] = {
        m: {t: round(getattr(e, t), 5) for t in FIT_TERMS[m]} for m, e in refit.items()
    }
    cols = [
        "server",
        "batch",
        "accept_length",
        "step_ms",
        "predicted_step_ms",
        "step_error_pct",
        "ratio_real",
        "ratio_sim",
        "ratio_error_pct",
    ]
    for label, df in (
        ("OUT OF THE BOX", shipped),
        ("FITTED ON BASELINE ONLY (spec held out)", fitted),
        ("FITTED ON BASELINE ONLY, MEASURED HOST AND EXTEND ATTENTION (spec held out)", measured),
    ):
        print(f"\n== {label}")
        print(df[cols].to_string(index=False))
    check = small_kernel_check(pd.read_csv(args.table / "kernels.csv"))
    print("\n== small kernels beyond plain decoding's: measured (trace) and charged (SmallKernelCosts)")
    print(check.to_string(index=False))
    results["small_kernels"] = check.to_dict(orient="records")
    gemm = gemm_check(pd.read_csv(args.table / "kernels.csv"))
    print("\n== GEMMs per iteration: measured (trace) and charged (GemmCosts, by rows)")
    print(gemm.to_string(index=False))
    results["gemm"] = gemm.to_dict(orient="records")
    tmc = tree_minus_chain(measured)
    print("\n== tree minus chain (fitted, measured terms)")
    print(tmc.to_string(index=False))
    results["tree_minus_chain"] = tmc.to_dict(orient="records")
    print(
        json.dumps(
            {k: v for k, v in results.items() if k not in ("tree_minus_chain", "small_kernels", "gemm")}, indent=1
        )
    )
    if args.json:
        args.json.write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
