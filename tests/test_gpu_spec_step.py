"""remote/gpu_spec_step.py: the command line without torch, and, where PyTorch is installed (it is not a
test dependency), the small kernels' maths and a CPU test run of the tiny shapes (never a calibration)."""

from __future__ import annotations

import csv
import subprocess
import sys
from pathlib import Path

import pytest

from blocked_imports import blocking_dir
from torch_programs import needs_torch, run_program

ROOT = Path(__file__).resolve().parents[1]
REMOTE = ROOT / "remote"
SCRIPT = REMOTE / "gpu_spec_step.py"


def _run(*args: str, env: dict | None = None, timeout: float = 300) -> subprocess.CompletedProcess:
    return run_program(SCRIPT, *args, env=env, timeout=timeout)


def test_without_torch_it_refuses_and_says_why(tmp_path: Path) -> None:
    r = _run("--preset", "tiny", "--out", str(tmp_path), env={"PYTHONPATH": str(blocking_dir(tmp_path, ("torch",)))})
    assert r.returncode == 2
    assert "PyTorch is not installed" in r.stderr


@pytest.mark.parametrize(
    "args, message",
    [
        (["--families", "kernels,bogus"], "unknown --families bogus"),
        (["--batches", "1,x"], "comma-separated integers"),
        (["--batches", "0"], "positive integers"),
        (["--step-shapes", "chain3,tree-9x9-81"], "--step-shapes takes names of chain3, chain7"),
        (["--step-shapes", ""], "--step-shapes takes names of"),
    ],
)
def test_bad_requests_are_refused(tmp_path: Path, args: list[str], message: str) -> None:
    r = _run("--out", str(tmp_path), *args)
    assert r.returncode == 2 and message in r.stderr


def test_a_preset_without_a_draft_is_refused(tmp_path: Path) -> None:
    r = _run("--preset", "qwen3-30b-a3b", "--out", str(tmp_path))
    assert r.returncode == 2 and "one with a draft" in r.stderr


# -- the torch path, on a CPU -----------------------------------------------------------------------
@needs_torch
def test_greedy_verification_accepts_the_longest_right_path() -> None:
    import torch

    sys.path.insert(0, str(REMOTE))
    import _gpu_spec_kernels as sk

    parent, anc = sk.chain_tree(2, 4, "cpu")
    tokens = torch.tensor([[0, 3, 5, 7], [0, 1, 2, 3]])
    logits = torch.zeros(8, 10)
    for row, tok in enumerate([3, 5, 9, 4, 8, 1, 1, 1]):  # request 0 predicts 3, 5, then 9 (rejects 7)
        logits[row, tok] = 1.0
    length, best, nxt = sk.verify_greedy(logits, tokens, parent, anc)
    assert length.tolist() == [3, 1] and best.tolist() == [2, 0] and nxt.tolist() == [9, 8]
    r2t = torch.zeros((2, 10), dtype=torch.int32)
    loc = torch.arange(8, dtype=torch.int32).view(2, 4) + 100
    accepted, free = sk.kv_accept(r2t, loc, best, anc, torch.tensor([4, 4]))
    assert accepted.tolist() == [[True, True, True, False], [True, False, False, False]]
    assert r2t[0, 4:7].tolist() == [100, 101, 102] and r2t[1, 4].item() == 104 and int(free.sum()) == 4


@needs_torch
def test_tree_building_keeps_parents_depths_and_the_mask() -> None:
    import torch

    sys.path.insert(0, str(REMOTE))
    import _gpu_spec_kernels as sk

    scores = torch.tensor([[0.5, 0.8, 0.04, 0.07, 0.15, 0.3]])  # root's 2 children, then node 1's 4 children
    tokens = torch.arange(6).view(1, 6) + 10
    parents = torch.tensor([[-1, -1, 1, 1, 1, 1]])
    drafts, parent, anc, positions, full = sk.tree_build(scores, tokens, parents, 4, 3)
    assert drafts.tolist() == [[0, 10, 11, 15]] and parent.tolist() == [[0, 0, 0, 2]]
    assert positions.tolist() == [[3, 4, 4, 5]] and full.shape == (1, 4, 7) and bool(full[0, :, :3].all())
    assert anc[0, 3].tolist() == [True, False, True, True]


@needs_torch
def test_a_cpu_run_writes_a_table_that_is_never_a_calibration(tmp_path: Path) -> None:
    from workbench.errors import ConfigError
    from workbench.sim._spec_kernels import SpecKernelCosts

    r = _run(
        "--preset",
        "tiny",
        "--device",
        "cpu",
        "--batches",
        "1,2",
        "--reps",
        "2",
        "--warmup",
        "1",
        "--context",
        "8",
        "--out",
        str(tmp_path),
    )
    assert r.returncode == 0, r.stderr
    with (tmp_path / "spec_step.csv").open() as fh:
        rows = list(csv.DictReader(fh))
    families = {(r["family"], r["part"]) for r in rows}
    assert ("spec", "whole") in families and ("decode", "step") in families and ("kernels", "tree_build") in families
    assert all("NOT a calibration" in r["timer"] for r in rows)
    with pytest.raises(ConfigError, match="never a calibration"):
        SpecKernelCosts(tmp_path / "spec_step.csv")
