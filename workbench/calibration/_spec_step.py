"""The whole speculative step on the GPU against the model: calibrated on plain decode only.

``remote/gpu_spec_step.py`` times, on one GPU with CUDA graphs and random weights, the plain decode
step and the whole EAGLE step (draft extend, ``num_steps - 1`` draft forwards, the tree, the verify
with all its logits, greedy acceptance) for each spec shape at batch 1-256, every request at the same
context. :func:`spec_step_accuracy` fits the roofline's three GPU terms (HBM efficiency, FLOP/s
efficiency, fixed GPU time per layer) on the **decode** rows only, then predicts every spec row with
the simulator's own step cost (:meth:`workbench.sim.RooflineCost.spec_gpu_ms`: no CPU time, as a
CUDA-graph replay has none), with and without the small kernels from the same table's
``kernels`` rows (:class:`~workbench.sim._spec_kernels.SpecKernelCosts`). The spec rows are held out:
nothing is fitted to them.

The draft extend is costed over ``batch x (num_steps + 1)`` tokens, the size SGLang 0.5.9 pads it to
under CUDA graphs (``EAGLEDraftExtendCudaGraphRunner``: ``num_tokens_per_bs = num_steps + 1``) and the
size the GPU program runs.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from workbench.calibration._fit import least_squares
from workbench.errors import ConfigError

#: Terms fitted on the decode rows.
TERMS = ("hbm_efficiency", "flops_efficiency", "layer_fixed_us")
_UPPER = {"hbm_efficiency": 1.0, "flops_efficiency": 1.0, "layer_fixed_us": 1e4}


def _cost(efficiency, *, gpu: str, target: str, draft: str, kernels=None):
    from workbench.sim import Deployment, RooflineCost, load_gpu, load_model_config

    sheet = load_gpu(gpu)
    link = sheet.interconnect(next(iter(sheet.interconnects)))
    dep = Deployment(gpu=sheet, interconnect=link, tp_size=1, cuda_graph_max_bs=1 << 20)
    return RooflineCost(
        load_model_config(target), dep, efficiency, draft=load_model_config(draft), spec_kernels=kernels
    )


def spec_step_accuracy(
    path: str | Path,
    *,
    gpu: str = "h200",
    target: str = "llama-3.1-8b-instruct",
    draft: str = "eagle3-llama3.1-8b",
    shipped: str | None = "h200-llama3-8b",
    kernels_table: str | Path | None = None,
) -> tuple[dict[str, float], pd.DataFrame]:
    """Fit on the table's decode rows; predict its whole spec steps.

    Args:
        path: a ``spec_step.csv`` of ``remote/gpu_spec_step.py`` (timed on a GPU).
        gpu, target, draft: ``data/gpus`` and ``data/models`` stems of the table's hardware and models.
        shipped: a profile whose GPU terms, unfitted, also predict every row (the out-of-the-box error;
            None: skip).
        kernels_table: the ``spec_step.csv`` whose ``kernels`` rows cost the small kernels (default: ``path``;
            a table timed with ``--families decode,spec`` has none of its own).

    Returns:
        (fitted terms, rows): one row per decode and whole-spec point with ``measured_ms``, ``model_ms``
        (with the measured small kernels), ``model_no_kernels_ms``, ``error_pct``, ``error_no_kernels_pct``,
        ``kernels_ms``, ``fitted`` (True for decode rows) and, with ``shipped``, ``shipped_ms`` and
        ``shipped_error_pct`` (that profile's hardware terms, no fit, the measured kernels charged).

    Raises:
        ConfigError: a CPU test table, or one without decode or spec rows.
    """
    from workbench.sim import Efficiency, SpecConfig, SpecKernelCosts

    path = Path(path)
    table = pd.read_csv(path)
    if table["timer"].astype(str).str.contains("NOT a calibration").any():
        raise ConfigError(f"{path} was timed on a CPU (a test of the program): it is never a calibration")
    decode = table[table["family"] == "decode"]
    whole = table[(table["family"] == "spec") & (table["part"] == "whole")]
    if len(decode) <= len(TERMS) or whole.empty:
        raise ConfigError(
            f"{path} needs more than {len(TERMS)} decode rows and some spec rows; rerun "
            "remote/gpu_spec_step.py with --families decode,spec"
        )
    kernels = SpecKernelCosts(kernels_table or path)

    def eff(x):
        return Efficiency(**{t: min(math.exp(v), _UPPER[t]) for t, v in zip(TERMS, x)})

    def decode_ms(cost, r):
        return cost.target.total(int(r.batch), int(r.batch), int(r.batch * r.context), int(r.batch))

    goal = np.log(decode["median_ms"].to_numpy(float))

    def resid(x):
        cost = _cost(eff(x), gpu=gpu, target=target, draft=draft)
        return np.log([decode_ms(cost, r) for r in decode.itertuples()]) - goal

    x, _ = least_squares(resid, np.log([0.8, 0.6, 20.0]))
    fitted = eff(x)
    plain = _cost(fitted, gpu=gpu, target=target, draft=draft)
    full = _cost(fitted, gpu=gpu, target=target, draft=draft, kernels=kernels)
    box = None
    if shipped is not None:
        from workbench.sim import load_profile

        physics = load_profile(shipped).physics
        if physics is None:
            raise ConfigError(f"profile {shipped!r} has no [physics] table: no shipped GPU terms to compare with")
        e = physics.efficiency
        box = _cost(
            Efficiency(**{t: getattr(e, t) for t in TERMS}), gpu=gpu, target=target, draft=draft, kernels=kernels
        )
    rows = []
    for r in decode.itertuples():
        m = decode_ms(plain, r)
        rows.append(
            {
                "shape": "decode",
                "batch": int(r.batch),
                "measured_ms": r.median_ms,
                "model_ms": m,
                "model_no_kernels_ms": m,
                "kernels_ms": 0.0,
                "fitted": True,
                "shipped_ms": decode_ms(box, r) if box is not None else math.nan,
            }
        )
    for r in whole.itertuples():
        spec = SpecConfig(
            algorithm="EAGLE3", num_steps=int(r.num_steps), topk=int(r.topk), num_draft_tokens=int(r.num_draft_tokens)
        )
        b, kv, extend = int(r.batch), int(r.batch * r.context), int(r.batch * (r.num_steps + 1))
        gpu_ms, kernels_ms = full.spec_gpu_ms(b, kv, spec, extend)
        rows.append(
            {
                "shape": r.shape,
                "batch": b,
                "measured_ms": r.median_ms,
                "model_ms": gpu_ms,
                "model_no_kernels_ms": plain.spec_gpu_ms(b, kv, spec, extend)[0],
                "kernels_ms": kernels_ms,
                "fitted": False,
                "shipped_ms": box.spec_gpu_ms(b, kv, spec, extend)[0] if box is not None else math.nan,
            }
        )
    out = pd.DataFrame(rows)
    out["error_pct"] = 100 * (out["model_ms"] / out["measured_ms"] - 1)
    out["error_no_kernels_pct"] = 100 * (out["model_no_kernels_ms"] / out["measured_ms"] - 1)
    out["shipped_error_pct"] = 100 * (out["shipped_ms"] / out["measured_ms"] - 1)
    return {t: getattr(fitted, t) for t in TERMS}, out


def spec_step_breakdown(
    path: str | Path,
    terms: dict[str, Any],
    *,
    gpu: str = "h200",
    target: str = "llama-3.1-8b-instruct",
    draft: str = "eagle3-llama3.1-8b",
    kernels_table: str | Path | None = None,
) -> pd.DataFrame:
    """The whole step's parts, measured alone and modelled, with the terms :func:`spec_step_accuracy` fitted.

    Each measured part carries its own small kernels, so the model's are grouped the same way: ``draft`` is the
    draft extend and the draft forwards with their top-k and tree selection; ``verify`` the target's verify
    forward with its LM head; ``tree_and_accept`` the tree's construction, the verification and the KV
    bookkeeping. (Parts timed alone each pay a graph launch, 10-20 µs, that the whole step pays once.)

    ``kernels_table``: as :func:`spec_step_accuracy`'s.

    Returns:
        One row per (shape, batch, part): ``measured_ms``, ``model_ms``, ``error_pct``.
    """
    from workbench.sim import Efficiency, SpecConfig, SpecKernelCosts

    path = Path(path)
    table = pd.read_csv(path)
    kernels = SpecKernelCosts(kernels_table or path)
    cost = _cost(Efficiency(**terms), gpu=gpu, target=target, draft=draft, kernels=kernels)
    spec_rows = table[table["family"] == "spec"]
    rows = []
    for (shape, steps, topk, n, b), g in spec_rows.groupby(
        ["shape", "num_steps", "topk", "num_draft_tokens", "batch"], sort=False
    ):
        part = g.set_index("part")["median_ms"]
        spec = SpecConfig(algorithm="EAGLE3", num_steps=int(steps), topk=int(topk), num_draft_tokens=int(n))
        b, ctx = int(b), int(g["context"].iloc[0])
        brk = cost.spec_breakdown(b, b * ctx, spec, b * (int(steps) + 1))
        gpu_ms, _ = cost.spec_gpu_ms(b, b * ctx, spec, b * (int(steps) + 1))
        k = kernels.parts(b, int(steps), int(topk), int(n))
        model = {
            "draft": brk.draft_ms + k["draft_topk"] + k["tree_select"],
            "verify": gpu_ms - brk.draft_ms - brk.kernels_ms,
            "tree_and_accept": k["tree_build"] + k["verify"] + k["kv_accept"],
        }
        measured = {
            "draft": part["draft_extend"] + part.get("draft_steps", 0.0),
            "verify": part["verify_forward"],
            "tree_and_accept": part["tree"] * (int(topk) > 1) + part["accept"],
        }
        for name in model:
            rows.append(
                {
                    "shape": shape,
                    "batch": b,
                    "part": name,
                    "measured_ms": measured[name],
                    "model_ms": model[name],
                    "error_pct": 100 * (model[name] / measured[name] - 1),
                }
            )
    return pd.DataFrame(rows)
