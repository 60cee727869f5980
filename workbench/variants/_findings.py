"""Findings: what pre-flight validation and post-launch confirmation report about a variant.

A :class:`Finding` names its severity, the variant, the flag (or environment
variable, model path, patch, resource) it is about, what is wrong and what to do.
``error`` blocks a launch, ``warning`` makes results suspect or pairs
incomparable, ``info`` is worth knowing (a check skipped and why, a default the
server will pick).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from typing import Any, Literal

import pandas as pd

from workbench.markup import code, literal

Severity = Literal["error", "warning", "info"]

#: Severities from worst to mildest (the order of tables and CLI output).
SEVERITIES: tuple[Severity, ...] = ("error", "warning", "info")

#: What :func:`count_line` calls each severity (``info`` findings are counted as notes).
COUNT_WORDS: dict[str, str] = {"error": "error(s)", "warning": "warning(s)", "info": "note(s)"}

#: Columns of :func:`findings_table`.
FINDING_COLUMNS = ["severity", "variant", "flag", "check", "message"]


@dataclasses.dataclass(frozen=True)
class Finding:
    """One result of a check.

    Attributes:
        severity: ``"error"``, ``"warning"`` or ``"info"``.
        variant: the variant's name (``"a vs b"`` for a pair).
        flag: what it is about: ``--speculative-eagle-topk``, ``env SGLANG_ENABLE_SPEC_V2``,
            ``model_path``, ``patch <file>``, ``gpu``, ``disk``; None for the variant as a whole.
        problem: what is wrong (or what was found), naming the flag.
        fix: what to do about it ("" when nothing needs doing).
        check: short identifier of the check, e.g. ``"unknown-flag"`` (stable, for tests and filters).
    """

    severity: Severity
    variant: str
    flag: str | None
    problem: str
    fix: str = ""
    check: str = ""

    def __post_init__(self) -> None:
        if self.severity not in SEVERITIES:
            raise ValueError(f"severity must be one of {SEVERITIES}, got {self.severity!r}")

    @property
    def message(self) -> str:
        """The problem followed by ``Fix: <fix>`` when there is one."""
        return f"{self.problem} Fix: {self.fix}" if self.fix else self.problem

    def line(self) -> str:
        """One line for terminals: ``error   eagle3-topk4  --flag: message``."""
        where = f"{self.flag}: " if self.flag else ""
        return f"{self.severity:<7} {self.variant}  {where}{self.message}"

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict (the fields plus ``message``)."""
        return {**dataclasses.asdict(self), "message": self.message}


def has_errors(findings: Iterable[Finding]) -> bool:
    """True when any finding is an error."""
    return any(f.severity == "error" for f in findings)


def count_line(findings: Iterable[Finding]) -> str:
    """How many findings of each severity: ``"0 error(s), 2 warning(s), 31 note(s)"``.

    The one wording of the counts, shared by ``workbench variants check`` and the notebook.
    """
    items = list(findings)
    return ", ".join(f"{sum(f.severity == s for f in items)} {COUNT_WORDS[s]}" for s in SEVERITIES)


def sort_findings(findings: Iterable[Finding]) -> list[Finding]:
    """Findings ordered by severity (errors first), keeping each severity's original order."""
    items = list(findings)
    return sorted(items, key=lambda f: SEVERITIES.index(f.severity))


def findings_table(findings: Iterable[Finding]) -> pd.DataFrame:
    """One row per finding (columns :data:`FINDING_COLUMNS`), errors first."""
    rows = [{c: f.to_dict()[c] for c in FINDING_COLUMNS} for f in sort_findings(findings)]
    return pd.DataFrame(rows, columns=FINDING_COLUMNS)


