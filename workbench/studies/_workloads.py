"""Workloads side by side: runs compared workload by workload, each variant against the baseline on each.

A spec-versus-baseline :class:`~workbench.studies.Study` shows one workload on one load axis. Many
result files hold several workloads (sglang.bench_serving's default offline mode: every request at
once, several input/output lengths and datasets in one file; InferenceX's configurations; one AIPerf
export per setting), and an offline level has no load axis at all. :class:`WorkloadStudy` is the view
for those: one row per (workload, variant, load), the figures as the runs recorded them, and each
variant's ratio to the baseline measured on the same workload at the same load.

Two arms measured on different workloads or endpoints are never compared by default (the opening
names them and the option that would); with ``unlike_arms=True`` each is set against the baseline's
workload under a NOT LIKE-FOR-LIKE caveat that names every difference
(:mod:`workbench.studies._workload_words`). A study never writes or launches a run.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd

from workbench.errors import ConfigError
from workbench.studies._workload_words import ALL_AT_ONCE, Pairing, differences, opening

if TYPE_CHECKING:
    import altair as alt

__all__ = ["FIGURES", "RATIOS", "WorkloadStudy", "level_label", "load_workloads"]

#: The figures compared (our level columns), shown where any row recorded them.
FIGURES = (
    "output_throughput_tok_s",
    "request_throughput_req_s",
    "mean_ttft_ms",
    "p50_ttft_ms",
    "p99_ttft_ms",
    "mean_tpot_ms",
    "p50_tpot_ms",
    "p99_tpot_ms",
    "mean_itl_ms",
    "mean_e2e_ms",
    "p50_e2e_ms",
    "p99_e2e_ms",
    "accept_length",
)
#: Figure -> the column of its ratio to the baseline (variant / baseline, same workload and load).
RATIOS = {"output_throughput_tok_s": "throughput_ratio", "mean_ttft_ms": "ttft_ratio", "mean_tpot_ms": "tpot_ratio"}


def level_label(row: Any) -> str:
    """The load of one level row as words: ``"all at once"`` (open loop, infinite rate, no cap),
    ``"concurrency 4"`` (closed loop), ``"2 req/s"`` (open loop at a rate) or ``"load not recorded"``."""
    rate = pd.to_numeric(pd.Series([row.get("request_rate_req_s")]), errors="coerce").iloc[0]
    conc = pd.to_numeric(pd.Series([row.get("concurrency")]), errors="coerce").iloc[0]
    closed = row.get("mode") == "closed" or (not pd.isna(conc) and (pd.isna(rate) or rate == math.inf))
    if closed and not pd.isna(conc):
        return f"concurrency {conc:g}"
    if rate == math.inf:
        return ALL_AT_ONCE if pd.isna(conc) else f"all at once, at most {conc:g} in flight"
    if not pd.isna(rate):
        return f"{rate:g} req/s" + ("" if pd.isna(conc) else f", at most {conc:g} in flight")
    return "load not recorded"


def _level_key(label: str) -> tuple[int, float]:
    """Sort key of :func:`level_label`'s words: numeric order within each kind of load."""
    number = pd.to_numeric(
        pd.Series([label.split(" ")[-1] if label.startswith("concurrency") else label.split(" ")[0]]), errors="coerce"
    ).iloc[0]
    kind = 0 if label.startswith("concurrency") else 1 if "req/s" in label else 2
    return kind, (0.0 if pd.isna(number) else float(number))


