"""The small kernels of a speculative step, costed from a table measured on the GPU.

An EAGLE iteration runs, besides the draft and target forwards the roofline costs, a handful of
small kernels whose time is mostly launch and reduction latency: the draft LM head's softmax and
top-k after each draft forward, the tree's candidate selection and construction (``topk > 1``), the
verification over the verify logits, and the accepted tokens' KV bookkeeping. Their costs here are
**measured**, never guessed: ``remote/gpu_spec_step.py`` times PyTorch equivalents of each on the
GPU (CUDA graphs, at batch 1-256 and the shipped chain and tree shapes), and this module
interpolates that table:

| kernel | calls per iteration | size it is interpolated on |
|---|---|---|
| ``draft_topk`` | ``num_steps`` (the draft extend's, then one per draft forward) | rows: ``batch``, then ``batch x topk`` |
| ``tree_select`` | ``num_steps - 1`` when ``topk > 1`` | ``batch`` |
| ``tree_build`` | 1 when ``topk > 1`` | ``batch``, linear in ``num_draft_tokens`` between the measured trees |
| ``verify_greedy`` / ``verify_sampled`` | 1 | verify rows ``batch x num_draft_tokens`` |
| ``kv_accept`` | 1 | ``batch`` |

Interpolation is linear in ``log(size)`` between measured sizes and flat beyond them. The KV move of
accepted tokens (``kv_move``, SGLang 0.5.13+ with topk > 1 and a page size above 1) is in the table
but not charged: the simulator's paged pool at page size 1 moves nothing.

How SGLang's own kernels differ (0.5.9, ``sgl_kernel``): ``build_tree_kernel_efficient`` and
``verify_tree_greedy`` are one CUDA kernel each, so the PyTorch equivalents' chains of small ops
(tree building walks the tree in ``N - 1`` gathers) are upper bounds at small batches; SGLang's
``fast_topk`` for topk 1 is a max, cheaper than ``torch.topk``; and spec v2 fuses topk-1 draft
post-processing (``draft_topk1_postprocess``). The table is an H200's; another GPU needs its own run.
"""

from __future__ import annotations

import bisect
import csv
import math
from pathlib import Path

from workbench.errors import ConfigError

#: The kernels charged per iteration (``kv_move`` is timed but not charged: see the module docstring).
CHARGED = ("draft_topk", "tree_select", "tree_build", "verify", "kv_accept")
#: Verification kernels by sampling regime.
VERIFY_PARTS = {"greedy": "verify_greedy", "sampled": "verify_sampled"}


