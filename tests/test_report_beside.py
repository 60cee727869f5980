"""Notebooks that measure nothing run side by side under ``workbench report``, each with a kernel of its own."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import nbformat

from workbench.report import MEASURES_KEY, measures, split_by_measuring

#: A cell that records when it ran and the kernel's IPC socket prefix (its connection file's "ip"); with a
#: ``partner`` it then waits (at most 240 s) until the partner notebook's cell has started, so that two
#: notebooks run at once are seen to overlap however late a loaded machine starts their SCHED_IDLE kernels
#: (a fixed 3 s sleep missed it at a load of 15), while two run one after another cannot both see each other.
RECORD_CELL = """\
import json, os, time
from ipykernel import get_connection_info
from workbench.report import report_progress
started = time.time()
open(record + ".started", "w").close()
report_progress(f"{name} working")
saw_partner = None
if partner:
    deadline = time.time() + 240
    while not os.path.exists(partner + ".started") and time.time() < deadline:
        time.sleep(0.1)
    saw_partner = os.path.exists(partner + ".started")
info = json.loads(get_connection_info())
with open(record, "w") as f:
    json.dump({"start": started, "end": time.time(), "ip": info["ip"], "transport": info["transport"],
               "policy": os.sched_getscheduler(0), "saw_partner": saw_partner}, f)"""


def _mark(path: Path, measures_value: bool | None) -> Path:
    nb = nbformat.read(str(path), as_version=4)
    if measures_value is not None:
        nb.metadata[MEASURES_KEY] = {"measures": measures_value}
    nbformat.write(nb, str(path))
    return path


def test_only_a_notebook_that_says_so_measures_nothing(tmp_path: Path, write_notebook) -> None:
    said_no = _mark(write_notebook(tmp_path / "a.ipynb", cells=["1"]), False)
    said_yes = _mark(write_notebook(tmp_path / "b.ipynb", cells=["1"]), True)
    silent = _mark(write_notebook(tmp_path / "c.ipynb", cells=["1"]), None)
    assert [measures(p) for p in (said_no, said_yes, silent)] == [False, True, True]
    # one notebook that measures nothing gains nothing from a process of its own: all run one at a time
    assert split_by_measuring([said_no, said_yes, silent]) == ([], [said_no, said_yes, silent])
    other = _mark(write_notebook(tmp_path / "d.ipynb", cells=["1"]), False)
    assert split_by_measuring([said_yes, said_no, silent, other]) == ([said_no, other], [said_yes, silent])


def test_shipped_notebooks_that_measure_run_alone() -> None:
    root = Path(__file__).resolve().parents[1] / "notebooks"
    alone = {p.name for p in root.glob("*.ipynb") if measures(p)}
    assert alone == {"spec_vs_baseline.ipynb", "dynamic_disable.ipynb"}


def test_two_notebooks_run_at_once_on_spare_cpu_each_with_its_own_kernel_sockets(
    tmp_path: Path, write_notebook
) -> None:
    folder = tmp_path / "nbs"  # one folder for both: papermill runs both kernels from it
    books = []
    for name in ("first", "second", "measuring"):  # the third says nothing: it measures, in the CLI's process
        partner_name = {"first": "second", "second": "first"}.get(name, "")
        nb = write_notebook(
            folder / f"{name}.ipynb",
            parameters=f"name = {name!r}\npartner_name = {partner_name!r}\nrecord = ''",
            cells=[RECORD_CELL],
        )
        books.append(_mark(nb, False if name != "measuring" else None))
    records = {name: tmp_path / f"{name}.json" for name in ("first", "second", "measuring")}
    # one call of the CLI for both (one -p for both notebooks: each fills in its own name)
    cmd = [
        str(Path(sys.executable).parent / "workbench"),
        "report",
        *map(str, books),
        "-o",
        str(tmp_path / "out"),
        "-p",
        "record",
        str(tmp_path / "{name}.json"),
    ]
    for nb in books:  # the notebook fills in its name
        node = nbformat.read(str(nb), as_version=4)
        node.cells[-1].source = (
            "partner = record.format(name=partner_name) if partner_name else ''\n"
            "record = record.format(name=name)\n" + node.cells[-1].source
        )
        nbformat.write(node, str(nb))
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=420)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "2 notebooks that measure nothing at once, on spare CPU only (beside the others)" in done.stdout
    assert "[first] first working" in done.stderr and "[second] second working" in done.stderr
    assert "Invalid Signature" not in done.stderr
    got = {name: json.loads(path.read_text()) for name, path in records.items()}
    alone = got.pop("measuring")
    assert alone["policy"] == os.SCHED_OTHER  # the measuring notebook keeps its normal priority
    assert got["first"]["saw_partner"] and got["second"]["saw_partner"]  # at once: each waited for the other
    assert got["first"]["start"] < got["second"]["end"] and got["second"]["start"] < got["first"]["end"]
    ips = [Path(r["ip"]) for r in got.values()]
    assert all(r["transport"] == "ipc" for r in got.values())
    assert all(r["policy"] == os.SCHED_IDLE for r in got.values())  # their kernels take spare CPU only
    assert ips[0].parent != ips[1].parent and all(
        ip.is_absolute() and ip.parent.name.startswith("wb-kernel-") for ip in ips
    )
    assert not any(ip.parent.exists() for ip in ips)  # each kernel's socket folder is removed after its run
    assert not list(folder.glob("kernel-ipc*"))
    for name in ("first", "second", "measuring"):
        assert (tmp_path / "out" / f"{name}.html").is_file()