@dataclasses.dataclass
class WorkloadStudy:
    """Runs compared workload by workload: the figures side by side, each variant against the baseline.

    Attributes:
        levels: level rows (:func:`workbench.store.load_runs`' ``levels``: ``variant``, ``workload``, the
            load columns, the figures; quarantined rows are never among them).
        manifests: the runs' manifests, in run order.
        baseline: the variant the others are compared with (default in :func:`load_workloads`: the first run's).
        unlike_arms: compare a variant that shares no workload with the baseline against the baseline's
            workload anyway, under a NOT LIKE-FOR-LIKE caveat (False: such a variant is shown alone and named
            as not compared).

    Raises:
        ConfigError: no level rows, a baseline with no rows, or ``unlike_arms`` for a pair that measured
            several workloads each (which of them to pair is not known).
    """

    levels: pd.DataFrame
    manifests: list[dict[str, Any]]
    baseline: str
    unlike_arms: bool = False
    #: Variant -> its pairings with the baseline's workloads (empty: nothing to compare it with).
    pairings: dict[str, list[Pairing]] = dataclasses.field(default_factory=dict, init=False)

    def __post_init__(self) -> None:
        if not len(self.levels):
            raise ConfigError(
                "the runs hold no level rows to compare (each was empty, or every row was "
                "quarantined: `workbench runs show RUN` lists them)"
            )
        levels = self.levels if "workload" in self.levels else self.levels.assign(workload="default")
        self.levels = levels.assign(level=[level_label(row) for _, row in levels.iterrows()])
        if self.baseline not in self.variants:
            raise ConfigError(
                f"baseline {self.baseline!r} has no rows in these runs; they hold {self.variants}. "
                "Pass one of them as baseline (-p baseline NAME)"
            )
        base = self.workloads_of(self.baseline)
        for variant in self.variants:
            if variant == self.baseline:
                continue
            mine = self.workloads_of(variant)
            shared = [w for w in mine if w in base]
            if shared:
                self.pairings[variant] = [Pairing(variant, w, w) for w in shared]
            elif self.unlike_arms:
                if len(mine) != 1 or len(base) != 1:
                    raise ConfigError(
                        f"unlike_arms pairs one workload with one, but {variant!r} measured {len(mine)} workload(s) "
                        f"({'; '.join(mine)}) and the baseline {self.baseline!r} {len(base)} ({'; '.join(base)}), "
                        "none of them shared; report runs that each measured one workload"
                    )
                self.pairings[variant] = [Pairing(variant, mine[0], base[0])]
            else:
                self.pairings[variant] = []

    # -- what the runs hold --------------------------------------------------------------------
    @property
    def variants(self) -> list[str]:
        """Variant names in run order."""
        return list(dict.fromkeys(self.levels["variant"].astype(str)))

    @property
    def workloads(self) -> list[str]:
        """Workload labels, the baseline's first, each once."""
        base = self.workloads_of(self.baseline) if "level" in self.levels else []
        return list(dict.fromkeys([*base, *self.levels["workload"].astype(str)]))

    def workloads_of(self, variant: str) -> list[str]:
        """The workloads ``variant`` measured, in the order its rows give them."""
        rows = self.levels[self.levels["variant"].astype(str) == variant]
        return list(dict.fromkeys(rows["workload"].astype(str)))

    @property
    def unlike_pairings(self) -> list[Pairing]:
        """The pairings of two different workloads (made only with ``unlike_arms``)."""
        return [p for ps in self.pairings.values() for p in ps if not p.like_for_like]

    @property
    def not_compared(self) -> list[str]:
        """Variants that share no workload with the baseline and were not paired (``unlike_arms`` off)."""
        return [v for v, ps in self.pairings.items() if not ps]

    @property
    def simulated(self) -> bool:
        """True when any figure comes from the simulated engine."""
        return bool(self.levels.get("simulated", pd.Series([False])).fillna(False).astype(bool).any())

    def manifest_of(self, variant: str) -> dict[str, Any]:
        """The first manifest of ``variant``'s runs (empty when none names it)."""
        return next((m for m in self.manifests if m.get("variant") == variant), {})

    # -- the table -----------------------------------------------------------------------------
    def table(self) -> pd.DataFrame:
        """One row per (workload, variant, load): the figures as recorded, and each variant's ratios.

        Returns:
            Columns ``workload``, ``variant``, ``load`` (:func:`level_label`), ``n`` (level rows averaged:
            repeats), ``completed`` (summed; NaN where not recorded), each of :data:`FIGURES` any row recorded
            (means over repeats), ``compared_with`` (the baseline's workload the ratios use: the row's own, or
            another one under ``unlike_arms``; empty for the baseline and for rows with nothing to compare
            with) and :data:`RATIOS` (variant / baseline at the same load; NaN without such a baseline row).
            Rows in workload order (the baseline's first), the baseline first within each, loads in numeric order.
        """
        figures = [
            f for f in FIGURES if f in self.levels and pd.to_numeric(self.levels[f], errors="coerce").notna().any()
        ]
        rows = self.levels.assign(
            **{
                c: pd.to_numeric(self.levels[c], errors="coerce") if c in self.levels else math.nan
                for c in (*figures, "completed")
            }
        )
        table = (
            rows.groupby(["workload", "variant", "level"], sort=False)
            .agg(
                n=("variant", "size"),
                completed=("completed", lambda s: s.sum(min_count=1)),
                **{f: (f, "mean") for f in figures},
            )
            .reset_index()
        )
        table = table.rename(columns={"level": "load"})
        base = table[table["variant"] == self.baseline].set_index(["workload", "load"])
        paired = {(p.variant, p.workload): p.baseline_workload for ps in self.pairings.values() for p in ps}
        table["compared_with"] = [paired.get((v, w), "") for v, w in zip(table["variant"], table["workload"])]
        for figure, ratio in RATIOS.items():
            if figure not in figures:
                continue
            reference = [
                base[figure].get((cw, load), math.nan) if cw else math.nan
                for cw, load in zip(table["compared_with"], table["load"])
            ]
            table[ratio] = table[figure] / pd.Series(reference, index=table.index, dtype=float)
        order_w = {w: i for i, w in enumerate(self.workloads)}
        order_v = {v: i for i, v in enumerate([self.baseline, *(v for v in self.variants if v != self.baseline)])}
        table = table.assign(
            _w=table["workload"].map(order_w), _v=table["variant"].map(order_v), _l=table["load"].map(_level_key)
        )
        return table.sort_values(["_w", "_v", "_l"]).drop(columns=["_w", "_v", "_l"]).reset_index(drop=True)

    def ratios(self) -> pd.DataFrame:
        """The rows of :meth:`table` that have a ratio to the baseline (one per compared variant, workload
        and load)."""
        table = self.table()
        if "throughput_ratio" not in table:
            return table.iloc[0:0]
        return table[table["throughput_ratio"].notna()].reset_index(drop=True)

    # -- words (workbench.studies._workload_words) ------------------------------------------------
    def opening(self) -> str:
        """:func:`workbench.studies._workload_words.opening`: the caveat (when two unlike arms are
        compared), the In short paragraph, and the variants not compared with the option that would."""
        return opening(self)

    def differences(self, pairing: Pairing) -> list[tuple[str, str]]:
        """:func:`workbench.studies._workload_words.differences`: (kind, what differs) of a pairing's two arms."""
        return differences(self, pairing)

    def provenance_line(self) -> str:
        """Where the figures come from, as one line (SIMULATED first when any is), for every chart."""
        from workbench import charts

        tools = sorted({str(t) for t in self.levels.get("tool", pd.Series(dtype=object)).dropna()})
        source = charts.provenance_subtitle(self.levels)
        return source + (f"; imported from {', '.join(tools)}" if tools else "")

    def sources_text(self) -> str:
        """The runs behind the report as markdown: each run's id, variant, the tool that measured it and its
        source file's name (never the machine's path), and the workloads it holds."""
        from workbench.markup import code

        lines = []
        for m in self.manifests:
            variant = str(m.get("variant"))
            sources = m.get("source_files") or ([m["source_file"]] if m.get("source_file") else [])
            files = ", ".join(code(Path(str(f)).name) for f in sources)
            if m.get("kind") == "import":
                made = f"imported from {code(m.get('tool') or 'another tool')}" + (f" ({files})" if files else "")
            else:
                made = "measured by the workbench"
            lines.append(
                f"- {code(m.get('run_id'))}: variant {code(variant)}, {made}; workloads "
                + ", ".join(code(w) for w in self.workloads_of(variant))
            )
        return "**Runs behind this report** (`workbench runs show RUN`):\n\n" + "\n".join(lines)

    def save_charts(self, out_dir: str | Path) -> pd.DataFrame:
        """Write every chart of :meth:`charts` as PNG and SVG into ``out_dir`` (relative: to the project root); one
        row per chart, as every study answers (:class:`workbench.studies._shape.StudyShape`)."""
        from workbench import charts, paths

        return charts.save_charts(self.charts(), paths.resolve(out_dir))

    # -- charts --------------------------------------------------------------------------------
    def charts(self) -> dict[str, alt.TopLevelMixin]:
        """``throughput`` (output tok/s per workload, a bar per variant, a panel per load), ``latency`` (mean
        TTFT and TPOT likewise) and, where any variant was compared, ``ratio`` (its output throughput over the
        baseline's, a rule at 1). Workloads are named without the ``key=value`` parts every one shares (the
        subtitle says which); the legend lists only the variants drawn."""
        import altair as alt

        from workbench import charts

        table = self.table()
        short = _short_workloads(self.workloads)
        table = table.assign(workload_shown=table["workload"].map(short))
        colours = charts.variant_colours(self.variants, self.baseline)
        loads = list(dict.fromkeys(table["load"]))  # the table's numeric order, never the text's
        facet = len(loads) > 1
        by_load = alt.Row("load:N", title=None, sort=loads, header=alt.Header(labelAngle=0, labelAlign="left"))
        shared = _shared_parts(self.workloads)
        subtitle = [
            self.provenance_line(),
            f"workload: {self.workloads[0]}"
            if len(self.workloads) == 1
            else "every workload" + (f" has {shared}" if shared else "") + "; one bar per variant",
        ]

        def bars(
            frame: pd.DataFrame,
            field: str,
            axis_title: str,
            *,
            label: str = "workload_shown",
            columns: str | None = None,
        ) -> alt.TopLevelMixin:
            drawn = [v for v in self.variants if v in set(frame["variant"])]
            encoded = (
                alt.Chart()
                .mark_bar()
                .encode(
                    y=alt.Y(
                        f"{label}:N", title=None, sort=list(dict.fromkeys(frame[label])), axis=alt.Axis(labelLimit=360)
                    ),
                    yOffset=alt.YOffset("variant:N", sort=drawn),
                    x=alt.X(f"{field}:Q", title=axis_title),
                    color=alt.Color(
                        "variant:N",
                        title="variant",
                        sort=drawn,
                        scale=alt.Scale(domain=drawn, range=[colours[v] for v in drawn]),
                    ),
                    tooltip=["workload", "variant", "load", alt.Tooltip(f"{field}:Q", format=",.4g")],
                )
                .properties(width=320, height=alt.Step(16))
            )
            layers = [encoded]
            if field == "throughput_ratio":
                layers.append(alt.Chart().mark_rule(strokeDash=[4, 3], color="black").encode(x=alt.datum(1.0)))
            chart = alt.layer(*layers, data=frame)
            if columns is not None and facet:
                return chart.facet(row=by_load, column=alt.Column(f"{columns}:N", title=None))
            if columns is not None:
                return chart.facet(column=alt.Column(f"{columns}:N", title=None))
            return chart.facet(row=by_load) if facet else chart

        def titled(chart: alt.TopLevelMixin, text: str) -> alt.TopLevelMixin:
            return chart.properties(title=alt.TitleParams(text, subtitle=subtitle, anchor="start"))

        out: dict[str, alt.TopLevelMixin] = {}
        if "output_throughput_tok_s" in table:
            out["throughput"] = titled(
                bars(table, "output_throughput_tok_s", "output throughput (tok/s)"),
                "Output throughput, workload by workload (higher is better)",
            )
        latency = [c for c in ("mean_ttft_ms", "mean_tpot_ms") if c in table]
        if latency:
            long = table.melt(
                id_vars=["workload", "workload_shown", "variant", "load"],
                value_vars=latency,
                var_name="figure",
                value_name="ms",
            ).dropna(subset=["ms"])
            long["figure"] = long["figure"].map({"mean_ttft_ms": "mean TTFT (ms)", "mean_tpot_ms": "mean TPOT (ms)"})
            out["latency"] = titled(
                bars(long, "ms", "ms", columns="figure").resolve_scale(x="independent"),
                "Mean TTFT and TPOT, workload by workload (lower is better)",
            )
        if "throughput_ratio" in table and table["throughput_ratio"].notna().any():
            compared = table[table["throughput_ratio"].notna()]
            compared = compared.assign(
                pair=[
                    short.get(w, w) + ("" if cw == w else f" vs {self.baseline} on {short.get(cw, cw)}")
                    for w, cw in zip(compared["workload"], compared["compared_with"])
                ]
            )
            out["ratio"] = titled(
                bars(compared, "throughput_ratio", f"output throughput / {self.baseline}'s", label="pair"),
                f"Each variant over {self.baseline} on the same workload and load (above 1: more throughput)",
            )
        return out


