"""JupyterLab in a real browser: dynamic_disable.ipynb runs, its panel's threshold slider redraws the chart.

A real JupyterLab server (the venv's, as ``make lab`` starts it) on 127.0.0.1 with a token, driven by
Debian's chromium through the ``playwright`` package (pointed at ``/usr/bin/chromium``: no browser
download). The notebook is a copy of ``notebooks/dynamic_disable.ipynb`` with a parameters cell injected
as papermill does it, reading a stored study (``tests/fixtures/dynamic_disable``, made by a real
sweep of the simulated engine: see its README) instead of sweeping. The test runs all cells, checks that
the progress bars are widgets, moves the threshold slider with the keyboard, checks that the chart and the
gain table are redrawn in the DOM for the new threshold, and saves a screenshot under the test's tmp dir.
"""

from __future__ import annotations

import os
import re
import secrets
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import nbformat
import pytest
from browser import CHROMIUM

ROOT = Path(__file__).resolve().parents[1]
FIXTURE = ROOT / "tests" / "fixtures" / "dynamic_disable" / "policies"

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(not CHROMIUM.exists(), reason="chromium is not installed (make test installs it)"),
]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def lab(tmp_path: Path):
    """A JupyterLab server on loopback serving a parameterized copy of the notebook: (base url, token, folder)."""
    pytest.importorskip("playwright")
    folder = tmp_path / "lab"
    folder.mkdir()
    nb = nbformat.read(ROOT / "notebooks" / "dynamic_disable.ipynb", as_version=4)
    # as papermill injects parameters: a tagged cell right after the "parameters" cell
    at = next(i for i, c in enumerate(nb.cells) if "parameters" in c.metadata.get("tags", []))
    values = {"stored_study": str(FIXTURE), "report_dir": str(tmp_path / "charts")}
    nb.cells.insert(
        at + 1,
        nbformat.v4.new_code_cell(
            "\n".join(f"{k} = {v!r}" for k, v in values.items()), metadata={"tags": ["injected-parameters"]}
        ),
    )
    nbformat.write(nb, folder / "dynamic_disable.ipynb")
    port, token = _free_port(), secrets.token_hex(16)
    env = {
        **os.environ,
        "JUPYTER_CONFIG_DIR": str(tmp_path / "jcfg"),
        "JUPYTER_RUNTIME_DIR": str(tmp_path / "jrt"),
        "JUPYTERLAB_SETTINGS_DIR": str(tmp_path / "jset"),
        "JUPYTERLAB_WORKSPACES_DIR": str(tmp_path / "jws"),
        "PYTHONPATH": str(ROOT),
    }
    log = (tmp_path / "lab.log").open("w")
    proc = subprocess.Popen(
        [
            str(Path(sys.executable).parent / "jupyter"),
            "lab",
            "--no-browser",
            "--ServerApp.ip=127.0.0.1",
            f"--ServerApp.port={port}",
            "--ServerApp.port_retries=0",
            f"--IdentityProvider.token={token}",
            f"--ServerApp.root_dir={folder}",
            "--LabApp.expose_app_in_browser=True",
            "--LabApp.news_url=",
            "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
            "--LabApp.extension_manager=readonly",
            *(["--allow-root"] if os.geteuid() == 0 else []),
        ],
        cwd=ROOT,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                with urllib.request.urlopen(f"{base}/api/status?token={token}", timeout=2) as r:
                    if r.status == 200:
                        break
            except OSError:
                pass
            if proc.poll() is not None or time.monotonic() > deadline:
                raise AssertionError(f"JupyterLab did not start: {(tmp_path / 'lab.log').read_text()[-3000:]}")
            time.sleep(0.3)
        yield base, token, folder
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()
        shutil.rmtree(tmp_path / "jrt", ignore_errors=True)


def test_dynamic_disable_panel_redraws_in_chromium(lab, tmp_path: Path) -> None:
    from playwright.sync_api import sync_playwright

    base, token, _ = lab
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=str(CHROMIUM), args=["--no-sandbox", "--disable-gpu"])
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            page.goto(f"{base}/lab/tree/dynamic_disable.ipynb?token={token}")
            page.wait_for_function(
                "() => window.jupyterapp && window.jupyterapp.shell.currentWidget"
                " && window.jupyterapp.shell.currentWidget.sessionContext"
                " && window.jupyterapp.shell.currentWidget.sessionContext.session"
                " && window.jupyterapp.shell.currentWidget.sessionContext.session.kernel"
                " && window.jupyterapp.shell.currentWidget.sessionContext.session.kernel.status"
                " === 'idle'",
                timeout=60_000,
            )
            page.evaluate("window.jupyterapp.commands.execute('notebook:run-all-cells')")
            # the panel's gain table names the threshold; the chart draws "no drafting above N"
            first = page.locator(".wb-threshold").first
            first.wait_for(timeout=120_000)
            errors = page.locator(
                ".jp-OutputArea-output[data-mime-type='application/vnd.jupyter.stderr'] >> text=Traceback"
            )
            assert errors.count() == 0
            before = first.inner_text()
            n_before = int(re.search(r"above (\d+)", before).group(1))
            # tqdm.auto: progress bars are widgets in JupyterLab (text under papermill)
            assert page.locator(".widget-hprogress").count() >= 1
            chart_text = page.locator(".jp-OutputArea-output").filter(has_text=f"no drafting above {n_before}")
            assert chart_text.count() >= 1
            handle = page.locator(".widget-slider .noUi-handle").first
            handle.scroll_into_view_if_needed()
            handle.focus()
            page.keyboard.press("ArrowLeft")
            page.wait_for_function(
                "n => { const p = document.querySelector('.wb-threshold');"
                " return p && !p.innerText.includes('above ' + n + ' '); }",
                arg=n_before,
                timeout=30_000,
            )
            after = page.locator(".wb-threshold").first.inner_text()
            n_after = int(re.search(r"above (\d+)", after).group(1))
            assert n_after < n_before
            page.locator(".jp-OutputArea-output").filter(has_text=f"no drafting above {n_after}").first.wait_for(
                timeout=30_000
            )
            shot = tmp_path / "dynamic_disable_lab.png"
            page.screenshot(path=str(shot), full_page=False)
            assert shot.stat().st_size > 20_000
        finally:
            browser.close()
