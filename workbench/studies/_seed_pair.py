"""The seed investigation's own pair beside the like-for-like one: its four figures and what the cap accounts for.

The seed measured SGLang 0.5.9's uncapped ``baseline`` against ``eagle3-topk4`` (773 versus 354 tok/s at
saturation; 93 versus 96 tok/s per request at concurrency 1: ``data/profiles/seed-pcie-8gpu.toml``,
``[calibration]``). SGLang caps an EAGLE server at 48 running requests, so part of that gap is the cap,
not speculation. With ``baseline-cap48`` measured too, the gap at a level splits exactly into two
factors: ``baseline / eagle3-topk4 = (baseline / baseline-cap48) x (baseline-cap48 / eagle3-topk4)``,
the first the cap's, the second speculation's (of servers that admit the same 48 requests).
Functions of a study's tables (:class:`workbench.studies._tables.StudyTables`) whose ``seed_pair`` is set; pure.
"""

from __future__ import annotations

import dataclasses
import math

import pandas as pd

from workbench.analysis import interval_text, round_sig
from workbench.markup import code, literal
from workbench.studies._tables import StudyTables

__all__ = ["SEED_PROFILE", "CapSplit", "cap_split", "seed_figures"]

#: The profile whose ``[calibration]`` holds the seed investigation's four figures.
SEED_PROFILE = "seed-pcie-8gpu"


@dataclasses.dataclass(frozen=True)
class CapSplit:
    """The seed pair's gap at one level, split into the cap's factor and speculation's.

    Attributes:
        concurrency: the level (the highest the three variants share).
        gap: seed baseline / seed speculative variant, output tok/s (means over repeats).
        cap: seed baseline / the like-for-like baseline (what lifting the 48-request cap gives).
        speculation: like-for-like baseline / seed speculative variant.
        cap_share: the cap's part of the gap in log terms (``log cap / log gap``), 0..1 when both
            factors are at least 1.
        flagged: the measurements the split rests on whose timings are flagged, one phrase each
            (``"baseline, repeat 2: fell 0.06 wall s behind the simulator's schedule"``): the simulator's CPU
            fell behind its clock there (``sim_behind_schedule_wall_s`` > 0) or past the stated bounds
            (``sim_schedule_problem``). Empty when none is.
        measurements: how many level measurements (variant x repeat) the split rests on.
    """

    concurrency: int
    gap: float
    cap: float
    speculation: float
    cap_share: float
    flagged: tuple[str, ...] = ()
    measurements: int = 0

    def sentence(self, seed_baseline: str, seed_spec: str, baseline: str, *, detail: bool = False) -> str:
        """``"At concurrency 64 the seed's `baseline` gives 2.03x `eagle3-topk4`'s output tok/s: 1.05x of
        it is the 48-request cap (against `baseline-cap48`), 1.93x speculation."``, and, where a measurement it
        rests on is timing-flagged (:attr:`flagged`), how many (``detail``: which, and why: the verdict's line)."""
        digits = 2  # the factors as shown multiply to the gap as shown (1.00x and 1.91x beside 1.90x did not)
        if round(round(self.cap, 2) * round(self.speculation, 2), 2) != round(self.gap, 2):
            digits = 3
        said = (
            f"At concurrency {self.concurrency} the seed's {code(seed_baseline)} gives {self.gap:.2f}x "
            f"{code(seed_spec)}'s output tok/s: {self.cap:.{digits}f}x of it is the 48-request cap (against "
            f"{code(baseline)}), {self.speculation:.{digits}f}x speculation"
        )
        if not self.flagged:
            return said + "."
        n, verb = len(self.flagged), "is" if len(self.flagged) == 1 else "are"
        if not detail:
            return f"{said}; {n} of its {self.measurements} measurements {verb} timing-flagged (see the verdict)."
        return (
            f"{said}; {n} of the {self.measurements} measurements it rests on {verb} timing-flagged, so take the split "
            f"as approximate: {'; '.join(literal(f) for f in self.flagged)}."
        )


def _means(study: StudyTables) -> pd.DataFrame:
    return study.means().set_index(["variant", "concurrency"])