def _short_workloads(workloads: Sequence[str]) -> dict[str, str]:
    """Each workload label without the ``key=value`` parts every label shares (the whole label when
    that leaves nothing, or when there is one workload)."""
    parts = [w.split() for w in workloads]
    shared = set.intersection(*(set(p) for p in parts)) if len(parts) > 1 else set()
    return {w: (" ".join(x for x in p if x not in shared) or w) for w, p in zip(workloads, parts)}


def _shared_parts(workloads: Sequence[str]) -> str:
    """The ``key=value`` parts every workload label has (``""`` for one workload or none shared)."""
    if len(workloads) < 2:
        return ""
    first = workloads[0].split()
    common = set.intersection(*(set(w.split()) for w in workloads))
    return " ".join(p for p in first if p in common)


def load_workloads(
    runs: str | Path | Sequence[str | Path],
    *,
    baseline: str | None = None,
    unlike_arms: bool = False,
    runs_dir: str | Path | None = None,
) -> WorkloadStudy:
    """Read stored runs into a :class:`WorkloadStudy`.

    Args:
        runs: run ids, unique prefixes or run directories (:func:`workbench.store.stored_runs`).
        baseline: the variant the others are compared with; None: the first run's variant.
        unlike_arms: compare arms measured on different workloads or endpoints, under a caveat naming each
            difference (False: they are shown side by side, not compared).
        runs_dir: the runs folder for ids (None: ``$WORKBENCH_RUNS_DIR`` or ``data/runs``).

    Raises:
        ConfigError: an unknown or unreadable run, or as :class:`WorkloadStudy`.
    """
    from workbench.store import load_run, load_runs, stored_runs

    if not runs:
        raise ConfigError(
            "the workloads report compares stored runs and none was given: name them with "
            "`workbench report notebooks/workloads.ipynb --from-runs RUN...` (`workbench runs list` shows "
            "them; `workbench import FILE` stores another tool's result file as runs)"
        )
    paths = stored_runs(runs, runs_dir=runs_dir)
    _, levels = load_runs(paths)
    manifests = [load_run(p).manifest for p in paths]
    first = next((str(m["variant"]) for m in manifests if m.get("variant")), None)
    chosen = baseline or first or (str(levels["variant"].iloc[0]) if len(levels) else "")
    return WorkloadStudy(levels=levels, manifests=manifests, baseline=chosen, unlike_arms=unlike_arms)
