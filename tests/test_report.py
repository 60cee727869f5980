"""workbench.report and workbench.charts._render: real papermill kernels, real nbconvert, real vl-convert."""

from __future__ import annotations

import html
import json
import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import altair as alt
import nbformat
import pandas as pd
import pytest
from browser import CHROMIUM

import workbench
from workbench.charts import RENDERER_NAME, chart_mimebundle, enable_offline_renderer, save_chart
from workbench.errors import ConfigError, ReportError, WorkbenchError
from workbench.report import (
    NOTEBOOK_ORDER,
    ReportResult,
    default_notebooks,
    distribute_parameters,
    external_resources,
    load_params_file,
    notebook_parameters,
    parse_param_pairs,
    parse_param_value,
    run_notebook,
)
from workbench.report._html import inline_svg

SETUP = """\
import json, sys
from pathlib import Path
import altair as alt
import pandas as pd
from workbench.charts import enable_offline_renderer, save_chart
enable_offline_renderer()"""

PARAMETERS = """\
concurrency_levels = [1, 2]  # levels to sweep
requests_per_level = 4
host = "local"
report_dir = "."
"""

RECORD = """\
Path(report_dir, "kernel.json").write_text(json.dumps({
    "concurrency_levels": concurrency_levels, "requests_per_level": requests_per_level,
    "host": host, "report_dir": report_dir, "prefix": sys.prefix, "executable": sys.executable,
    "cwd": str(Path.cwd()),
}))"""

CHART = """\
df = pd.DataFrame({"concurrency": concurrency_levels,
                   "output_tok_s": [93.0 * c for c in concurrency_levels]})
chart = alt.Chart(df).mark_line(point=True).encode(x="concurrency:Q", y="output_tok_s:Q").properties(
    title="Output throughput (SIMULATED)")
save_chart(chart, report_dir, "throughput")
chart"""


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory, write_notebook) -> ReportResult:
    """One real run of a small notebook with a chart."""
    root = tmp_path_factory.mktemp("demo")
    nb = write_notebook(root / "nb" / "demo.ipynb", setup=[SETUP], parameters=PARAMETERS, cells=[RECORD, CHART])
    return run_notebook(
        nb, out_dir=root / "reports", parameters={"concurrency_levels": [1, 2, 4], "requests_per_level": 8}
    )


def test_run_writes_executed_notebook_html_and_report_dir(demo: ReportResult) -> None:
    assert demo.executed == demo.html.with_suffix(".ipynb")
    assert demo.executed.name == "demo.ipynb" and demo.html.name == "demo.html"
    assert demo.report_dir == demo.html.parent / "demo"
    assert demo.executed.is_file() and demo.html.is_file() and demo.report_dir.is_dir()
    assert demo.duration_s > 0


def test_parameters_are_injected_and_report_dir_added(demo: ReportResult) -> None:
    seen = json.loads((demo.report_dir / "kernel.json").read_text())
    assert seen["concurrency_levels"] == [1, 2, 4]
    assert seen["requests_per_level"] == 8
    assert seen["host"] == "local"  # default kept
    assert seen["report_dir"] == str(demo.report_dir)
    assert demo.parameters["report_dir"] == str(demo.report_dir)


def test_kernel_runs_in_this_environment_and_notebook_folder(demo: ReportResult) -> None:
    seen = json.loads((demo.report_dir / "kernel.json").read_text())
    assert seen["prefix"] == sys.prefix  # the venv's interpreter, not some other python3
    assert seen["cwd"] == str(demo.notebook.parent)


def test_provenance_in_notebook_metadata(demo: ReportResult) -> None:
    nb = nbformat.read(str(demo.executed), as_version=4)
    record = nb.metadata["workbench"]
    assert record["workbench_version"] == workbench.__version__
    assert record["status"] == "ok"
    assert record["parameters"]["concurrency_levels"] == [1, 2, 4]
    assert record["defaults"] == {"host": '"local"'}  # declared, not given: as the cell writes it
    assert record["started_at"] <= record["finished_at"]
    assert "git" in record  # None here: the notebook is outside any git tree
    assert nb.metadata["papermill"]["parameters"]["requests_per_level"] == 8


