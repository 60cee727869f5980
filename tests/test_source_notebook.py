"""notebooks/inspect_source.ipynb: committed clean, runs under papermill, exports to offline HTML."""

from __future__ import annotations

import html
import re
from pathlib import Path

import nbformat
import papermill
from nbconvert import HTMLExporter

NOTEBOOK = Path(__file__).resolve().parent.parent / "notebooks" / "inspect_source.ipynb"


def test_notebook_is_committed_without_outputs_and_parameterised() -> None:
    nb = nbformat.read(NOTEBOOK, as_version=4)
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert "parameters" in code[0].metadata.get("tags", [])
    for name in ("function_name", "sglang_versions", "host", "tree", "history_versions", "include_prereleases"):
        assert re.search(rf"^{name} = ", code[0].source, re.M)
    assert all(c.outputs == [] and c.execution_count is None for c in code)


def test_notebook_runs_and_its_html_report_keeps_indentation(tmp_path: Path) -> None:
    out = tmp_path / "inspect.ipynb"
    papermill.execute_notebook(
        str(NOTEBOOK), str(out), kernel_name="python3", progress_bar=False, cwd=str(NOTEBOOK.parent),
        parameters={"function_name": "EAGLEWorkerV2.forward_batch_generation", "sglang_versions": ["0.5.2", "0.5.9"],
                    "history_versions": ["0.5.2", "0.5.4", "0.5.9"]},
    )  # fmt: skip
    executed = nbformat.read(out, as_version=4)
    assert executed.metadata["papermill"]["parameters"]["history_versions"] == ["0.5.2", "0.5.4", "0.5.9"]
    body, _ = HTMLExporter().from_notebook_node(executed)
    text = html.unescape(re.sub(r"<[^>]+>", "", body))
    assert "EAGLEWorkerV2.forward_batch_generation is not defined in 0.5.2" in text
    # the verdict, written from the tables, comes before them
    verdict = text.index("Verdict — EAGLEWorkerV2.forward_batch_generation read from SGLang's source")
    assert verdict < text.index("Where it is defined")
    assert "Not defined in 0.5.2." in text
    assert "History over 3 selected releases (0.5.2 to 0.5.9): added in 0.5.4; changed in 0.5.9." in text
    # history: absent in 0.5.2, added in 0.5.4, changed by 0.5.9, with a diff pane numbered by the real files
    assert re.search(r"0\.5\.4\s+added\s+srt/speculative/eagle_worker_v2\.py", text)
    assert re.search(r"0\.5\.9\s+changed\s+srt/speculative/eagle_worker_v2\.py", text)
    assert "0.5.4 → 0.5.9 · srt/speculative/eagle_worker_v2.py" in text and "@@ -" in text
    assert "Callers" in text and "No body changed" not in text
    header = re.search(r"0\.5\.9 · srt/speculative/eagle_worker_v2\.py · lines (\d+)-(\d+)", text)
    assert header is not None
    first = int(header.group(1))
    # nbconvert re-serialises outputs with BeautifulSoup; the method body must keep its indentation.
    assert re.search(rf"\n{first}    def forward_batch_generation\(", text)
    assert re.search(rf"\n{first + 1}        ", text)