class _Curve:
    """Milliseconds against a size, linear in log(size) between points, flat outside them."""

    def __init__(self, points: dict[float, list[float]]) -> None:
        pairs = sorted((s, sorted(v)[len(v) // 2]) for s, v in points.items())
        self.logs = [math.log(s) for s, _ in pairs]
        self.ms = [m for _, m in pairs]

    def __call__(self, size: float) -> float:
        x = math.log(max(size, 1e-9))
        i = bisect.bisect_left(self.logs, x)
        if i == 0:
            return self.ms[0]
        if i >= len(self.logs):
            return self.ms[-1]
        x0, x1 = self.logs[i - 1], self.logs[i]
        return self.ms[i - 1] + (self.ms[i] - self.ms[i - 1]) * (x - x0) / (x1 - x0)


class SpecKernelCosts:
    """Per-iteration cost of a speculative step's small kernels, from a ``gpu_spec_step.py`` table.

    Args:
        path: ``spec_step.csv`` (columns ``family``, ``part``, ``topk``, ``num_draft_tokens``, ``batch``,
            ``rows``, ``median_ms``, ``timer``; only ``family == "kernels"`` rows are read).
        verify: ``"greedy"`` or ``"sampled"``: which verification kernel a verify pays.

    Raises:
        ConfigError: a missing or unreadable file, a CPU test table (its timer says so), an unknown
            ``verify``, or a table lacking one of the charged kernels.
    """

    def __init__(self, path: str | Path, *, verify: str = "greedy") -> None:
        if verify not in VERIFY_PARTS:
            raise ConfigError(f"spec_kernels verify must be one of {', '.join(VERIFY_PARTS)}, got {verify!r}")
        self.path, self.verify = Path(path), verify
        try:
            with self.path.open(newline="", encoding="utf-8") as fh:
                rows = [r for r in csv.DictReader(fh) if r.get("family") == "kernels"]
        except OSError as exc:
            raise ConfigError(f"cannot read the spec-kernel table {self.path}: {exc}; run remote/gpu_spec_step.py "
                              "on the GPU and name its spec_step.csv") from exc
        if any("NOT a calibration" in r.get("timer", "") for r in rows):
            raise ConfigError(f"{self.path} was timed on a CPU (a test of the program): it is never a calibration")
        by: dict[str, dict[float, list[float]]] = {}
        trees: dict[int, dict[float, list[float]]] = {}
        try:
            for r in rows:
                part, ms = r["part"], float(r["median_ms"])
                if part == "tree_build":
                    trees.setdefault(int(r["num_draft_tokens"]), {}).setdefault(float(r["batch"]), []).append(ms)
                    continue
                size = float(r["batch"]) if part in ("tree_select", "kv_accept") else float(r["rows"])
                by.setdefault(part, {}).setdefault(size, []).append(ms)
        except (KeyError, ValueError) as exc:
            raise ConfigError(f"{self.path}: a kernels row lacks or garbles {exc}") from exc
        need = ["draft_topk", "tree_select", "kv_accept", VERIFY_PARTS[verify]]
        missing = [p for p in need if p not in by] + ([] if trees else ["tree_build"])
        if missing:
            raise ConfigError(f"{self.path} has no rows for {', '.join(missing)}: rerun remote/gpu_spec_step.py "
                              "with --families kernels")
        self.curves = {p: _Curve(v) for p, v in by.items()}
        self.tree_sizes = sorted(trees)
        self.tree_curves = {n: _Curve(v) for n, v in trees.items()}
        self._memo: dict[tuple[int, int, int, int], dict[str, float]] = {}

    def _tree_build(self, batch: int, n: int) -> float:
        sizes = self.tree_sizes
        if n <= sizes[0] or len(sizes) == 1:
            lo = hi = sizes[0] if n <= sizes[0] else sizes[-1]
        elif n >= sizes[-1]:
            lo, hi = sizes[-2], sizes[-1]
        else:
            i = bisect.bisect_left(sizes, n)
            lo, hi = sizes[i - 1], sizes[i]
        a, b = self.tree_curves[lo](batch), self.tree_curves[hi](batch)
        return a if hi == lo else max(0.0, a + (b - a) * (n - lo) / (hi - lo))

    def parts(self, batch: int, num_steps: int, topk: int, num_draft_tokens: int) -> dict[str, float]:
        """Milliseconds per kernel (:data:`CHARGED`) of one iteration of ``batch`` requests."""
        key = (batch, num_steps, topk, num_draft_tokens)
        out = self._memo.get(key)
        if out is None:
            c = self.curves
            topk_ms = c["draft_topk"](batch) + max(0, num_steps - 1) * c["draft_topk"](batch * topk)
            tree = topk > 1
            out = {"draft_topk": topk_ms,
                   "tree_select": max(0, num_steps - 1) * c["tree_select"](batch) if tree else 0.0,
                   "tree_build": self._tree_build(batch, num_draft_tokens) if tree else 0.0,
                   "verify": c[VERIFY_PARTS[self.verify]](batch * num_draft_tokens),
                   "kv_accept": c["kv_accept"](batch)}
            self._memo[key] = out
        return out

    def step_ms(self, batch: int, num_steps: int, topk: int, num_draft_tokens: int) -> float:
        """Milliseconds of all charged kernels of one iteration."""
        if batch <= 0:
            return 0.0
        return sum(self.parts(batch, num_steps, topk, num_draft_tokens).values())
