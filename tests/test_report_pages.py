"""A report page shows what the notebook found, not its plumbing (issue 33): the checker every render test runs
(tests/report_page.py), shown to find each thing it looks for on a planted page, the page renderer that draws a
chart's shared subtitle lines once, and the what-if report rendered in a real kernel and checked.

The other reports' render tests call the same checker on their pages: spec_vs_baseline
(test_e2e_spec_vs_baseline.py, test_report_from_runs.py), dynamic_disable (test_policy_study.py), variants
(test_variants_run.py), inspect_source (test_source_notebook.py), calibration (test_e2e_report_injection.py) and
workloads (test_workloads_report.py).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from report_page import page_problems
from workbench.studies._notebook import _PageSubtitles

PAGE = """<html><body>
<div class="jp-Cell jp-MarkdownCell"><h2>Throughput</h2></div>
{body}
</body></html>"""


def _output(text: str, mime: str = "application/vnd.jupyter.stdout") -> str:
    return f'<div class="jp-OutputArea-output" data-mime-type="{mime}"><pre>{text}</pre></div>'


def _chart(title: str, *lines: str) -> str:
    spans = "".join(f"<tspan>{line}</tspan>" for line in lines)
    return (
        f'<svg><g class="mark-text role-title-text"><text>{title}</text></g>'
        f'<g class="mark-text role-title-subtitle"><text>{spans}</text></g></svg>'
    )


@pytest.mark.parametrize(
    ("planted", "found"),
    [
        (
            '<div class="jp-InputArea"><div class="jp-CodeMirrorEditor jp-Editor jp-InputArea-editor">x = 1</div></div>',
            "code cell on the page",
        ),
        ('<div class="jp-InputPrompt jp-InputArea-prompt">In&nbsp;[3]:</div>', "prompt on the page"),
        ("<p>Out[7]: 42</p>", "an In [n]: / Out [n]: prompt"),
        (
            _output(
                "     variant  concurrency  n\n0   baseline            1  3\n1   baseline            2  3\n"
                "2   eagle3              1  3\n\n[112 rows x 3 columns]",
                "text/plain",
            ),
            "a DataFrame printed as text",
        ),
        (_output('{\n  "1": {\n    "candidate_steps": [3]\n  }\n}\nvLLM: [[1, 31, 3]]'), "a JSON dump printed as text"),
        (
            _output("Interactive panel (variants, metric): live in JupyterLab only (make lab)", "text/plain"),
            "a JupyterLab panel's placeholder",
        ),
        (_output("VBox(children=(Dropdown(options=('a',)),))", "text/plain"), "a JupyterLab panel's placeholder"),
        ("<h2>Explore (JupyterLab)</h2>", "a section for JupyterLab only"),
        (
            _chart("Throughput", "SIMULATED", "workload: w", "points: means")
            + _chart("Latency", "SIMULATED", "workload: w"),
            "subtitle line of the first chart above 1 more: 'workload: w'",
        ),
        (
            _chart("First", "SIMULATED", "block")
            + "".join(_chart(f"Ratio {i}", "SIMULATED", "bars: 95% interval") for i in range(1, 5)),
            "subtitle line above 4 of 5 charts: 'bars: 95% interval'",
        ),
    ],
)
def test_the_checker_finds_each_kind_of_plumbing(planted: str, found: str) -> None:
    problems = page_problems(PAGE.format(body=planted))
    assert any(found in p for p in problems), problems


def test_a_clean_page_and_its_charts_pass(tmp_path: Path) -> None:
    body = (
        _chart("Throughput", "SIMULATED", "workload: w", "points: means")
        + _chart("Latency", "SIMULATED", "p50 solid")  # its own line, and the mark every figure keeps
        + _chart("Ratio a", "SIMULATED", "NOT LIKE-FOR-LIKE: overlap")
        + _chart("Ratio b", "SIMULATED", "NOT LIKE-FOR-LIKE: overlap")  # two pairs, one caveat each: theirs
        + _output("<altair chart (Vega-Lite 6.4), rendered offline as SVG>", "text/plain")
        + _output("reading sweep runs: 100%|##########| 4/4", "application/vnd.jupyter.stderr")
    )
    assert page_problems(PAGE.format(body=body)) == []


def _notebook(tmp_path: Path, domain: list[str], values: list[str]) -> Path:
    spec = {
        "$schema": "https://vega.github.io/schema/vega-lite/v6.json",
        "title": {"text": "Throughput"},
        "datasets": {"d1": [{"variant": v, "y": 1.0} for v in values]},
        "data": {"name": "d1"},
        "layer": [
            {
                "mark": "line",
                "encoding": {
                    "color": {"field": "variant", "type": "nominal", "legend": {}, "scale": {"domain": domain}}
                },
            }
        ],
    }
    path = tmp_path / "executed.ipynb"
    path.write_text(
        json.dumps(
            {
                "cells": [
                    {
                        "cell_type": "code",
                        "outputs": [
                            {"output_type": "display_data", "data": {"application/vnd.vegalite.v6+json": spec}}
                        ],
                    }
                ]
            }
        )
    )
    return path


def test_a_legend_naming_a_variant_without_data_is_found(tmp_path: Path) -> None:
    page = PAGE.format(body="")
    assert page_problems(page, _notebook(tmp_path, ["baseline", "eagle3"], ["baseline", "eagle3"])) == []
    assert page_problems(page, _notebook(tmp_path, ["baseline", "eagle3", "ghost"], ["baseline", "eagle3"])) == [
        "legend of 'Throughput' lists ['ghost'] with no data"
    ]


def _spec(title: str, *lines: str) -> dict:
    return {"title": {"text": title, "subtitle": list(lines)}, "mark": "point"}


def test_the_page_renderer_draws_the_first_charts_block_once_and_keeps_each_mark_and_own_line() -> None:
    page = _PageSubtitles()
    first = page.trim(_spec("Throughput", "SIMULATED: sim", "workload: w", "stand-in: s", "points: means"))
    assert first["title"]["subtitle"] == ["SIMULATED: sim", "workload: w", "stand-in: s", "points: means"]
    later = page.trim(
        {"layer": [_spec("Ratio", "SIMULATED: sim", "workload: w", "stand-in: s", "NOT LIKE-FOR-LIKE: overlap")]}
    )
    assert later["layer"][0]["title"]["subtitle"] == ["SIMULATED: sim", "NOT LIKE-FOR-LIKE: overlap"]
    again = page.trim(_spec("Throughput", "SIMULATED: sim", "workload: w", "stand-in: s", "points: means"))
    assert again["title"]["subtitle"] == first["title"]["subtitle"]  # a re-run cell draws its block again


def test_the_what_if_report_shows_no_plumbing_and_writes_its_grid(tmp_path: Path) -> None:
    """notebooks/what_if.ipynb in a real kernel on a small grid: a clean page, and the grid of what it recommends."""
    from workbench.paths import PACKAGE_ROOT
    from workbench.report import run_notebook

    result = run_notebook(
        PACKAGE_ROOT / "notebooks" / "what_if.ipynb",
        out_dir=tmp_path / "out",
        parameters={
            "topk": [1, 4],
            "num_steps": [1, 2],
            "num_draft_tokens": [2, 8],
            "spec_v2": [False, True],
            "concurrency_levels": [1, 4, 16],
            "requests_per_level": 32,
            "max_new_tokens": 32,
            "report_dir": str(tmp_path / "charts"),
        },
    )
    assert page_problems(result.html, result.executed) == []
    page = result.html.read_text(encoding="utf-8")
    assert "From prediction to measurement" in page and "workbench bench baseline --grid " in page
    grids = sorted((tmp_path / "charts").glob("whatif-*.toml"))
    assert grids and all("eagle3-topk4" in g.name for g in grids)