def test_html_has_inline_svg_chart_and_fetches_nothing(demo: ReportResult) -> None:
    page = demo.html.read_text(encoding="utf-8")
    assert "<svg" in page and "Output throughput (SIMULATED)" in page
    assert external_resources(page) == []
    assert not re.search(r"<script[^>]*\ssrc\s*=\s*['\"]?(https?:)?//", page, re.I)
    assert not re.search(r"<link[^>]*\shref\s*=\s*['\"]?(https?:)?//", page, re.I)
    for cdn in ("cdnjs", "unpkg.com", "jsdelivr", "mathjax", "require.js", "require.min.js"):
        assert cdn not in page.lower(), cdn
    assert "workbench " + workbench.__version__ in page  # provenance header
    header = html.unescape(re.sub(r"<[^>]+>", "", page[page.index('class="wb-provenance"') :]).split("\n\n")[0])
    assert "Given: concurrency_levels=[1, 2, 4]" in " ".join(header.split()) and "requests_per_level=8" in header
    assert 'at their defaults: host="local"' in header  # the effective parameters, defaults included


def test_chart_files_written(demo: ReportResult) -> None:
    names = sorted(p.name for p in demo.charts)
    assert names == ["throughput.png", "throughput.svg"]
    png = (demo.report_dir / "throughput.png").read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 10_000
    root = ET.fromstring((demo.report_dir / "throughput.svg").read_text())
    assert root.tag.endswith("svg")


@pytest.mark.skipif(not CHROMIUM.exists(), reason="chromium is not installed (make test installs it)")
def test_html_renders_in_headless_chromium_without_network(demo: ReportResult, tmp_path: Path) -> None:
    shot = tmp_path / "report.png"
    proc = subprocess.run(
        [
            str(CHROMIUM),
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-background-networking",
            "--proxy-server=127.0.0.1:9",  # any http(s) fetch fails
            "--proxy-bypass-list=<-loopback>",
            f"--user-data-dir={tmp_path / 'profile'}",
            f"--screenshot={shot}",
            "--window-size=1200,2000",
            demo.html.as_uri(),
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert shot.is_file(), proc.stderr[-2000:]
    # a blank 1200x2000 page compresses to a few kB; the drawn report (header, chart: about 36 kB since the
    # code cells' source is hidden) is far larger
    assert shot.stat().st_size > 20_000


def test_failing_notebook_raises_and_keeps_partial_output(tmp_path: Path, write_notebook) -> None:
    nb = write_notebook(
        tmp_path / "broken.ipynb",
        parameters="level = 4",
        cells=["print('before the failure')", "raise RuntimeError(f'boom at level {level}')", "print('never')"],
    )
    with pytest.raises(ReportError) as info:
        run_notebook(nb, out_dir=tmp_path / "out", parameters={"level": 8})
    msg = str(info.value)
    executed = tmp_path / "out" / "broken.ipynb"
    assert str(nb) in msg and str(executed) in msg
    assert "RuntimeError" in msg and "boom at level 8" in msg and "In [" in msg
    out = nbformat.read(str(executed), as_version=4)
    assert out.metadata["workbench"]["status"] == "failed"
    texts = json.dumps([c.get("outputs", []) for c in out.cells])
    assert "before the failure" in texts and "never" not in texts
    html = (tmp_path / "out" / "broken.html").read_text()
    assert "boom at level 8" in html and "FAILED" in html


def test_unknown_parameter_is_refused_before_running(tmp_path: Path, write_notebook) -> None:
    nb = write_notebook(tmp_path / "p.ipynb", parameters=PARAMETERS, cells=["raise SystemError('must not run')"])
    with pytest.raises(ConfigError) as info:
        run_notebook(nb, out_dir=tmp_path / "out", parameters={"concurency_levels": [1]})
    msg = str(info.value)
    assert "has no parameter 'concurency_levels'" in msg and "add the name to" in msg
    for known in ("concurrency_levels", "requests_per_level", "host"):
        assert known in msg
    assert not (tmp_path / "out").exists()  # nothing ran, nothing written
    assert isinstance(info.value, WorkbenchError)


def test_notebook_without_parameters_cell_says_so(tmp_path: Path, write_notebook) -> None:
    nb = write_notebook(tmp_path / "plain.ipynb", cells=["x = 1"])
    assert notebook_parameters(nb) == {}
    with pytest.raises(ConfigError, match="no cell tagged 'parameters'"):
        run_notebook(nb, out_dir=tmp_path / "out", parameters={"x": 2})


def test_out_dir_equal_to_notebook_folder_is_refused(tmp_path: Path, write_notebook) -> None:
    nb = write_notebook(tmp_path / "same.ipynb", parameters="x = 1")
    with pytest.raises(ConfigError, match="overwrite"):
        run_notebook(nb, out_dir=tmp_path)


def test_notebook_parameters_reads_the_cell(tmp_path: Path, write_notebook) -> None:
    declared = notebook_parameters(write_notebook(tmp_path / "p.ipynb", parameters=PARAMETERS))
    assert list(declared) == ["concurrency_levels", "requests_per_level", "host", "report_dir"]
    assert declared["concurrency_levels"].default == "[1, 2]"
    assert "default [1, 2]" in declared["concurrency_levels"].describe()


def test_missing_notebook_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="does not exist"):
        run_notebook(tmp_path / "nope.ipynb", out_dir=tmp_path / "out")


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("8", 8),
        ("[1,2,4]", [1, 2, 4]),
        ("0.5", 0.5),
        ("myalias", "myalias"),
        ("true", True),
        ("null", None),
        ("2024-05-01", "2024-05-01"),  # dates stay strings
        ("0.5.9", "0.5.9"),
        ("{a: 1}", {"a": 1}),
    ],
)
def test_parse_param_value_as_yaml(text: str, value: object) -> None:
    assert parse_param_value(text) == value


