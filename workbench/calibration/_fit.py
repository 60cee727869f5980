"""Fit the roofline's efficiency terms to a GPU timing table; residuals, held-out errors, knees.

Pure functions of a :class:`~workbench.calibration._table.GpuTable` (no I/O). Every prediction is
the simulator's own cost model (:class:`workbench.sim.RooflineCost`, ``forward_groups``): one
forward of the target (or the draft) on one GPU, replayed from a CUDA graph, with no CPU time,
so the formulas are those the simulated engine runs; nothing here restates them.

The fit (:func:`fit_table`) solves for at most three terms (by default the achieved fraction of
HBM bandwidth, of dense FLOP/s, and the fixed GPU time per decoder layer) by damped Gauss-Newton
on the log residuals ``log(model / measured)`` of the points it is given (by default the decode
points at contexts 0 and 2,048: :data:`DEFAULT_FIT`), and predicts every other point of the table
with the fitted terms (held out: verify, prefill, the LM head alone, the draft's step, decode at
8k and 32k). The knee of a context (:func:`knees`) is the tokens per step at which a decode
step's time first exceeds its time at one token by 10%, on the measured points (linear between
them) and on the fitted model (every integer token count).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Sequence

import numpy as np
import pandas as pd

from workbench.calibration._table import FORWARD_FAMILIES, GpuTable, step_points
from workbench.errors import ConfigError

#: The terms fitted unless told otherwise.
DEFAULT_TERMS = ("hbm_efficiency", "flops_efficiency", "layer_fixed_us")
#: Terms fitted to the all-reduce rows (two or more GPUs).
ALLREDUCE_TERMS = ("allreduce_latency_us", "interconnect_efficiency")
#: Upper bounds of the terms (efficiencies are fractions of the data sheet).
_UPPER = {
    "hbm_efficiency": 1.0,
    "flops_efficiency": 1.0,
    "interconnect_efficiency": 1.0,
    "layer_fixed_us": 1e4,
    "allreduce_latency_us": 1e4,
}
#: How far above the one-token time a step leaves the memory-bound floor.
KNEE_THRESHOLD = 0.10


def DEFAULT_FIT(points: pd.DataFrame) -> pd.Series:  # noqa: N802 - a constant rule, named as one
    """The points fitted by default: decode steps at contexts 0 and 2,048."""
    return (points["family"] == "decode") & points["context"].isin([0, 2048])


def cost_model(table: GpuTable, efficiency, *, gpu: str, interconnect: str = "nvlink"):
    """The simulator's cost model for the table's shapes on ``gpu`` (``data/gpus/<gpu>.toml``).

    TP and the models come from the table's plan (``target_model``, ``draft_model``: data/models stems).

    Raises:
        ConfigError: unknown GPU or model file.
    """
    from workbench.sim import Deployment, RooflineCost, load_gpu, load_model_config

    sheet = load_gpu(gpu)
    link = sheet.interconnect(interconnect if interconnect in sheet.interconnects else next(iter(sheet.interconnects)))
    deployment = Deployment(gpu=sheet, interconnect=link, tp_size=int(table.plan.get("tp", 1)))
    draft = load_model_config(table.draft_model) if table.draft_model else None
    return RooflineCost(load_model_config(table.target_model), deployment, efficiency, draft=draft)


def predict_points(points: pd.DataFrame, cost) -> pd.DataFrame:
    """The model's time of each point, and its kernel groups (ms; one GPU's kernels, no collectives).

    Returns:
        ``points`` with ``model_ms`` and ``model_<group>_ms`` for ``layers`` (the decoder stack),
        ``attention``, ``dense``, ``experts``, ``lm_head``, ``fixed``; all-reduce points get NaN.
    """
    rows = []
    for p in points.itertuples(index=False):
        out = dict.fromkeys(
            (
                "model_ms",
                "model_layers_ms",
                "model_attention_ms",
                "model_dense_ms",
                "model_experts_ms",
                "model_lm_head_ms",
                "model_fixed_ms",
            ),
            math.nan,
        )
        if p.family in (*FORWARD_FAMILIES, "lm_head", "draft"):
            model = "draft" if p.role == "draft" else "target"
            g = cost.forward_groups(p.tokens, p.seqs, p.kv_tokens, p.logits, model=model)
            kernels = sum(v for k, v in g.items() if k != "communication")
            out.update({f"model_{k}_ms": v for k, v in g.items() if k != "communication"})
            out["model_layers_ms"] = kernels - g["lm_head"]
            out["model_ms"] = g["lm_head"] if p.family == "lm_head" else kernels
        rows.append(out)
    return points.assign(**pd.DataFrame(rows, index=points.index))


# -- fitting ---------------------------------------------------------------------------------------
def _efficiency(base, terms: Sequence[str], x: np.ndarray):
    return dataclasses.replace(base, **{t: min(math.exp(v), _UPPER[t]) for t, v in zip(terms, x)})


def least_squares(
    residuals: Callable[[np.ndarray], np.ndarray], x0: np.ndarray, *, max_iterations: int = 60, tol: float = 1e-10
) -> tuple[np.ndarray, int]:
    """Damped Gauss-Newton (Levenberg-Marquardt) on ``residuals(x)``; finite-difference Jacobian.

    Returns:
        (x minimising the sum of squares, iterations used).
    """
    x = np.asarray(x0, float)
    r = residuals(x)
    lam, h, it = 1e-3, 1e-4, 0
    for it in range(1, max_iterations + 1):
        jac = np.empty((len(r), len(x)))
        for j in range(len(x)):
            dx = np.zeros_like(x)
            dx[j] = h
            jac[:, j] = (residuals(x + dx) - r) / h
        jtj, grad = jac.T @ jac, jac.T @ r
        improved = False
        for _ in range(12):
            step = np.clip(np.linalg.solve(jtj + lam * np.diag(np.diag(jtj) + 1e-12), -grad), -2.0, 2.0)
            r_new = residuals(x + step)
            if r_new @ r_new < r @ r:
                gain = r @ r - r_new @ r_new
                x, r, lam, improved = x + step, r_new, max(lam / 3, 1e-9), True
                break
            lam *= 4
        if not improved or gain < tol * max(r @ r, 1e-30):
            break
    return x, it


@dataclasses.dataclass(frozen=True)
class CalibrationFit:
    """What :func:`fit_table` found.

    Attributes:
        table: the timing table.
        gpu: the data sheet's name (``data/gpus/<gpu>.toml``).
        terms: the fitted terms.
        efficiency: every efficiency term, the fitted ones in (``workbench.sim.Efficiency``).
        points: one row per point: the table's columns (:func:`step_points`), the model's
            (:func:`predict_points`), ``residual`` (model / measured - 1) and ``fitted``.
        iterations: Gauss-Newton iterations used.
        allreduce: the all-reduce terms fitted to the table's all-reduce rows, or None (one GPU).
    """

    table: GpuTable
    gpu: str
    terms: tuple[str, ...]
    efficiency: object
    points: pd.DataFrame
    iterations: int
    allreduce: dict[str, float] | None = None

    @property
    def values(self) -> dict[str, float]:
        """The fitted terms' values (all-reduce terms included when fitted)."""
        out = {t: getattr(self.efficiency, t) for t in self.terms}
        return {**out, **(self.allreduce or {})}

    def residual_summary(self) -> pd.DataFrame:
        """Per (fitted or held out, family, context): points, median and largest |residual| (%)."""
        pts = self.points.dropna(subset=["residual"]).assign(abs_pct=lambda d: 100 * d["residual"].abs())
        pts = pts.assign(set=np.where(pts["fitted"], "fitted", "held out"))
        out = pts.groupby(["set", "family", "context"], sort=False).agg(
            points=("point", "size"),
            median_abs_error_pct=("abs_pct", "median"),
            max_abs_error_pct=("abs_pct", "max"),
            mean_error_pct=("residual", lambda s: 100 * s.mean()),
        )
        return out.reset_index()

    def knees(self, *, threshold: float = KNEE_THRESHOLD) -> pd.DataFrame:
        """The measured and the model's knee at each decode context (:func:`knees`)."""
        return knees(self.points, cost_model(self.table, self.efficiency, gpu=self.gpu), threshold=threshold)


