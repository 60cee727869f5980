"""The words of the workloads report: what differs between two arms, and the opening.

:func:`differences` names what two arms of a :class:`Pairing` differ in,
read from their own rows and manifests: the **workload** (dataset, input and output lengths, ...),
the **endpoint** (the backend or route the client called), the **client** (the tool and its version),
the **server** (engine, release, model, parallelism, hardware where recorded) and the **tokens**
(mean prompt and output tokens per request). :func:`opening` puts a NOT LIKE-FOR-LIKE caveat naming
them above everything else whenever two different workloads are compared (``unlike_arms``), then the
In short paragraph, then the variants it did not compare with the option that would.
Every value from the runs is placed through :mod:`workbench.markup`.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any, Protocol

import pandas as pd

from workbench.markup import code, literal
from workbench.report import UNLIKE_ARMS_FLAG

__all__ = ["ALL_AT_ONCE", "Pairing", "UNLIKE_PARAMETER", "WorkloadView", "differences", "opening"]

#: What an offline level (every request at once) is called in tables and charts.
ALL_AT_ONCE = "all at once"


#: How a reader asks for arms of different workloads to be compared: the parameter (the CLI flag is
#: :data:`workbench.report.UNLIKE_ARMS_FLAG`).
UNLIKE_PARAMETER = "unlike_arms"
#: Workload label keys that name the endpoint rather than what was sent.
_ENDPOINT_KEYS = ("backend",)
#: Two token means closer than this (relative) are the same.
_TOKENS_TOLERANCE = 0.01
#: Server settings compared, (where, key, words): a manifest's ``server_info`` or a level column.
_SERVER_FIELDS = (
    ("level", "engine", "engine"),
    ("level", "simulated", "simulated"),
    ("manifest", "sglang_version", "SGLang"),
    ("info", "version", "server version"),
    ("info", "model_path", "model"),
    ("info", "tp_size", "TP"),
    ("level", "inferencex_model", "model"),
    ("level", "inferencex_hw", "GPU"),
    ("level", "inferencex_framework", "framework"),
    ("level", "inferencex_image", "image"),
    ("level", "inferencex_precision", "precision"),
    ("level", "inferencex_tp", "TP"),
    ("level", "inferencex_ep", "EP"),
    ("manifest", "host", "host"),
)


@dataclasses.dataclass(frozen=True)
class Pairing:
    """Which of the baseline's workloads a variant's workload is compared with.

    Attributes:
        variant: the compared variant.
        workload: its workload.
        baseline_workload: the baseline's workload its ratios use (the same one, like for like, or the
            baseline's only workload when ``unlike_arms`` paired two different ones).
    """

    variant: str
    workload: str
    baseline_workload: str

    @property
    def like_for_like(self) -> bool:
        """True when both arms measured the same workload."""
        return self.workload == self.baseline_workload


class WorkloadView(Protocol):
    """What the words read of a :class:`workbench.studies._workloads.WorkloadStudy`."""

    levels: pd.DataFrame
    baseline: str
    pairings: dict[str, list[Pairing]]

    @property
    def variants(self) -> list[str]: ...
    @property
    def workloads(self) -> list[str]: ...
    @property
    def unlike_pairings(self) -> list[Pairing]: ...
    @property
    def not_compared(self) -> list[str]: ...
    @property
    def simulated(self) -> bool: ...
    def workloads_of(self, variant: str) -> list[str]: ...
    def manifest_of(self, variant: str) -> dict[str, Any]: ...
    def table(self) -> pd.DataFrame: ...
    def ratios(self) -> pd.DataFrame: ...


def _parts(workload: str) -> dict[str, str]:
    """A workload label's ``key=value`` parts (a part without ``=`` maps to ``""``)."""
    return {key: value for key, _, value in (p.partition("=") for p in workload.split())}


def _first(rows: pd.DataFrame, column: str) -> Any:
    if column not in rows:
        return None
    values = rows[column].dropna()
    return values.iloc[0] if len(values) else None


def _arm(study: WorkloadView, variant: str, workload: str) -> tuple[pd.DataFrame, dict[str, Any]]:
    rows = study.levels[(study.levels["variant"].astype(str) == variant) & (study.levels["workload"] == workload)]
    return rows, study.manifest_of(variant)