def test_bad_yaml_value_and_bad_name_are_config_errors() -> None:
    with pytest.raises(ConfigError, match="not valid YAML"):
        parse_param_value("[1, 2")
    with pytest.raises(ConfigError, match="identifier"):
        parse_param_pairs([("1abc", "2")])


def test_params_file_and_cli_override(tmp_path: Path) -> None:
    f = tmp_path / "p.yaml"
    f.write_text("requests_per_level: 4\nconcurrency_levels: [1, 2]\nday: 2024-05-01\n")
    merged = {**load_params_file(f), **parse_param_pairs([("requests_per_level", "8")])}
    assert merged == {"requests_per_level": 8, "concurrency_levels": [1, 2], "day": "2024-05-01"}
    (tmp_path / "list.yaml").write_text("- 1\n- 2\n")
    with pytest.raises(ConfigError, match="mapping"):
        load_params_file(tmp_path / "list.yaml")
    with pytest.raises(ConfigError, match="cannot read"):
        load_params_file(tmp_path / "missing.yaml")
    (tmp_path / "empty.yaml").write_text("")
    assert load_params_file(tmp_path / "empty.yaml") == {}


def test_distribute_parameters_gives_each_notebook_its_own(tmp_path: Path, write_notebook) -> None:
    a = write_notebook(tmp_path / "a.ipynb", parameters="host = 'local'\nseed = 0")
    b = write_notebook(tmp_path / "b.ipynb", parameters="seed = 0\nlevels = [1]")
    declared = {a: notebook_parameters(a), b: notebook_parameters(b)}
    plan = distribute_parameters(declared, {"host": "gpu1", "seed": 3, "report_dir": "/r"})
    assert plan == {a: {"host": "gpu1", "seed": 3, "report_dir": "/r"}, b: {"seed": 3, "report_dir": "/r"}}
    with pytest.raises(ConfigError) as info:
        distribute_parameters(declared, {"hots": "x"})
    assert "'hots'" in str(info.value) and "levels" in str(info.value) and "a.ipynb" in str(info.value)
    assert "no notebook declares parameter 'hots'. 'hots': did you mean 'host'?" in str(info.value)
    assert "declares it." in str(info.value) and "  a.ipynb: host, seed\n" in str(info.value)
    with pytest.raises(ConfigError) as info:
        distribute_parameters(declared, {"requests_per_level": 8, "concurrency_levels": [1]})
    assert "no notebook declares parameters 'requests_per_level' or 'concurrency_levels'." in str(info.value)
    assert "declares them." in str(info.value)


