"""The calibration notebook's API: a stored GPU timing table, its fit, charts and the what-if, one call per cell.

Glue between :mod:`workbench.calibration` (tables, fit, knees, what-if) and :mod:`workbench.charts`
(pure charts); nothing here measures: it reads a stored table, so a report runs without a GPU.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from pathlib import Path

import altair as alt
import pandas as pd

from workbench import charts
from workbench.analysis import round_sig
from workbench.calibration import CalibrationFit, cost_model, fit_table, load_table, whatif_crossovers, whatif_speedup
from workbench.markup import literal
from workbench.paths import resolve

#: Points shown in the kernel-group chart (those the table has).
GROUP_POINTS = ("decode:T1:q1:C0", "decode:T128:q1:C2048", "verify:T256:q16:C2048", "prefill:T4096:q4096:C0")


@dataclasses.dataclass(frozen=True)
class CalibrationStudy:
    """One table fitted (:func:`load_calibration`), with the what-if its profile predicts once asked for
    (:meth:`with_whatif`).

    Attributes:
        fit: the fit (terms, points with residuals, knees).
        profile: the simulator profile the what-if runs on (written from this fit).
        whatif: the what-if's speedup per variant and batch (:func:`workbench.calibration.whatif_speedup`);
            None: not asked for (the verdict, the opening and the charts then leave it out).
    """

    fit: CalibrationFit
    profile: str
    whatif: pd.DataFrame | None = dataclasses.field(default=None, compare=False)

    def with_whatif(self, *, baseline: str, spec_variants: Sequence[str], context: int = 1024) -> CalibrationStudy:
        """This study with the what-if of ``spec_variants`` against ``baseline`` on its profile, every request
        at ``context`` cached tokens (SIMULATED, step level: :func:`workbench.calibration.whatif_speedup`)."""
        speedups = whatif_speedup(self.profile, baseline=baseline, spec_variants=spec_variants, context=context)
        return dataclasses.replace(self, whatif=speedups)

    def whatif_crossovers(self) -> pd.DataFrame:
        """Where each what-if variant stops paying (:func:`workbench.calibration.whatif_crossovers`); empty without
        a what-if."""
        return whatif_crossovers(self.whatif) if self.whatif is not None else pd.DataFrame()

    @property
    def measured_subtitle(self) -> list[str]:
        """Subtitle lines: MEASURED (GPU, date) and MODEL FIT (terms)."""
        terms = ", ".join(f"{k} {v:.3g}" for k, v in self.fit.values.items())
        return [self.fit.table.provenance(), f"MODEL FIT: workbench roofline on data/gpus/{self.fit.gpu}.toml; {terms}"]

    def terms(self) -> pd.DataFrame:
        """The fitted terms, one row each."""
        return pd.DataFrame([{"term": k, "value": v} for k, v in self.fit.values.items()])

    def points(self) -> pd.DataFrame:
        """Every point: measured, model, residual, fitted or held out."""
        cols = [
            "point",
            "family",
            "tokens",
            "seqs",
            "q_len",
            "context",
            "measured_ms",
            "model_ms",
            "residual",
            "fitted",
        ]
        return self.fit.points.dropna(subset=["residual"])[cols].reset_index(drop=True)

    def summary(self) -> pd.DataFrame:
        """Median and largest |residual| per (fitted or held out, family, context)."""
        return self.fit.residual_summary()

    def knees(self) -> pd.DataFrame:
        """Measured and model knee per context."""
        return self.fit.knees()

    def batch1(self) -> pd.DataFrame:
        """Plain decode at batch 1: the profile's predicted iteration and tok/s against the measured forward."""
        from workbench.sim import load_profile

        cost = load_profile(self.profile).cost_for()
        pts = self.fit.points.set_index("point")
        rows = []
        for context in sorted(self.fit.points.query("family == 'decode' and tokens == 1")["context"]):
            measured = float(pts.loc[f"decode:T1:q1:C{context}", "measured_ms"])
            predicted = cost.decode_ms(1, context)
            rows.append(
                {
                    "context": context,
                    "measured_forward_ms": measured,
                    "measured_tok_s": 1e3 / measured,
                    "predicted_iteration_ms": predicted,
                    "predicted_tok_s": 1e3 / predicted,
                    "error": predicted / measured - 1,
                }
            )
        return pd.DataFrame(rows)

    def group_table(self, points: Sequence[str] = GROUP_POINTS) -> pd.DataFrame:
        """Long table for the kernel-group chart: measured alone vs the model's group (ms)."""
        pts = self.fit.points.set_index("point")
        rows = []
        for point in (p for p in points if p in pts.index):
            r = pts.loc[point]
            for group in ("dense", "experts", "attention", "lm_head", "fixed"):
                measured = r.get(f"{group}_ms") if group != "fixed" else None
                model = r.get(f"model_{group}_ms")
                if model is not None and model == model:
                    rows.append({"point": point, "group": group, "source": "MODEL FIT", "ms": float(model)})
                if measured is not None and measured == measured:
                    rows.append({"point": point, "group": group, "source": "MEASURED", "ms": float(measured)})
        return pd.DataFrame(rows)

    def model_curve(self, max_tokens: int = 4096) -> pd.DataFrame:
        """The fitted model's decode step on a fine grid of tokens, per measured context."""
        cost = cost_model(self.fit.table, self.fit.efficiency, gpu=self.fit.gpu)
        dec = self.fit.points[self.fit.points["family"] == "decode"]
        rows = []
        for context, d in dec.groupby("context"):
            top = int(d["tokens"].max())
            grid = sorted({int(round(2 ** (i / 8))) for i in range(0, 8 * 13)} | {top})
            for t in (t for t in grid if t <= min(top, max_tokens)):
                g = cost.forward_groups(t, t, t * int(context), t)
                rows.append(
                    {
                        "tokens": t,
                        "context": int(context),
                        "model_ms": sum(v for k, v in g.items() if k != "communication"),
                    }
                )
        return pd.DataFrame(rows)

    def verdict(self) -> str:
        """The report's answer, as markdown, written from the fit (and the what-if when asked for).

        Says, in order: the provenance (the table's MEASURED line, the model, how many points
        were fitted and held out); the fit's median absolute error on fitted and on held-out
        points (percent, two significant figures); the held-out group it misses most; the
        measured and model knees at the smallest context; each what-if variant's predicted
        speedup at batch 1 and the batches that bracket its crossover (SIMULATED, step level);
        the caveats (attention kernels, one table).
        """
        pts = self.fit.points.dropna(subset=["residual"])
        fitted, held = pts[pts["fitted"].astype(bool)], pts[~pts["fitted"].astype(bool)]
        lines = [
            f"**Verdict** — {literal(self.fit.table.provenance())}; fitted by the workbench roofline "
            f"(data/gpus/{literal(self.fit.gpu)}.toml): {len(fitted)} points fitted, {len(held)} held out.",
            "",
        ]

        def pct(values: pd.Series) -> str:
            return f"{float(round_sig(values.abs().median() * 100, 2)):g}%"

        lines.append(
            f"- **Fit**: median |error| {pct(fitted['residual'])} on the fitted points, "
            f"{pct(held['residual'])} on the held-out points (the honest figure)."
        )
        summary = self.summary()
        out = summary[summary["set"] == "held out"]
        if len(out):
            worst = out.loc[out["median_abs_error_pct"].idxmax()]
            side = "under" if worst["mean_error_pct"] < 0 else "over"
            lines.append(
                f"- **Largest miss**: held-out {literal(worst['family'])} at context {int(worst['context'])}: median "
                f"|error| {round_sig(float(worst['median_abs_error_pct']), 2):g}% over {int(worst['points'])} "
                f"points, the model {side}-predicting."
            )
        knees = self.knees().dropna(subset=["measured_knee_tokens"])
        if len(knees):
            k = knees.iloc[0]
            lines.append(
                f"- **Knee** (a decode step 10% slower than at one token) at context {int(k['context'])}: "
                f"measured near {round_sig(float(k['measured_knee_tokens']), 2):g} tokens, the model "
                f"{round_sig(float(k['model_knee_tokens']), 2):g}."
            )
        if self.whatif is not None and len(self.whatif):
            for variant, group in self.whatif.groupby("variant", sort=False):
                group = group.sort_values("batch")
                at1 = group.iloc[0]
                behind = group[group["speedup"] < 1.0]
                where = (
                    "ahead at every batch up to " + str(int(group["batch"].max()))
                    if behind.empty
                    else (
                        f"stops paying between batch {int(group[group['batch'] < behind['batch'].iloc[0]]['batch'].max())}"
                        f" and {int(behind['batch'].iloc[0])}"
                    )
                )
                lines.append(
                    f"- **What-if (SIMULATED, step level)**: {literal(variant)} {at1['speedup']:.2f}x plain decode at "
                    f"batch {int(at1['batch'])}, {where} (accept length {at1['accept_length']:.2f}, the "
                    "profile's, from published figures)."
                )
        lines.append(
            "- **Caveats**: attention here is PyTorch SDPA, not SGLang's FlashInfer or FA3, so the long-context "
            "decode misses say more about SDPA than about SGLang; one timing table (one GPU, one session), "
            "so no run-to-run interval."
        )
        return "\n".join(lines)

    def charts(self) -> dict[str, alt.TopLevelMixin]:
        """The notebook's charts by stem: ``fit``, ``residuals``, ``kernel_groups``, and ``whatif`` with a what-if."""
        sub = self.measured_subtitle
        out: dict[str, alt.TopLevelMixin] = {
            "fit": charts.calibration_fit_chart(self.fit.points, self.knees(), subtitle=sub, model=self.model_curve()),
            "residuals": charts.residual_chart(self.fit.points, subtitle=sub),
            "kernel_groups": charts.kernel_group_chart(self.group_table(), subtitle=sub),
        }
        if self.whatif is not None:
            out["whatif"] = charts.whatif_chart(
                self.whatif,
                subtitle=[
                    f"SIMULATED: profile {self.profile} (fitted to the MEASURED table above), step level: no prefill, "
                    "no queueing",
                    "acceptance: the profile's, from published accept lengths",
                ],
            )
        return out

    def save_charts(self, out_dir: str | Path) -> pd.DataFrame:
        """Write every chart as PNG and SVG into ``out_dir`` (relative: to the project root), each named after the
        table (``<table>-<stem>``); one row per chart."""
        return charts.save_charts(self.charts(), resolve(out_dir), prefix=f"{self.fit.table.name}-")


def load_calibration(table: str | Path, *, gpu: str = "h200", profile: str) -> CalibrationStudy:
    """Read a stored timing table (``data/calibration/.../NAME.json``) and fit it.

    Args:
        table: the table's path (relative: to the project root).
        gpu: the data sheet it is fitted against.
        profile: the simulator profile written from this fit (for the what-if and batch-1 prediction).
    """
    return CalibrationStudy(fit_table(load_table(resolve(table)), gpu=gpu), profile)
