"""The one shape every study shares: its verdict, its charts by stem, and those charts saved.

:class:`workbench.studies.Study` (spec versus baseline), :class:`workbench.studies.PolicyStudy`
(dynamic disable), :class:`workbench.studies._whatif.WhatIf` (the simulator's what-if) and
:class:`workbench.studies.CalibrationStudy` each answer these three calls the same way, with no
options: whatever a study needs to draw (a metric, a what-if) is part of the study value itself.
A notebook's last cell saves any of them with :func:`workbench.studies.save_study_charts`.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Protocol, runtime_checkable

if TYPE_CHECKING:  # the protocol names the types; a study imports them for real
    import altair as alt
    import pandas as pd

__all__ = ["StudyShape"]


@runtime_checkable
class StudyShape(Protocol):
    """What every study answers (see the module docstring)."""

    def verdict(self) -> str:
        """The report's answer, as markdown: it opens the report after the opening's few sentences."""
        ...

    def charts(self) -> dict[str, alt.TopLevelMixin]:
        """Every chart of the study, by file stem."""
        ...

    def save_charts(self, out_dir: str | Path) -> pd.DataFrame:
        """Write every chart as PNG and SVG into ``out_dir`` (relative: to the project root).

        Returns:
            One row per chart: ``chart`` (its stem), ``png`` and ``svg`` (file names) and ``folder``.
        """
        ...