def test_default_notebook_order(tmp_path: Path, write_notebook) -> None:
    for name in ("zeta", "spec_vs_baseline", "alpha", "inspect_source"):
        write_notebook(tmp_path / f"{name}.ipynb")
    (tmp_path / ".ipynb_checkpoints").mkdir()
    write_notebook(tmp_path / ".ipynb_checkpoints" / "alpha-checkpoint.ipynb")
    assert [p.name for p in default_notebooks(tmp_path)] == [
        *NOTEBOOK_ORDER,
        "alpha.ipynb",
        "zeta.ipynb",
    ]
    with pytest.raises(ConfigError, match="no notebooks"):
        default_notebooks(tmp_path / ".ipynb_checkpoints" / "none")


def test_external_resources_finds_remote_fetches_but_not_links() -> None:
    page = """<html><head>
    <script src="https://cdn.example/require.js"></script>
    <link rel="stylesheet" href="//fonts.example/css">
    <style>@import "https://x.example/a.css"; body { background: url(http://x.example/b.png) }</style>
    </head><body>
    <a href="https://github.com/sgl-project/sglang">SGLang</a>
    <img src="data:image/png;base64,AAAA"><img src="local.png">
    <script>import("https://esm.example/mermaid.mjs")</script>
    <script type="application/json">{"$schema": "https://vega.github.io/schema/vega/v6.json"}</script>
    <svg xmlns="http://www.w3.org/2000/svg"><image href="https://x.example/c.png"/></svg>
    </body></html>"""
    found = external_resources(page)
    assert len(found) == 6, found
    assert not any("github.com" in f or "schema" in f for f in found)


def test_inline_svg_scopes_ids() -> None:
    svg = '<?xml version="1.0"?><svg><clipPath id="clip1"/><g clip-path="url(#clip1)"/><use href="#clip1"/></svg>'
    out = inline_svg(svg, "c7")
    assert out.startswith("<svg") and 'id="c7-clip1"' in out and "url(#c7-clip1)" in out
    assert 'href="#c7-clip1"' in out and 'id="clip1"' not in out


def _chart() -> alt.Chart:
    df = pd.DataFrame({"concurrency": [1, 2, 4], "output_tok_s": [93.0, 180.0, 300.0]})
    return alt.Chart(df).mark_bar().encode(x="concurrency:O", y="output_tok_s:Q")


def test_offline_renderer_bundle() -> None:
    previous = alt.renderers.active
    try:
        enable_offline_renderer()
        enable_offline_renderer()  # idempotent
        assert alt.renderers.active == RENDERER_NAME
        bundle = alt.renderers.get()(_chart().to_dict())
    finally:
        alt.renderers.enable(previous)
    data = bundle[0] if isinstance(bundle, tuple) else bundle
    assert data["image/svg+xml"].lstrip().startswith("<svg")
    vegalite = [k for k in data if k.startswith("application/vnd.vegalite.v")]
    assert vegalite and data[vegalite[0]]["mark"]["type"] == "bar"
    if alt.SCHEMA_VERSION.startswith("v6"):
        assert data["application/vnd.vega.v5+json"]["marks"]
    assert chart_mimebundle(_chart().to_dict()).keys() == data.keys()