def fit_table(
    table: GpuTable,
    *,
    gpu: str,
    terms: Sequence[str] = DEFAULT_TERMS,
    fit_on: Callable[[pd.DataFrame], pd.Series] = DEFAULT_FIT,
    start=None,
) -> CalibrationFit:
    """Fit ``terms`` to the points ``fit_on`` selects; predict every point with the result.

    Args:
        table: a timing table (:func:`~workbench.calibration.load_table`).
        gpu: the data sheet to fit against (``data/gpus/<gpu>.toml``).
        terms: one to three of ``hbm_efficiency``, ``flops_efficiency``, ``layer_fixed_us``.
        fit_on: selects the fitted points from :func:`step_points`' table (default :data:`DEFAULT_FIT`).
        start: the efficiency terms to start from and to keep for the rest (default: the
            simulator's defaults, ``layer_fixed_us`` 20).

    Raises:
        ConfigError: a CPU test table, no terms or more than three, or not fewer terms than points.
    """
    from workbench.sim import Efficiency

    terms = tuple(terms)
    if not table.calibration:
        raise ConfigError(f"{table.path} was timed on a CPU (a test of the program): it is never a calibration")
    if not 1 <= len(terms) <= 3 or any(t not in _UPPER or t in ALLREDUCE_TERMS for t in terms):
        raise ConfigError(f"fit 1 to 3 of hbm_efficiency, flops_efficiency, layer_fixed_us; got {terms}")
    pts = step_points(table)
    fitted = fit_on(pts).to_numpy() & pts["measured_ms"].notna().to_numpy()
    if fitted.sum() <= len(terms):
        raise ConfigError(
            f"{len(terms)} free terms and {int(fitted.sum())} points: a fit needs fewer terms than points"
        )
    base = start or Efficiency(layer_fixed_us=20.0)
    chosen = pts[fitted]
    goal = np.log(chosen["measured_ms"].to_numpy(float))

    def resid(x: np.ndarray) -> np.ndarray:
        model = predict_points(chosen, cost_model(table, _efficiency(base, terms, x), gpu=gpu))["model_ms"]
        return np.log(model.to_numpy(float)) - goal

    x, iterations = least_squares(resid, np.log([max(getattr(base, t), 1e-3) for t in terms]))
    eff = _efficiency(base, terms, x)
    out = predict_points(pts, cost_model(table, eff, gpu=gpu))
    out = out.assign(residual=out["model_ms"] / out["measured_ms"] - 1.0, fitted=fitted)
    return CalibrationFit(table, gpu, terms, eff, out, iterations, allreduce=fit_allreduce(table, gpu=gpu))


