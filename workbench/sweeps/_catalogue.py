"""The run catalogue for notebooks and the ``workbench runs`` command: list, show, label, compare, delete, export.

The store does the bookkeeping (:func:`workbench.store.catalogue`, labels, deletion,
export tables); this module (in `workbench.sweeps`) adds what needs the analysis package: each run's levels
as means over repeats with n and a 95% Student t interval
(:func:`workbench.analysis.repeat_table`), side by side for :func:`compare_runs`.
Runs measured here, on other hosts, under other SGLang versions, and imported from other
tools (docs/RUNS.md) are all rows of the same catalogue.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from workbench.errors import ConfigError, HostError
from workbench.store import catalogue, delete_run as _delete, export_tables, find_run, label_run as _label
from workbench.store import load_run, run_kind, run_labels, run_origin

__all__ = [
    "COMPARE_METRICS",
    "RunOverview",
    "compare_lines",
    "compare_runs",
    "delete_run",
    "export_runs",
    "label_run",
    "list_runs",
    "run_levels",
    "show_run",
]

#: Metrics :func:`compare_runs` shows by default (level columns, units in the names).
COMPARE_METRICS = ("output_throughput_tok_s", "mean_per_request_tok_s")


def list_runs(runs_dir: str | Path | None = None) -> pd.DataFrame:
    """Every run in the runs folder, oldest first, with its state, kind (measured or import) and labels.

    Args:
        runs_dir: the runs folder (relative: to the project root); None: ``$WORKBENCH_RUNS_DIR``
            or ``data/runs``.

    Returns:
        :func:`workbench.store.catalogue`'s table: ``run_id``, ``state``, ``kind`` (simulated, measured or
        import), ``variant``, ``engine``, ``simulated``, ``host``, ``sglang_version``, ``tool``, ``started_at``,
        ``units_stored`` and ``units_planned`` ((level, repeat) units), ``num_requests``, ``time_scale``,
        ``workload``, ``requests_per_level``, ``label`` (the sweep's), ``labels`` (yours), ``problem``,
        ``path``. A broken run is a row with its state, never an error.
    """
    return catalogue(runs_dir)


def label_run(run: str | Path, *labels: str, remove: bool = False, runs_dir: str | Path | None = None) -> list[str]:
    """Add labels to a run (``remove=True``: take them away); returns its labels.

    Raises:
        ConfigError: no such run or no label given.
    """
    return _label(run, labels, remove=remove, root=runs_dir)


def delete_run(
    run: str | Path, *, runs_dir: str | Path | None = None, confirm: Callable[[str], bool] | None = None
) -> Path | None:
    """Delete a run directory (see :func:`workbench.store.delete_run`); refuses a run being written.

    ``confirm`` is asked with the run's description; None deletes without asking (a
    notebook call is its own confirmation; the command asks unless ``--yes``).

    Raises:
        ConfigError: no such run, or a sweep is writing it now.
    """
    return _delete(run, root=runs_dir, confirm=confirm)


def _level_key(levels: pd.DataFrame) -> pd.DataFrame:
    """``levels`` with ``mode`` (closed / open, :func:`workbench.analysis.load_modes`), ``level_value``
    (the concurrency of a closed loop, the request rate of an open one) and ``workload``
    (:func:`workbench.store.with_workload`)."""
    from workbench.analysis import load_modes
    from workbench.store import with_workload

    out = levels.copy()
    nan = pd.Series(math.nan, index=out.index)
    conc = pd.to_numeric(out["concurrency"], errors="coerce") if "concurrency" in out else nan
    rate = pd.to_numeric(out["request_rate_req_s"], errors="coerce") if "request_rate_req_s" in out else nan
    out["mode"] = load_modes(out)
    out["level_value"] = conc.where(out["mode"] == "closed", rate)
    return with_workload(out[out["level_value"].notna()])


def run_levels(
    run: str | Path, *, metrics: Sequence[str] = COMPARE_METRICS, runs_dir: str | Path | None = None
) -> pd.DataFrame:
    """One run's levels as means over its repeats, with n and 95% intervals.

    Returns:
        One row per level: ``run_id``, ``workload`` (levels of different workloads are never
        repeats of each other), ``mode`` (``closed``: ``level_value`` is the
        concurrency; ``open``: the request rate in req/s), ``level_value``, ``n`` and, per
        metric, ``<m>``, ``<m>_lo``, ``<m>_hi``, ``<m>_n`` (NaN interval for n < 2). Metrics
        the run did not record are NaN.

    Raises:
        ConfigError: no such run or it has no readable manifest. HostError: a file is corrupt.
    """
    from workbench.analysis import repeat_table

    stored = load_run(find_run(run, root=runs_dir))
    levels = _level_key(stored.levels)
    for m in metrics:
        if m not in levels:
            levels[m] = math.nan
    if not len(levels):
        return pd.DataFrame(
            columns=[
                "run_id",
                "workload",
                "mode",
                "level_value",
                "n",
                *[f"{m}{s}" for m in metrics for s in ("", "_lo", "_hi", "_n")],
            ]
        )
    levels["run_id"] = stored.run_id
    return repeat_table(levels, list(metrics), by=("run_id", "workload", "mode", "level_value"))


@dataclasses.dataclass(frozen=True)
class RunOverview:
    """One run as :func:`show_run` reads it.

    Attributes:
        facts: what it is and where it came from (id, state, kind, variant, engine, simulated,
            host, SGLang version, tool, times, plan's levels and repeats, labels, error).
        levels: :func:`run_levels` (empty when the run has none or cannot be read).
        problem: why the run could not be read (None when it could).
    """

    facts: dict[str, Any]
    levels: pd.DataFrame
    problem: str | None = None

    def lines(self) -> list[str]:
        """Text for a terminal: one ``key: value`` line per fact, then the levels table."""
        out = [f"{k}: {v}" for k, v in self.facts.items() if v not in (None, "", [])]
        if self.problem:
            out.append(f"problem: {self.problem}")
        if len(self.levels):
            out.append("")
            out += _table_lines(self.levels, [m for m in COMPARE_METRICS if m in self.levels])
        return out

    def _repr_html_(self) -> str:
        """In a notebook: the facts as a two-column table, then the levels table."""
        import html

        rows = "".join(
            f"<tr><th style='text-align:left'>{html.escape(str(k))}</th><td>{html.escape(str(v))}</td></tr>"
            for k, v in self.facts.items()
            if v not in (None, "", [])
        )
        problem = f"<p><b>problem:</b> {html.escape(self.problem)}</p>" if self.problem else ""
        levels = self.levels.to_html(index=False) if len(self.levels) else ""
        return f"<table>{rows}</table>{problem}{levels}"


def show_run(run: str | Path, *, runs_dir: str | Path | None = None) -> RunOverview:
    """What a run is (provenance, state, labels) and its levels with n and intervals.

    A run without a readable manifest is shown with its state and the reason, not an error.

    Raises:
        ConfigError: no such run.
    """
    path = find_run(run, root=runs_dir)
    listing = catalogue(runs_dir)
    row = listing[listing["path"] == str(path)]
    facts: dict[str, Any] = {"run_id": path.name, "path": str(path)}
    if len(row):
        facts.update({k: row.iloc[0][k] for k in ("run_id", "state", "kind", "problem") if k in row})
    try:
        stored = load_run(path)
    except (ConfigError, HostError) as exc:
        facts.setdefault("state", "unreadable")
        facts["labels"] = ", ".join(run_labels(path))
        return RunOverview(facts, pd.DataFrame(), str(exc))
    m, plan = stored.manifest, stored.plan or {}
    facts.update(
        {
            "kind": run_kind(m.get("kind"), m.get("simulated")),
            "variant": m.get("variant"),
            "engine": m.get("engine"),
            "simulated": m.get("simulated"),
            "host": m.get("host"),
            "client_location": m.get("client_location"),
            "sglang_version": m.get("sglang_version"),
            "tool": m.get("tool"),
            "tool_version": m.get("tool_version"),
            "source_file": m.get("source_file"),
            "started_at": m.get("started_at"),
            "finished_at": m.get("finished_at"),
            "concurrency_levels": plan.get("concurrency_levels"),
            "repeats": plan.get("repeats"),
            "units_stored": len(m.get("units_completed") or []),
            "num_requests": m.get("num_requests"),
            "label": m.get("label"),
            "labels": ", ".join(run_labels(path)),
            "error": m.get("error"),
        }
    )
    facts.setdefault("state", m.get("status"))
    return RunOverview(facts, run_levels(path), None)


def compare_runs(
    runs: Sequence[str | Path], *, metrics: Sequence[str] = COMPARE_METRICS, runs_dir: str | Path | None = None
) -> pd.DataFrame:
    """Two or more runs' level summaries, one row per (run, level), for side-by-side reading.

    Args:
        runs: run ids, unique prefixes or directories (two or more).
        metrics: level columns (default :data:`COMPARE_METRICS`).
        runs_dir: the runs folder.

    Returns:
        :func:`run_levels` of each run, concatenated, with ``variant``, ``engine``,
        ``simulated``, ``host``, ``sglang_version`` and ``origin`` (``"host H"``, or ``"imported
        from TOOL FILE"``: :func:`workbench.store.run_origin`) and ``software`` (:func:`run_software`)
        of each (the provenance of its figures).

    Raises:
        ConfigError: fewer than two runs, a run named twice, or one that cannot be read.
    """
    if len(runs) < 2:
        raise ConfigError("compare needs two or more runs, e.g. `workbench runs compare RUN_A RUN_B`")
    found = [find_run(r, root=runs_dir) for r in runs]
    if len(set(found)) < len(found):
        raise ConfigError(f"a run is named twice in {list(map(str, runs))}; name each run once")
    frames = []
    listing = catalogue(runs_dir).set_index("path")
    for path in found:
        m = load_run(path).manifest
        table = run_levels(path, metrics=metrics)
        for i, key in enumerate(("variant", "engine", "simulated", "host", "sglang_version")):
            table.insert(1 + i, key, m.get(key))
        table.insert(6, "origin", run_origin(m))
        table.insert(7, "software", run_software(m))
        listed = listing.loc[str(path)] if str(path) in listing.index else {}
        table.insert(8, "time_scale", m.get("time_scale"))
        table.insert(9, "requests_per_level", listed.get("requests_per_level") if len(listed) else None)
        frames.append(table)
    return pd.concat(frames, ignore_index=True)


def run_software(manifest: Mapping[str, Any]) -> str:
    """What produced a run's figures, for a person: ``"SGLang 0.5.9"``; for an import whose server
    version is unknown, its tool and version (``"vllm bench serve 0.11.0"``, ``"sglang.bench_serving
    version unknown"``); ``"SGLang version unknown"`` for a run that recorded none."""
    if manifest.get("sglang_version"):
        return f"SGLang {manifest['sglang_version']}"
    if manifest.get("kind") == "import":
        return f"{manifest.get('tool') or 'unknown tool'} {manifest.get('tool_version') or 'version unknown'}"
    return "SGLang version unknown"


def _cell(row: Any, m: str) -> str:
    mean, lo, hi, n = row[m], row[f"{m}_lo"], row[f"{m}_hi"], row[f"{m}_n"]
    if mean != mean:
        return "-"
    digits = 2 if "accept" in m else 1
    if lo != lo:
        return f"{mean:.{digits}f} (n={int(n)})"
    return f"{mean:.{digits}f} ({lo:.{digits}f}–{hi:.{digits}f}, n={int(n)})"  # the reports' notation, with n


def _level_label(mode: str, value: float) -> str:
    return f"c={int(value)}" if mode == "closed" else f"{value:g} req/s"


def _table_lines(table: pd.DataFrame, metrics: Sequence[str]) -> list[str]:
    several = "workload" in table and table["workload"].nunique() > 1  # then each row says which
    header = [*(["workload"] if several else []), "level", *[f"{m} (95% CI)" for m in metrics]]
    rows = [
        [
            *([str(r["workload"])] if several else []),
            _level_label(r["mode"], r["level_value"]),
            *[_cell(r, m) for m in metrics],
        ]
        for _, r in table.iterrows()
    ]
    lines = _aligned(header, rows)
    if not several and "workload" in table and len(table):
        lines.insert(0, f"workload: {table['workload'].iloc[0]}")
    return lines


def _aligned(header: list[str], rows: list[list[str]]) -> list[str]:
    widths = [max(len(x) for x in col) for col in zip(header, *rows)]
    fmt = "  ".join(f"{{:<{w}}}" if i == 0 else f"{{:>{w}}}" for i, w in enumerate(widths))
    return [fmt.format(*header), *(fmt.format(*row) for row in rows)]


def _differences(table: pd.DataFrame, ids: list[str]) -> list[str]:
    """What makes ``ids``' figures not like for like, one phrase each: time scale, workload, requests per level
    (``"time scale (#1 2x, #2 8x)"``); none when they agree."""
    found = []
    for title, column in (
        ("time scale", "time_scale"),
        ("workload", "workload"),
        ("requests per level", "requests_per_level"),
    ):
        if column not in table:
            continue
        per_run = []
        for run_id in ids:
            values = table.loc[table["run_id"] == run_id, column].dropna()
            shown = sorted(
                {f"{v:g}x" if column == "time_scale" and isinstance(v, (int, float)) else str(v) for v in values}
            )
            per_run.append(" + ".join(shown) or "unknown")
        if len(set(per_run)) > 1:
            found.append(f"{title} (" + ", ".join(f"#{i} {v}" for i, v in enumerate(per_run, start=1)) + ")")
    return found


def compare_lines(table: pd.DataFrame, metrics: Sequence[str] = COMPARE_METRICS, *, width: int = 100) -> list[str]:
    """:func:`compare_runs`'s table as text of at most ``width`` columns where the cells allow: a legend (#1,
    #2, ... with each run's provenance and time scale), a note naming what differs when the runs are not like
    for like (time scale, workload, requests per level), then per metric one line per level with each run's
    mean [95% CI] (n) side by side (as many runs side by side as fit, the rest in a further table)."""
    import textwrap

    ids = list(dict.fromkeys(table["run_id"]))
    out = []
    for i, run_id in enumerate(ids, start=1):
        r = table[table["run_id"] == run_id].iloc[0]
        scale = r.get("time_scale")
        where = (
            (f"SIMULATED at {scale:g}x" if isinstance(scale, (int, float)) and scale == scale else "SIMULATED")
            if r["simulated"]
            else "measured"
        )
        out += textwrap.wrap(
            f"#{i} {run_id}: {r['variant']} on {r['engine']} ({where}), {r['origin']}, {r['software']}",
            width,
            subsequent_indent="    ",
        )
    table = table if "workload" in table else table.assign(workload="default")
    differ = _differences(table, ids)
    if differ:
        out += textwrap.wrap(
            "note: not like for like, these runs differ in "
            + "; ".join(differ)
            + ": a difference in their figures may come from that, not from the variants",
            width,
        )
    keys = table[["workload", "mode", "level_value"]].drop_duplicates().sort_values(["workload", "mode", "level_value"])
    several = keys["workload"].nunique() > 1
    for m in metrics:
        rows = []
        for workload, mode, value in keys.itertuples(index=False):
            cells = []
            for run_id in ids:
                hit = table[
                    (table["run_id"] == run_id)
                    & (table["workload"] == workload)
                    & (table["mode"] == mode)
                    & (table["level_value"] == value)
                ]
                cells.append(_cell(hit.iloc[0], m) if len(hit) else "not measured")
            rows.append((([str(workload)] if several else []) + [_level_label(mode, value)], cells))
        lead = len(rows[0][0]) if rows else 1
        lead_w = [max(len(r[0][j]) for r in rows) for j in range(lead)] if rows else [0]
        run_w = [max(len(f"#{k + 1}"), *(len(r[1][k]) for r in rows)) for k in range(len(ids))]
        start = 0
        while start < len(ids):  # as many runs side by side as fit the width
            used, stop = sum(lead_w) + 2 * lead, start
            while stop < len(ids) and (stop == start or used + run_w[stop] + 2 <= width):
                used += run_w[stop] + 2
                stop += 1
            out += ["", f"{m}: mean [95% CI] (n repeats)"]
            head = [*(["workload"] if several else []), "level", *[f"#{k + 1}" for k in range(start, stop)]]
            out += _aligned(head, [[*lead_cells, *cells[start:stop]] for lead_cells, cells in rows])
            start = stop
    return out


def export_runs(
    runs: Iterable[str | Path] | None = None,
    *,
    out: str | Path | None = None,
    requests: bool = False,
    runs_dir: str | Path | None = None,
) -> pd.DataFrame:
    """Several runs' level rows (or request rows) as one table, written as CSV when ``out`` is given.

    Args:
        runs: run ids, prefixes or directories; None: every run in the runs folder
            (unreadable ones are left out with a warning naming them).
        out: a CSV file to write (relative: to the current directory) in a folder that exists
            (none is created: a mistyped path must not grow a tree); None: write nothing.
        requests: the request rows (one per request) instead of the level rows (one per
            level and repeat); list columns become JSON text.
        runs_dir: the runs folder.

    Returns:
        The table written.

    Raises:
        ConfigError: a named run does not exist, no run has rows, or ``out``'s folder does not exist
            or ``out`` is a folder (checked before any run is read).
        HostError: ``out`` cannot be written.
    """
    import warnings

    target = None if out is None else _export_target(Path(out).expanduser())
    table, skipped = export_tables(list(runs) if runs else None, root=runs_dir, requests=requests)
    for line in skipped:
        warnings.warn(f"left out of the export: {line}", stacklevel=2)
    if target is not None:
        try:
            table.to_csv(target, index=False)
        except OSError as exc:
            raise HostError(f"Cannot write {target}: {exc.strerror or exc}") from exc
    return table


def _export_target(target: Path) -> Path:
    """``target`` when it can be a CSV file in an existing folder; else the :class:`ConfigError` saying so."""
    if target.is_dir():
        raise ConfigError(f"--out {target} is a folder; name a CSV file in it, e.g. {target / 'runs.csv'}")
    if not target.parent.is_dir():
        raise ConfigError(
            f"--out {target}: folder {target.parent} does not exist (nothing is created); create it "
            "first or name a file in an existing folder"
        )
    return target