def test_save_chart_png_and_svg(tmp_path: Path) -> None:
    files = save_chart(_chart(), tmp_path / "charts", "bars")
    assert set(files) == {"png", "svg"}
    assert files["png"] == (tmp_path / "charts" / "bars.png").resolve()
    assert files["png"].read_bytes()[:4] == b"\x89PNG" and files["svg"].read_text().startswith("<svg")
    assert save_chart(_chart(), tmp_path, "only", formats=("svg",)).keys() == {"svg"}
    with pytest.raises(ConfigError):
        save_chart(_chart(), tmp_path, "../escape")
    with pytest.raises(ConfigError):
        save_chart(_chart(), tmp_path, "x", formats=("pdf",))  # type: ignore[arg-type]


def test_save_chart_bad_spec_is_a_report_error(tmp_path: Path) -> None:
    spec = {"$schema": _chart().to_dict()["$schema"], "data": {"values": []}, "mark": "no-such-mark"}
    with pytest.raises(ReportError, match="vl-convert"):
        save_chart(spec, tmp_path, "bad")


def test_unknown_kernel_is_a_report_error(tmp_path: Path, write_notebook) -> None:
    nb = write_notebook(tmp_path / "k.ipynb", parameters="x = 1")
    with pytest.raises(ReportError, match="no Jupyter kernel named 'no-such-kernel'"):
        run_notebook(nb, out_dir=tmp_path / "out", kernel_name="no-such-kernel")


def test_cell_timeout_is_a_report_error(tmp_path: Path, write_notebook) -> None:
    nb = write_notebook(tmp_path / "slow.ipynb", parameters="x = 1", cells=["import time; time.sleep(60)"])
    with pytest.raises(ReportError, match="cell timeout") as info:
        run_notebook(nb, out_dir=tmp_path / "out", cell_timeout_s=1)
    assert str(tmp_path / "out" / "slow.html") in str(info.value)


def test_report_dir_injected_but_not_created_when_undeclared(tmp_path: Path, write_notebook) -> None:
    nb = write_notebook(
        tmp_path / "nb" / "plain.ipynb", parameters="x = 1", cells=["assert report_dir.endswith('plain')"]
    )
    result = run_notebook(nb, out_dir=tmp_path / "out")
    assert result.parameters["report_dir"] == str(tmp_path / "out" / "plain")
    assert not result.report_dir.exists() and result.charts == ()


def test_chart_without_offline_renderer_is_refused(tmp_path: Path, write_notebook) -> None:
    nb = write_notebook(
        tmp_path / "cdn.ipynb",
        parameters="x = 1",
        cells=["import altair as alt, pandas as pd\nalt.Chart(pd.DataFrame({'a': [1, 2]})).mark_bar().encode(x='a')"],
    )
    with pytest.raises(ReportError, match="enable_offline_renderer") as info:
        run_notebook(nb, out_dir=tmp_path / "out")
    assert "cdn.jsdelivr.net" in str(info.value)
    assert (tmp_path / "out" / "cdn.html").is_file()  # kept for inspection


def test_progress_tail_prints_lines_while_running(tmp_path: Path) -> None:
    import io
    import threading
    import time

    from workbench.report import ProgressTail

    stream = io.StringIO()
    path = tmp_path / "progress"
    with ProgressTail(path, stream=stream, interval_s=0.05):
        with open(path, "a", encoding="utf-8") as f:
            f.write("baseline: concurrency 1 done (1/2): 93 output tok/s\nhalf a li")
        deadline = time.monotonic() + 10
        while "concurrency 1 done" not in stream.getvalue() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert (
            stream.getvalue() == "  baseline: concurrency 1 done (1/2): 93 output tok/s\n"
        )  # live, and whole lines only
        with open(path, "a", encoding="utf-8") as f:
            f.write("ne\n")
    assert stream.getvalue().splitlines()[-1] == "  half a line"
    assert not path.exists() and threading.active_count() >= 1


PROGRESS_CELL = """\
import os
from workbench.report import report_progress, reporting_progress
assert reporting_progress()
report_progress("eagle3: concurrency 8 done (2/2): 299 output tok/s")"""