def cap_split(study: StudyTables) -> CapSplit | None:
    """The seed pair's gap at the highest level all three share, split; None without a seed pair."""
    if not study.seed_pair or study.load != "concurrency":  # the seed measured closed-loop levels
        return None
    seed_base, seed_spec = study.seed_pair
    names = {seed_base, seed_spec, study.baseline}
    if len(names) < 3 or not names <= set(study.variants):
        return None
    lv = study.levels
    shared = set.intersection(*(set(lv.loc[lv["variant"] == v, "concurrency"]) for v in names))
    if not shared:
        return None
    c = int(max(shared))
    means = _means(study)["output_throughput_tok_s"]
    gap = means[(seed_base, c)] / means[(seed_spec, c)]
    cap = means[(seed_base, c)] / means[(study.baseline, c)]
    spec = means[(study.baseline, c)] / means[(seed_spec, c)]
    share = math.log(cap) / math.log(gap) if gap > 0 and abs(math.log(gap)) > 1e-12 else float("nan")
    at = lv[(lv["concurrency"] == c) & lv["variant"].isin(names)]
    flagged = tuple(
        f"{row['variant']}"
        + (f", repeat {int(row['repeat']) + 1}" if "repeat" in at and at["repeat"].nunique() > 1 else "")
        + f": {why}"
        for _, row in at.iterrows()
        if (why := _timing_flag(row))
    )
    return CapSplit(c, float(gap), float(cap), float(spec), float(share), flagged, len(at))


def _timing_flag(level: pd.Series) -> str:
    """Why a level measurement's timings are not the model's alone (``""``: they are): past the simulator's stated
    bounds (``sim_schedule_problem``), or behind its schedule (``sim_behind_schedule_wall_s`` > 0)."""
    problem = level.get("sim_schedule_problem")
    if isinstance(problem, str) and problem:
        return f"timings not the model's: {problem}"
    behind = level.get("sim_behind_schedule_wall_s")
    if behind is not None and not pd.isna(behind) and float(behind) > 0:
        return f"fell {float(behind):.2f} wall s behind the simulator's schedule"
    return ""


def seed_figures(study: StudyTables) -> pd.DataFrame:
    """The seed's four figures against this study's: one row each.

    Columns: ``figure``, ``variant``, ``seed`` (the seed investigation's value, tok/s), ``measured``
    (mean over repeats with its 95% interval, as text), ``error_pct`` (measured mean / seed - 1, in
    per cent, two significant figures), ``within`` (``|error| <=`` the profile's ``tolerance``,
    10%), and ``same_sign`` (whether the seed pair's order on that metric is the seed's). Empty
    without a seed pair. Saturation is the highest mean output tok/s over the measured levels.

    Source: ``data/profiles/seed-pcie-8gpu.toml`` ``[calibration]`` (the seed investigation, SGLang 0.5.9,
    8 GPUs over PCIe, TP 8).
    """
    from workbench.sim import load_profile

    columns = ["figure", "variant", "seed", "measured", "error_pct", "within", "same_sign"]
    if not study.seed_pair or not set(study.seed_pair) <= set(study.variants):
        return pd.DataFrame(columns=columns)
    calibration = load_profile(SEED_PROFILE).calibration
    tolerance = float(calibration.get("tolerance", 0.10))
    roles = dict(zip(("baseline", "eagle3-topk4"), study.seed_pair))
    means = study.means()
    rows: list[dict[str, object]] = []
    metrics: list[str] = []
    values: dict[str, dict[str, tuple[float, float]]] = {}  # metric -> seed role -> (seed value, measured mean)
    for point in calibration.get("points", []):
        variant = roles.get(point["variant"], point["variant"])
        mine = means[means["variant"] == variant]
        if point["metric"] == "per_request_tok_s":
            row = mine[mine["concurrency"] == int(point["concurrency"])]
            col, what = "mean_per_request_tok_s", f"per-request tok/s at concurrency {int(point['concurrency'])}"
        else:
            row = mine.loc[[mine["output_throughput_tok_s"].idxmax()]] if len(mine) else mine
            col, what = "output_throughput_tok_s", "saturation output tok/s (highest level mean)"
        if not len(row):
            continue
        r = row.iloc[0]
        error = r[col] / float(point["value"]) - 1.0
        values.setdefault(point["metric"], {})[point["variant"]] = (float(point["value"]), float(r[col]))
        metrics.append(point["metric"])
        rows.append(
            {
                "figure": what,
                "variant": variant,
                "seed": float(point["value"]),
                "measured": interval_text(r[col], r.get(f"{col}_lo"), r.get(f"{col}_hi")),
                "error_pct": float(round_sig(error * 100, 2)),
                "within": bool(abs(error) <= tolerance),
            }
        )

    def same_sign(metric: str) -> bool | None:
        pair = values.get(metric, {})
        if len(pair) < 2:
            return None
        (seed_a, got_a), (seed_b, got_b) = pair["baseline"], pair["eagle3-topk4"]
        return (seed_a > seed_b) == (got_a > got_b)

    out = pd.DataFrame(rows, columns=columns[:-1])
    out["same_sign"] = [same_sign(m) for m in metrics]
    return out