def _setting(where: str, key: str, rows: pd.DataFrame, manifest: dict[str, Any]) -> Any:
    if where == "level":
        return _first(rows, key)
    if where == "manifest":
        return manifest.get(key)
    return (manifest.get("server_info") or {}).get(key)


def _per_request(rows: pd.DataFrame, total: str) -> float:
    """Mean tokens per completed request from a total column (NaN where either is not recorded)."""
    if total not in rows or "completed" not in rows:
        return math.nan
    tokens = pd.to_numeric(rows[total], errors="coerce").sum(min_count=1)
    done = pd.to_numeric(rows["completed"], errors="coerce").sum(min_count=1)
    return float(tokens / done) if done and done == done and tokens == tokens else math.nan


def differences(study: WorkloadView, pairing: Pairing) -> list[tuple[str, str]]:
    """What the two arms of ``pairing`` differ in, as ``(kind, words)``: kind ``"workload"``,
    ``"endpoint"``, ``"client"``, ``"server"`` or ``"tokens"``; words plain text, the baseline's value
    first (``"dataset random vs sharegpt"``). Only what both arms' rows or manifests record is compared;
    an empty list means nothing recorded differs.
    """
    base_rows, base_m = _arm(study, study.baseline, pairing.baseline_workload)
    rows, m = _arm(study, pairing.variant, pairing.workload)
    out: list[tuple[str, str]] = []
    b_parts, v_parts = _parts(pairing.baseline_workload), _parts(pairing.workload)
    keys = list(dict.fromkeys([*b_parts, *v_parts]))
    sent = [
        f"{k} {b_parts.get(k, 'not set')} vs {v_parts.get(k, 'not set')}"
        for k in keys
        if k not in _ENDPOINT_KEYS and b_parts.get(k) != v_parts.get(k)
    ]
    if sent:
        out.append(("workload", ", ".join(sent)))
    b_end = b_parts.get("backend") or _first(base_rows, "bench_serving_backend")
    v_end = v_parts.get("backend") or _first(rows, "bench_serving_backend")
    if b_end is not None and v_end is not None and str(b_end) != str(v_end):
        out.append(("endpoint", f"{b_end} vs {v_end}"))
    b_tool = " ".join(str(x) for x in (_first(base_rows, "tool"), _first(base_rows, "tool_version")) if x is not None)
    v_tool = " ".join(str(x) for x in (_first(rows, "tool"), _first(rows, "tool_version")) if x is not None)
    if (b_tool or v_tool) and b_tool != v_tool:
        out.append(("client", f"{b_tool or 'the workbench'} vs {v_tool or 'the workbench'}"))
    server = []
    for where, key, words in _SERVER_FIELDS:
        a, b = _setting(where, key, base_rows, base_m), _setting(where, key, rows, m)
        if a is not None and b is not None and str(a) != str(b):
            server.append(f"{words} {a} vs {b}")
    if server:
        out.append(("server", ", ".join(dict.fromkeys(server))))
    tokens = []
    for total, words in (
        ("total_prompt_tokens", "prompt tokens per request"),
        ("total_output_tokens", "output tokens per request"),
    ):
        a, b = _per_request(base_rows, total), _per_request(rows, total)
        if a == a and b == b and abs(a - b) > _TOKENS_TOLERANCE * max(abs(a), abs(b)):
            tokens.append(f"{words} {a:,.0f} vs {b:,.0f}")
    if tokens:
        out.append(("tokens", ", ".join(tokens)))
    return out


def _caveat(study: WorkloadView) -> str:
    lines = []
    for pairing in study.unlike_pairings:
        found = differences(study, pairing)
        said = "; ".join(f"**{kind}** ({literal(words)})" for kind, words in found) or (
            "nothing their files recorded, beyond the workload labels themselves"
        )
        lines.append(
            f"`{pairing.variant}` measured {code(pairing.workload)} and is compared with the baseline "
            f"{code(study.baseline)} measured {code(pairing.baseline_workload)}. They differ in {said}."
        )
    return (
        "> **NOT LIKE-FOR-LIKE** — asked for with "
        f"{code(UNLIKE_PARAMETER)} ({code(UNLIKE_ARMS_FLAG)}). "
        + " ".join(lines)
        + " Each ratio of such a pair mixes these differences with what speculation does: it compares two "
        "setups, not speculation alone."
    )


