"""The GPU driver's deadline (benchmarks/real_sglang_gpu.py): past it, ``workbench bench`` is interrupted as Ctrl-C
would, so that it stops the server it started; a plain kill (what the driver did first) left the SGLang server of
the level in progress running on the H100, 2026-12-06, until the host-side watchdog's lease ran out."""

from __future__ import annotations

import importlib.util
import sys
import time
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[1] / "benchmarks" / "real_sglang_gpu.py"


@pytest.fixture(scope="module")
def driver():
    spec = importlib.util.spec_from_file_location("real_sglang_gpu_under_test", SCRIPT)
    module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return module


#: A child that answers Ctrl-C by "stopping its server" (writing a line) and exiting 130, as `workbench bench` does.
#: Shells, which set their traps within milliseconds: a Python child on a loaded machine could still be starting
#: when the interrupt came (before its handler was set), and died of it instead.
POLITE = ["sh", "-c", "trap 'kill $child; echo stopped my server; exit 130' INT; sleep 60 & child=$!; wait"]
#: A child that ignores Ctrl-C: killed after the grace period.
DEAF = ["sh", "-c", 'trap "" INT; exec sleep 60']  # the ignored signal stays ignored across exec
#: Seconds before the interrupt: the traps are set long before it, even on a loaded machine.
DEADLINE_S = 3.0


def test_past_the_deadline_the_bench_is_interrupted_and_may_clean_up(driver, tmp_path) -> None:
    out = tmp_path / "out.log"
    t0 = time.monotonic()
    with open(out, "w") as fh:
        rc = driver.run_interruptibly(POLITE, stdout=fh, timeout_s=DEADLINE_S)
    assert rc == 130 and out.read_text() == "stopped my server\n"
    assert time.monotonic() - t0 < 20


def test_a_bench_that_ignores_the_interrupt_is_killed_after_the_grace(driver, tmp_path, monkeypatch) -> None:
    monkeypatch.setattr(driver, "INTERRUPT_GRACE_S", 1.0)
    with open(tmp_path / "out.log", "w") as fh:
        rc = driver.run_interruptibly(DEAF, stdout=fh, timeout_s=DEADLINE_S)
    assert rc == -9


def test_a_bench_that_ends_in_time_keeps_its_status(driver, tmp_path) -> None:
    with open(tmp_path / "out.log", "w") as fh:
        assert driver.run_interruptibly([sys.executable, "-c", "raise SystemExit(3)"], stdout=fh, timeout_s=30) == 3