def fit_allreduce(table: GpuTable, *, gpu: str) -> dict[str, float] | None:
    """``allreduce_latency_us`` and ``interconnect_efficiency`` from the table's all-reduce rows.

    The prediction of one all-reduce of ``tokens x hidden`` activations is the simulator's own: the
    communication of a one-layer forward over ``gpus`` TP ranks with no logits is two all-reduces
    plus one NCCL latency, so one all-reduce is ``(communication - latency) / 2`` (NCCL's latency:
    the timing uses ``torch.distributed.all_reduce``, never SGLang's custom all-reduce).

    Returns:
        The two terms, or None when the table has no all-reduce rows (one GPU).
    """
    from workbench.sim import Deployment, Efficiency, RooflineCost, load_gpu, load_model_config

    pts = step_points(table)
    ar = pts[(pts["family"] == "allreduce") & pts["measured_ms"].notna()]
    if len(ar) < 3:
        return None
    sheet = load_gpu(gpu)
    gpus = int(ar["gpus"].iloc[0])
    link = sheet.interconnect("nvlink" if "nvlink" in sheet.interconnects else next(iter(sheet.interconnects)))
    one_layer = dataclasses.replace(load_model_config(table.target_model), num_hidden_layers=1)
    dep = Deployment(gpu=sheet, interconnect=link, tp_size=gpus, custom_all_reduce=False)
    goal = np.log(ar["measured_ms"].to_numpy(float))
    base = Efficiency()

    def model(eff) -> np.ndarray:
        cost = RooflineCost(one_layer, dep, eff)
        lat = eff.allreduce_latency_us / 1e3
        return np.array([(cost.forward_groups(int(t), int(t), 0, 0)["communication"] - lat) / 2 for t in ar["tokens"]])

    x, _ = least_squares(
        lambda x: np.log(model(_efficiency(base, ALLREDUCE_TERMS, x))) - goal,
        np.log([base.allreduce_latency_us, base.interconnect_efficiency]),
    )
    eff = _efficiency(base, ALLREDUCE_TERMS, x)
    return {t: getattr(eff, t) for t in ALLREDUCE_TERMS}


# -- knees -----------------------------------------------------------------------------------------
def measured_knee(tokens: Sequence[float], ms: Sequence[float], *, threshold: float = KNEE_THRESHOLD) -> float:
    """Tokens per step at which ``ms`` first exceeds ``(1 + threshold)`` x its value at the fewest
    tokens (linear between the two points around it); NaN when it never does in the range."""
    order = np.argsort(np.asarray(tokens, float))
    t, y = np.asarray(tokens, float)[order], np.asarray(ms, float)[order]
    limit = y[0] * (1.0 + threshold)
    above = np.nonzero(y > limit)[0]
    if not len(above):
        return math.nan
    i = above[0]
    return float(t[i - 1] + (limit - y[i - 1]) / (y[i] - y[i - 1]) * (t[i] - t[i - 1]))


def knees(points: pd.DataFrame, cost, *, threshold: float = KNEE_THRESHOLD, max_tokens: int = 8192) -> pd.DataFrame:
    """The knee of every decode context: measured (from ``measured_ms``) and the model's (``cost``).

    Returns:
        One row per context: ``context``, ``floor_ms`` (measured at the fewest tokens),
        ``measured_knee_tokens`` (NaN: beyond ``max_measured_tokens``), ``max_measured_tokens``,
        ``model_floor_ms``, ``model_knee_tokens``.
    """
    rows = []
    dec = points[points["family"] == "decode"]
    grid = np.arange(1, max_tokens + 1)
    for context, d in dec.groupby("context", sort=True):
        d = d.sort_values("tokens")
        model = np.array(
            [
                sum(
                    v
                    for k, v in cost.forward_groups(int(t), int(t), int(t) * int(context), int(t)).items()
                    if k != "communication"
                )
                for t in grid
            ]
        )
        above = np.nonzero(model > model[0] * (1.0 + threshold))[0]
        rows.append(
            {
                "context": int(context),
                "floor_ms": float(d["measured_ms"].iloc[0]),
                "measured_knee_tokens": measured_knee(d["tokens"], d["measured_ms"], threshold=threshold),
                "max_measured_tokens": int(d["tokens"].max()),
                "model_floor_ms": float(model[0]),
                "model_knee_tokens": float(grid[above[0]]) if len(above) else math.nan,
            }
        )
    return pd.DataFrame(rows)
