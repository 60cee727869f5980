"""Which notebooks render a set of stored runs (``workbench report --from-runs RUN...`` with no NOTEBOOK).

Two kinds of report render stored runs. The spec-versus-baseline one compares levels on a load axis
(concurrency, or a finite request rate), one workload at a time; a notebook whose metadata says
``"compares": "workloads"`` (``notebooks/workloads.ipynb``) sets every workload of the runs side by
side, including offline levels (every request at once: no load axis at all). The runs decide:

- a load-axis notebook runs when some level has a load axis;
- a workloads notebook runs when some level is offline, when the runs hold more than one workload, or
  when arms of different workloads are to be compared (``--unlike-arms``).

Each choice is said on the terminal in one line (:func:`notebooks_for_runs`' second value).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from workbench.report._discovery import report_metadata

__all__ = ["UNLIKE_ARMS", "UNLIKE_ARMS_FLAG", "compares_workloads", "notebooks_for_runs"]

#: ``workbench report --unlike-arms``: the same as ``-p unlike_arms true`` (arms measured on different workloads or
#: endpoints compared under a NOT LIKE-FOR-LIKE caveat, by the notebooks that declare the parameter).
UNLIKE_ARMS_FLAG = "--unlike-arms"
UNLIKE_ARMS = "unlike_arms"


def compares_workloads(notebook: str | Path) -> bool:
    """True when the notebook's metadata says it compares workloads side by side (``compares: workloads``)."""
    return report_metadata(notebook).get("compares") == "workloads"


def _kinds(levels: Any) -> tuple[int, int, int]:
    """(levels with a load axis, offline levels, workloads) of a levels table."""
    if not len(levels):
        return 0, 0, 0
    import pandas as pd

    rate = pd.to_numeric(levels.get("request_rate_req_s", pd.Series(math.nan, index=levels.index)), errors="coerce")
    conc = pd.to_numeric(levels.get("concurrency", pd.Series(math.nan, index=levels.index)), errors="coerce")
    offline = (rate == math.inf) & conc.isna()
    on_axis = conc.notna() | (rate.notna() & (rate != math.inf))
    workloads = levels["workload"].nunique() if "workload" in levels else 1
    return int(on_axis.sum()), int(offline.sum()), int(workloads)


def notebooks_for_runs(
    notebooks: Sequence[Path], runs: Sequence[Path], given: Mapping[str, Any]
) -> tuple[list[Path], list[str]]:
    """The notebooks (of those declaring ``from_runs``) that can render ``runs``, and why, one line each.

    Args:
        notebooks: the candidates, in report order.
        runs: the run directories (:func:`workbench.store.stored_runs`, already checked readable).
        given: the parameters given (``unlike_arms`` counts).

    Returns:
        ``(chosen, lines)``: the notebooks to run in the given order (all of them when none fits: each then
        says why it cannot), and one line per load-axis notebook left out saying why (a workloads notebook
        left out for runs of one workload on a load axis is not news: it is named explicitly to run it).
    """
    from workbench.store import load_runs

    _, levels = load_runs(list(runs))
    on_axis, offline, workloads = _kinds(levels)
    unlike = bool(given.get(UNLIKE_ARMS))
    chosen, lines = [], []
    for nb in notebooks:
        if compares_workloads(nb):
            if offline or workloads > 1 or unlike:
                chosen.append(nb)
        elif on_axis:
            chosen.append(nb)
        else:
            lines.append(
                f"not running {nb.name}: every level of the runs sent all its requests at once (an "
                "offline throughput run), so none has a concurrency or request rate to compare on"
            )
    return (chosen, lines) if chosen else (list(notebooks), [])