def test_report_progress_reaches_the_terminal_and_kernels_print_no_warning(
    tmp_path: Path, write_notebook, capfd: pytest.CaptureFixture[str]
) -> None:
    from workbench.report import PROGRESS_FILE_ENV, report_progress

    nb = write_notebook(tmp_path / "nb" / "p.ipynb", setup=["x = 1"], parameters="n = 1\n", cells=[PROGRESS_CELL])
    run_notebook(nb, out_dir=tmp_path / "out", progress=True)
    err = capfd.readouterr().err
    assert "  eagle3: concurrency 8 done (2/2): 299 output tok/s\n" in err
    assert "running over TCP" not in err and "WARNING" not in err  # the kernel runs over IPC
    assert PROGRESS_FILE_ENV not in __import__("os").environ and report_progress("x") is False
    assert not list((tmp_path / "out").glob(".*progress"))


KERNEL_BARS_CELL = """\
import sys
from workbench.report import progress_bars
assert not sys.stderr.isatty()  # a kernel's stderr is no terminal, yet its bars are widgets
assert progress_bars(None) is True"""


def test_a_jupyter_kernel_draws_bars_by_default(tmp_path: Path, write_notebook) -> None:
    # progress=False: no `workbench report` lines, so the kernel is like one JupyterLab started
    nb = write_notebook(tmp_path / "nb" / "k.ipynb", setup=["x = 1"], parameters="n = 1\n", cells=[KERNEL_BARS_CELL])
    run_notebook(nb, out_dir=tmp_path / "out", progress=False)


def test_html_hides_parameters_code_and_folds_the_parameters(demo: ReportResult) -> None:
    page = demo.html.read_text(encoding="utf-8")
    assert "levels to sweep" not in page  # the parameters cell's code: its values are in the header
    assert re.search(r"<details><summary>Parameters: 3 given, 1 at their defaults</summary>", page)
    assert "concurrency_levels=[1, 2, 4]" in html.unescape(page)


def test_cell_watch_names_a_long_cell_once_and_drops_cell_output() -> None:
    import logging

    from workbench.report import CellWatch
    from workbench.report._progress import executed_sources

    now = [100.0]
    nb = nbformat.v4.new_notebook(
        cells=[
            nbformat.v4.new_markdown_cell("# Title"),
            nbformat.v4.new_code_cell("n = 1", metadata={"tags": ["parameters"]}),
            nbformat.v4.new_code_cell(
                "import workbench as wb\n\nwb.setup_notebook()\nruns = wb.benchmark_variants(\n    x)"
            ),
        ]
    )
    sources = executed_sources(nb.cells)
    assert sources[0] is None and sources[2].startswith("# Parameters") and len(sources) == 4
    watch = CellWatch(sources, after_s=5.0, clock=lambda: now[0])
    log = logging.getLogger("test-cell-watch")
    log.propagate = False
    log.addHandler(watch)
    log.setLevel(logging.INFO)
    try:
        assert watch.due() is None  # nothing started
        log.info("Executing Cell 4---------------------------------------")
        log.warning("some output of the cell on stderr")  # dropped
        now[0] += 4.0
        assert watch.due() is None  # short so far: quiet
        now[0] += 2.0
        assert watch.due() == "cell 4/4 running for 6 s: runs = wb.benchmark_variants("
        now[0] += 60.0
        assert watch.due() is None  # named once
        log.info("Ending Cell 4------------------------------------------")
        log.info("Executing Cell 1---------------------------------------")
        now[0] += 60.0
        assert watch.due() is None  # a markdown cell is never named
        log.info("Ending Cell 1------------------------------------------")
        now[0] += 60.0
        assert watch.due() is None  # between cells (or after the last): nothing runs
    finally:
        log.removeHandler(watch)