def _cells(rows: pd.DataFrame) -> str:
    """Ratios of one variant as words: each cell when few, else their range."""

    def where(row: Any) -> str:
        against = "" if row.compared_with == row.workload else f" against the baseline on {code(row.compared_with)}"
        return f"{code(row.workload)}{against}, {literal(row.load)}"

    def said(row: Any) -> str:
        others = [
            f"mean {name} x{value:.2f}"
            for name, value in (
                ("TTFT", getattr(row, "ttft_ratio", math.nan)),
                ("TPOT", getattr(row, "tpot_ratio", math.nan)),
            )
            if value == value
        ]
        return f"x{row.throughput_ratio:.2f} on {where(row)}" + (f" ({', '.join(others)})" if others else "")

    if len(rows) <= 4:
        return "; ".join(said(r) for r in rows.itertuples())
    low, high = rows.loc[rows["throughput_ratio"].idxmin()], rows.loc[rows["throughput_ratio"].idxmax()]
    above = int((rows["throughput_ratio"] > 1).sum())
    return (
        f"from x{low.throughput_ratio:.2f} ({where(low)}) to x{high.throughput_ratio:.2f} ({where(high)}), "
        f"above 1 in {above} of {len(rows)}"
    )


def opening(study: WorkloadView) -> str:
    """The report's first screen (markdown): the NOT LIKE-FOR-LIKE caveat when two different workloads are
    compared, then **In short** (what was measured, each variant's output throughput over the baseline's per
    workload and load), then **Not compared** naming each variant that shares no workload with the baseline
    and the option that would compare it (each also said on the terminal: :func:`workbench.report.report_note`).
    """
    from workbench.report import report_note

    table = study.table()
    loads = list(dict.fromkeys(table["load"]))
    tools = sorted({str(t) for t in study.levels.get("tool", pd.Series(dtype=object)).dropna()})
    source = ("SIMULATED figures" if study.simulated else "Measured figures") + (
        f" imported from {literal(', '.join(tools))}" if tools else ""
    )
    n_w = len(study.workloads)
    at = (
        "every request of a workload sent at once (offline throughput)"
        if loads == [ALL_AT_ONCE]
        else f"at {literal(', '.join(loads))}"
    )
    lead = (
        f"**In short** — {source}: {n_w} workload{'s' if n_w != 1 else ''} and {len(study.variants)} "
        f"variant{'s' if len(study.variants) != 1 else ''}, {at}."
    )
    ratios = study.ratios()
    sentences = [lead]
    for variant in study.pairings:
        mine = ratios[ratios["variant"] == variant]
        if len(mine):
            sentences.append(
                f"`{literal(variant)}` over the baseline {code(study.baseline)}, output throughput: {_cells(mine)}."
            )
    if len(study.variants) == 1:
        sentences.append(
            f"Only {code(study.baseline)} is in these runs: its workloads side by side, with no other "
            "variant to compare."
        )
    elif not len(ratios) and not study.not_compared:
        sentences.append("No variant measured a workload at a load the baseline also measured: nothing is compared.")
    if len(ratios) and int(table["n"].max()) == 1:
        sentences.append(
            "One measurement per cell (no repeats): no interval, so read a difference of a few percent "
            "as possibly noise."
        )
    parts = [" ".join(sentences)]
    if study.unlike_pairings:
        parts.insert(0, _caveat(study))
    if study.not_compared:
        named = []
        for variant in study.not_compared:
            mine, base = study.workloads_of(variant), study.workloads_of(study.baseline)
            named.append(
                f"{code(variant)} measured {', '.join(code(w) for w in mine)} and the baseline "
                f"{code(study.baseline)} {', '.join(code(w) for w in base)}"
            )
            report_note(
                f"not compared: variant {variant} shares no workload with the baseline {study.baseline}; "
                f"{UNLIKE_ARMS_FLAG} compares them under a NOT LIKE-FOR-LIKE caveat"
            )
        parts.append(
            "**Not compared** — " + "; ".join(named) + ". Arms of different workloads or endpoints are not "
            "compared (a ratio would mix the workload's effect with speculation's): each is shown below without a "
            f"ratio. To set them side by side anyway, under a NOT LIKE-FOR-LIKE caveat naming every difference, "
            f"render again with {code(UNLIKE_ARMS_FLAG)} ({code(f'-p {UNLIKE_PARAMETER} true')})."
        )
    return "\n\n".join(parts)