def findings_verdict(
    findings: Iterable[Finding],
    *,
    variants: Iterable[str],
    baseline: str = "baseline",
    checked_against: str | None = None,
) -> str:
    """The variants report's answer, as markdown: which variants will start, which pairs are like-for-like.

    Args:
        findings: what :func:`workbench.variants.check_variants` returned (pairs are named ``"a vs b"``).
        variants: the variants checked, in order.
        baseline: the variant the speculative ones were compared with.
        checked_against: the SGLang they were checked against (None: each its own version).

    Returns:
        Lines: the counts (:func:`count_line`); the variants that would start and those that would
        not, each with its first error; the speculative variants like-for-like with the baseline and
        those that are not, with the flags that differ. Example line: ``"- **Will not start**:
        adaptive (--speculative-adaptive: unrecognized in SGLang 0.5.9)."``
    """
    items = list(findings)
    names = list(variants)
    against = f"against SGLang {literal(checked_against)}" if checked_against else "each against its own SGLang version"
    lines = [
        f"**Verdict** — {len(names)} variant(s) checked {against}, before anything is launched: {count_line(items)}.",
        "",
    ]
    starting, errors, fair, pairs = _sorted_out(items, names, baseline)
    if starting:
        lines.append(f"- **Would start**: {literal(', '.join(starting))}.")
    if errors:
        failing = "; ".join(
            f"{literal(n)} ({literal(e.flag) + ': ' if e.flag else ''}{e.problem.split('. ')[0].rstrip('.')})"
            for n, e in errors.items()
        )
        lines.append(f"- **Would not start**: {failing}.")
    if fair:
        lines.append(
            f"- **Like-for-like with {literal(baseline)}** (differ only in speculation): {literal(', '.join(fair))}."
        )
    if pairs:
        unfair = "; ".join(f"{literal(n)} ({literal(', '.join(dict.fromkeys(flags)))})" for n, flags in pairs.items())
        lines.append(
            f"- **Not like-for-like with {literal(baseline)}**: {unfair}. The findings below name each fix; "
            "what SGLang itself changes (the 48 cap, overlap off under spec v1) can be matched on the "
            "baseline only in part (`baseline-cap48` matches the cap)."
        )
    return "\n".join(lines)


def _sorted_out(
    items: list[Finding], names: list[str], baseline: str
) -> tuple[list[str], dict[str, Finding], list[str], dict[str, list[str]]]:
    """(variants that would start, the first error of each that would not, the speculative variants
    like-for-like with ``baseline``, the others with the flags that differ)."""
    errors: dict[str, Finding] = {}
    for f in items:
        if f.severity == "error" and " vs " not in f.variant:
            errors.setdefault(f.variant, f)
    starting = [n for n in names if n not in errors]
    pairs: dict[str, list[str]] = {}
    for f in items:
        if " vs " in f.variant and f.severity in ("warning", "error"):
            pairs.setdefault(f.variant.split(" vs ")[0], []).append(f.flag or f.check)
    compared = [n for n in names if n != baseline and any(f.variant == f"{n} vs {baseline}" for f in items)]
    return starting, errors, [n for n in compared if n not in pairs], pairs


def findings_opening(findings: Iterable[Finding], *, variants: Iterable[str], baseline: str = "baseline") -> str:
    """The report's first lines: at most five short sentences on which variants would start, which
    pairs are like-for-like, the caveat that matters most, and that nothing was launched (markdown).

    Args:
        findings, variants, baseline: as :func:`findings_verdict`.
    """
    items, names = list(findings), list(variants)
    starting, errors, fair, pairs = _sorted_out(items, names, baseline)
    sentences = [
        f"{len(starting)} of {len(names)} variants would start"
        + (f"; {', '.join(code(n) for n in errors)} would not (see its finding)." if errors else ".")
    ]
    if fair:
        sentences.append(f"Like-for-like with {code(baseline)}: {', '.join(code(n) for n in fair)}.")
    if pairs:
        sentences.append(
            f"Not like-for-like with {code(baseline)}: "
            + "; ".join(f"{code(n)} ({literal(', '.join(dict.fromkeys(flags)))})" for n, flags in pairs.items())
            + "."
        )
    sentences.append("These are checks of SGLang's source: a server can still fail at start (memory, CUDA graphs).")
    sentences.append("Nothing was launched or measured.")
    return "**In short** — " + " ".join(sentences[:5])
