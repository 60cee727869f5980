"""How a spec-versus-baseline study's runs were measured, in words written from the runs' own record.

:func:`method_text` is the report's *How it was measured*: what was launched and where, the load, the
repeats, whether the variants' servers were measured one after another (and in which order) or at the
same time, the time scale of a simulated engine, and the levels a sweep reused from disk. Every
sentence comes from the study's tables (:class:`workbench.studies._tables.StudyTables`): the manifests
(host, engine, ``time_scale``, ``plan``, ``reused_levels``, ``fleet_units``, an import's ``tool``) and the requests' own wall-clock stamps (``start_epoch_s``, ``end_epoch_s``), which say whether
the passes overlapped and when the figures were measured. Nothing is restated from a notebook's defaults, so the words cannot drift from
what was run (``tests/test_method_words.py``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd

from workbench.markup import code, literal
from workbench.studies._conditions import conditions_text
from workbench.studies._tables import StudyTables

__all__ = ["PassOrder", "method_text", "pass_order"]


@dataclasses.dataclass(frozen=True)
class PassOrder:
    """How the variants' passes (one server each, per repeat) were placed in time, read from request stamps.

    Attributes:
        kind: ``"sequential"`` (no two variants' passes overlapped), ``"parallel"`` (passes of different
            variants overlapped in time) or ``"unknown"`` (the runs carry no request timestamps, e.g. an
            imported file's levels).
        most_at_once: the most variants measured at the same moment (1 for sequential).
        orders: per repeat (in repeat order), the variants in the order their passes started.
    """

    kind: str
    most_at_once: int
    orders: tuple[tuple[str, ...], ...]

    @property
    def alternated(self) -> bool:
        """True when every repeat after the first ran the variants in the reverse of the one before."""
        pairs = list(zip(self.orders, self.orders[1:]))
        return bool(pairs) and all(b == tuple(reversed(a)) for a, b in pairs)


def pass_order(requests: pd.DataFrame) -> PassOrder:
    """When each variant's pass of each repeat ran (first request sent to last answer), and whether they overlapped.

    Args:
        requests: per-request rows with ``variant``, ``repeat``, ``start_epoch_s`` and ``end_epoch_s``
            (wall-clock seconds; rows without them are left out).

    Returns:
        A :class:`PassOrder`; ``"unknown"`` when no row has both stamps.
    """
    need = {"variant", "start_epoch_s", "end_epoch_s"}
    if not need <= set(requests.columns):
        return PassOrder("unknown", 0, ())
    rows = requests.dropna(subset=["start_epoch_s", "end_epoch_s"])
    if rows.empty:
        return PassOrder("unknown", 0, ())
    by = ["repeat", "variant"] if "repeat" in rows else ["variant"]
    windows = rows.groupby(by, sort=True).agg(start=("start_epoch_s", "min"), end=("end_epoch_s", "max")).reset_index()
    if "repeat" not in windows:
        windows["repeat"] = 0
    # the most windows open at one moment: sweep over the starts and ends (an end before a start at a tie)
    events = sorted([(float(s), 1) for s in windows["start"]] + [(float(e), -1) for e in windows["end"]])
    open_now = most = 0
    for _, step in events:
        open_now += step
        most = max(most, open_now)
    orders = tuple(tuple(group.sort_values("start")["variant"]) for _, group in windows.groupby("repeat", sort=True))
    return PassOrder("parallel" if most > 1 else "sequential", most, orders)


def _levels_words(study: StudyTables) -> str:
    """``"concurrency 1, 2, 4 and 8"`` or ``"request rate 1, 2 and 4 req/s"``: the levels measured."""
    values = [f"{v:g}" for v in sorted(set(study.levels[study.load].dropna()))]
    listed = values[0] if len(values) == 1 else f"{', '.join(values[:-1])} and {values[-1]}"
    return f"{study.load_axis.words} {listed}{study.load_axis.unit}"


def _plans(manifests: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    return [m["plan"] for m in manifests if isinstance(m.get("plan"), Mapping)]


def _one(values: Sequence[Any]) -> Any:
    """The one value all given share, else None."""
    distinct = list(dict.fromkeys(repr(v) for v in values))
    return values[0] if values and len(distinct) == 1 else None


def _load_sentence(study: StudyTables) -> str:
    """What each server was given: the load, requests per level, output length, prompts."""
    plans = _plans(study.manifests)
    closed = study.load == "concurrency"
    parts = [
        f"a {'closed-loop load (that many requests in flight)' if closed else 'open-loop load (Poisson arrivals)'} "
        f"at {_levels_words(study)}"
    ]
    counts = study.levels["num_requests"].dropna() if "num_requests" in study.levels else pd.Series(dtype=float)
    if len(counts):
        lo, hi = int(counts.min()), int(counts.max())
        parts.append(f"{lo if lo == hi else f'{lo}–{hi}'} requests per level")
    tokens = _one([p.get("max_new_tokens") for p in plans])
    if tokens is not None:
        parts.append(f"{tokens} output tokens per request")
    prompts = _one([p.get("prompt_set") for p in plans])
    if prompts is not None:
        parts.append(f"prompt set {code(str(prompts))}")
    routes = sorted(set(study.levels["backend"].dropna())) if "backend" in study.levels else []
    if len(routes) == 1:
        parts.append(f"streamed through the {code(routes[0])} route")
    stream = _one([(p.get("extra_sampling_params") or {}).get("stream_interval") for p in plans])
    if isinstance(stream, int) and stream > 1:
        parts.append(f"{stream} tokens per streamed chunk (TTFT, TPOT and E2E unchanged by it)")
    return ", ".join(parts)


def _where(study: StudyTables) -> str:
    hosts = sorted({str(m["host"]) for m in study.manifests if m.get("host")})
    return f"on {literal(', '.join(hosts))}" if hosts else "on a host the runs do not name"


def _order_sentence(study: StudyTables) -> str:
    """Whether the variants' servers ran one after another or at the same time, from the requests' stamps."""
    if any(m.get("fleet_units") for m in study.manifests):
        return (
            "The (variant, repeat) units ran as tasks on a Ray fleet, as many at once as its GPUs allowed "
            "(*Where each unit ran* below names each unit's host and neighbours)."
        )
    order = pass_order(study.requests)
    n = len(order.orders)
    if order.kind == "unknown":
        return (
            "When each variant's requests ran is not recorded in these runs, so the order of the variants and "
            "whether they overlapped is not known."
        )
    if order.kind == "parallel":
        many = (
            f"up to {order.most_at_once} variants' servers"
            if order.most_at_once < len(study.variants)
            else f"all {order.most_at_once} variants' servers"
        )
        many = many if n > 1 else many[0].upper() + many[1:]
        within = "Within each repeat " if n > 1 else ""
        return (
            f"{within}{many} were measured at the same time, each with its own load generator, so they shared "
            "this machine's CPU (no variant ran first; their requests' timestamps overlap)"
            + (f"; each variant's {n} repeats followed one another." if n > 1 else ".")
        )
    if n > 1 and order.alternated:
        return (
            "One server at a time: the variants ran one after another, their order reversed from each repeat "
            f"to the next (repeat 1: {literal(', '.join(order.orders[0]))}), so drift over time favours none."
        )
    if n > 1 and len(set(order.orders)) == 1:
        return (
            f"One server at a time, in the same order in every repeat ({literal(', '.join(order.orders[0]))}): "
            "drift over time (a warming host) can favour the variants that ran first."
        )
    first = order.orders[0] if order.orders else ()
    return f"One server at a time, one after another (first repeat: {literal(', '.join(first))})."


#: A pause longer than this (wall seconds) between one pass's end and the next pass's start splits the
#: measurements into sessions: levels from an earlier sweep, resumed or reused by a later one.
SESSION_GAP_S = 600.0


def _when_sentence(study: StudyTables) -> str:
    """When the figures were measured (UTC, from the requests' stamps), in sessions where a sweep reused levels an
    earlier one stored, and the runs that copied levels from another run; '' when nothing records it."""
    rows = study.requests
    if not {"start_epoch_s", "end_epoch_s"} <= set(rows.columns):
        return ""
    rows = rows.dropna(subset=["start_epoch_s", "end_epoch_s"])
    if rows.empty:
        return ""
    by = [c for c in ("variant", "repeat", "level_index") if c in rows]
    passes = rows.groupby(by).agg(start=("start_epoch_s", "min"), end=("end_epoch_s", "max")).sort_values("start")
    sessions: list[list[float]] = []
    for start, end in zip(passes["start"], passes["end"]):
        if sessions and start - sessions[-1][1] <= SESSION_GAP_S:
            sessions[-1][1] = max(sessions[-1][1], end)
        else:
            sessions.append([start, end])

    def when(t: float) -> str:
        return pd.Timestamp(t, unit="s", tz="UTC").strftime("%Y-%m-%d %H:%M")

    if len(sessions) == 1:
        text = f"Every figure here was measured in one session, {when(sessions[0][0])}–{when(sessions[0][1])[-5:]} UTC."
    else:
        text = (
            f"The figures were measured in {len(sessions)} sessions ("
            + ", ".join(f"{when(a)}–{when(b)[-5:]}" for a, b in sessions)
            + " UTC): a later sweep resumed runs and kept the levels an earlier one had stored "
            "(`workbench runs show RUN` says which)."
        )
    copied = [m for m in study.manifests if isinstance(m.get("reused_levels"), Mapping)]
    if copied:
        text += (
            " Levels copied from an earlier run of the same sweep: "
            + ", ".join(
                f"{literal(str(m.get('variant')))} from {code(str(m['reused_levels'].get('run_id')))}" for m in copied
            )
            + "."
        )
    return text


def _engine_paragraph(study: StudyTables) -> str:
    """Which engine served, and for the simulator, how fast its clock ran."""
    imported = sorted({str(m.get("tool")) for m in study.manifests if m.get("kind") == "import" and m.get("tool")})
    lines = []
    if imported:
        lines.append(
            f"Some figures were imported from another tool's result file ({literal(', '.join(imported))}; "
            "`workbench import`): their load and timing are that tool's, converted, not re-measured."
        )
    if study.simulated:
        sims = [m.get("simulation") or {} for m in study.manifests if m.get("simulated")]
        profiles = sorted({str(s["profile"]) for s in sims if s.get("profile")})
        scales = sorted(
            {
                float(s)
                for s in [
                    *(m.get("time_scale") for m in study.manifests if m.get("simulated")),
                    *(s.get("time_scale") for s in sims),
                ]
                if s
            }
        )
        profile = f" (profile {literal(', '.join(profiles))})" if profiles else ""
        if not scales:
            pace = "Its time scale is not recorded in these runs."
        elif len(scales) == 1:
            pace = (
                "It ran in real time."
                if scales[0] == 1.0
                else f"It ran {scales[0]:g} times faster than real time (time scale {scales[0]:g}, as every run's "
                "manifest records), and times are in simulated seconds; how the time scale moves the figures "
                "on a busy machine is in docs/PERFORMANCE.md."
            )
        else:
            pace = (
                f"The runs were made at different time scales ({', '.join(f'{s:g}' for s in scales)}): "
                "their figures are not like for like (`workbench runs compare` names each run's)."
            )
        lines.append(
            f"The engine was the workbench's **simulated** SGLang server{profile}: the same HTTP API and "
            f"flags, performance from the profile's model, not a GPU. {pace} Every simulated figure is "
            "labelled."
        )
    else:
        measured = conditions_text(study.manifests) or "Measured on a real engine"
        lines.append(f"{measured}.")
    return "\n\n".join(lines)


def method_text(study: StudyTables) -> str:
    """The report's *How it was measured* (markdown), every sentence from the runs' own record.

    In order: what was launched and the load each server was given (the runs' plans and levels), n repeats,
    whether the servers were measured one after another or at the same time (:func:`pass_order` on the
    requests' stamps; a fleet's units), the levels reused from disk, then the engine (simulated: its
    profile and time scale as the manifests record them; real: :func:`conditions_text`).
    """
    n = study.max_repeats
    imported_only = all(m.get("kind") == "import" for m in study.manifests)
    head = (
        "Each variant's figures come from its run, "
        if imported_only
        else f"Each server variant was launched {_where(study)} and given "
    )
    sentences = [
        f"{head}{_load_sentence(study)}; it was then stopped and compared with {literal(study.baseline)}.",
        f"Each level was measured {n} time{'' if n == 1 else 's'}"
        + (" (its own seed and prompt order per repeat)." if n > 1 else "."),
    ]
    if not imported_only:
        sentences.append(_order_sentence(study))
    when = _when_sentence(study)
    if when:
        sentences.append(when)
    sentences.append(
        "Each level is on disk as soon as it is measured; running the same sweep again resumes it "
        "(`fresh = True` starts anew)."
    )
    return " ".join(sentences) + "\n\n" + _engine_paragraph(study)