def test_a_failing_cell_is_named_by_the_line_it_failed_at() -> None:
    from workbench.report._kernel_run import _failing_line

    source = "import workbench as wb\n\nwb.setup_notebook()\nif from_runs:\n    runs = wb.stored_runs(from_runs)\n"
    # IPython 8 colours its traceback; the cell's own frame says which line raised
    traceback = [
        "\x1b[0;31mConfigError\x1b[0m    Traceback (most recent call last)",
        "Cell \x1b[0;32mIn[3], line 5\x1b[0m\n\x1b[1;32m      4\x1b[0m if from_runs:",
        "File \x1b[0;32m/x/workbench/sweeps/_catalogue.py:66\x1b[0m, in \x1b[0;36mstored_runs\x1b[0m",
    ]
    assert _failing_line(source, traceback) == "runs = wb.stored_runs(from_runs)"
    assert _failing_line(source, None) == "import workbench as wb"  # no frame: the cell's first line
    assert _failing_line(source, ["Cell In[3], line 99"]) == "import workbench as wb"  # out of range


def test_cli_page_shows_no_plumbing_keeps_a_failing_cells_source_and_writes_an_index(
    tmp_path: Path, write_notebook
) -> None:
    """`workbench report`: no In/Out prompts or passing code on the page, a failing cell's source kept, index.html."""
    folder = tmp_path / "nbs"
    passing = write_notebook(
        folder / "passing.ipynb",
        parameters="level = 4",
        cells=["secret_plumbing_total = level * 25\nsecret_plumbing_total", "print('printed by a passing cell')"],
    )
    node = nbformat.read(str(passing), as_version=4)
    node.cells[0].source = "# Does level 4 reach 100?\n\nThe opening paragraph: what this report answers."
    nbformat.write(node, str(passing))
    told = write_notebook(
        folder / "told.ipynb",
        parameters="level = 2",
        cells=[
            "from IPython.display import Markdown, display\n"
            "display(Markdown('**In short** — level 2 is *enough*.\\n\\nDetails follow.'))"
        ],
    )
    broken = write_notebook(
        folder / "broken.ipynb",
        parameters="level = 4",
        cells=["before_failure_value = 1", "raise RuntimeError(f'boom_at_level_{level}')"],
    )
    out = tmp_path / "out"
    cmd = [
        str(Path(sys.executable).parent / "workbench"),
        "report",
        str(passing),
        str(told),
        str(broken),
        "-o",
        str(out),
    ]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=420)
    assert done.returncode == 1, done.stdout + done.stderr  # the broken notebook failed, the others did not

    page = (out / "passing.html").read_text(encoding="utf-8").split("<body", 1)[1]  # not the CSS's comments
    assert "100" in page and "printed by a passing cell" in page  # outputs stay
    assert "In&nbsp;[" not in page and "In [" not in page and "Out[" not in page and "Out&nbsp;[" not in page
    assert "jp-InputPrompt" not in page and "jp-OutputPrompt" not in page
    assert "secret_plumbing_total" not in page  # a passing cell's source is not shown
    assert "level = 4" not in page  # nor the parameters cell's (the header lists them)

    failed = (out / "broken.html").read_text(encoding="utf-8").split("<body", 1)[1]
    assert "FAILED" in failed and "boom_at_level_4" in failed
    shown = html.unescape(re.sub(r"<[^>]+>", "", failed))  # the text a reader sees (source is highlighted)
    assert "raise RuntimeError(f'boom_at_level_{level}')" in shown  # the failing cell's source, with its traceback
    assert "before_failure_value" not in failed  # the cell before it passed: hidden
    assert "In&nbsp;[" not in failed and "In [" not in failed

    index = out / "index.html"
    assert index.is_file() and f"index:    {index}" in done.stdout
    text = index.read_text(encoding="utf-8")
    assert external_resources(text) == []
    assert 'href="passing.html"' in text and 'href="told.html"' in text and 'href="broken.html"' in text
    assert str(out) not in text  # links are relative
    assert "Does level 4 reach 100?" in text and "The opening paragraph: what this report answers." in text
    assert "level 2 is enough." in text and "Details follow" not in text  # the In short paragraph, as plain text
    assert "FAILED" in text and "can disagree" in text
