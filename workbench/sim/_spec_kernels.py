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
            raise ConfigError(
                f"cannot read the spec-kernel table {self.path}: {exc}; run remote/gpu_spec_step.py "
                "on the GPU and name its spec_step.csv"
            ) from exc
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
            raise ConfigError(
                f"{self.path} has no rows for {', '.join(missing)}: rerun remote/gpu_spec_step.py "
                "with --families kernels"
            )
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
            out = {
                "draft_topk": topk_ms,
                "tree_select": max(0, num_steps - 1) * c["tree_select"](batch) if tree else 0.0,
                "tree_build": self._tree_build(batch, num_draft_tokens) if tree else 0.0,
                "verify": c[VERIFY_PARTS[self.verify]](batch * num_draft_tokens),
                "kv_accept": c["kv_accept"](batch),
            }
            self._memo[key] = out
        return out

    def step_ms(self, batch: int, num_steps: int, topk: int, num_draft_tokens: int) -> float:
        """Milliseconds of all charged kernels of one iteration."""
        if batch <= 0:
            return 0.0
        return sum(self.parts(batch, num_steps, topk, num_draft_tokens).values())


class ExtendAttentionCosts:
    """Per-iteration time of a speculative step's extend attention, measured on the real engine.

    SGLang 0.5.17 with ``--attention-backend triton`` runs the target's verify and the draft's extend through one
    extend kernel (``_fwd_kernel``: one program per request and query head over a padded block of query rows),
    which on one H100 took 6-11 times plain decoding's attention over the same cache (1.8 ms per iteration at
    batch 1, 15.2 ms at batch 64 for Llama-3.1-8B's chain of 3). A roofline that charges the verify's attention
    as the bytes it reads cannot see that, so a profile may name the table the real engine's traces give
    (``benchmarks/real_engine_accuracy.py`` writes it from the calib step's trace summaries: ``kernels.csv``,
    columns ``server``, ``batch``, ``extend_attention_ms``, ``kv_per_request``) and the roofline then charges this
    instead of its own verify attention.

    At each measured batch the kernel's time is **affine in the cache per request**: a fixed part (the query block
    against its own draft tokens under the tree mask, the draft extend's pass, the launch and the programs' tails)
    plus a part that grows with the cached tokens each program loops over. The line is the least-squares fit over
    the model's speculative servers at that batch, chains and trees together (the kernel pads the query rows:
    4-, 8- and 16-token verifies sit within 3% of one line at batch 1 and 8 on the H100), whose profiled waves held
    different caches (their accept lengths differ). Where a batch's rows all hold one cache length, or the line
    would have a negative fixed part, the figure is read as proportional to the cache (a line through zero).

    Args:
        path: the ``kernels.csv`` of a real-engine calibration run.
        servers: the prefix of the speculative servers whose rows are read (one model's, e.g. ``"l8b-"``).

    The fixed part and the slope are interpolated linearly in the batch between the measured batches (the kernel
    runs one program per request and head, so past a full GPU its time grows with the requests, not their
    logarithm), flat below the smallest and extended along the last segment above the largest.

    Raises:
        ConfigError: a missing or unreadable file, or no row of a speculative server with that prefix.
    """

    def __init__(self, path: str | Path, *, servers: str) -> None:
        self.path, self.servers = Path(path), servers
        try:
            with self.path.open(newline="", encoding="utf-8") as fh:
                rows = [r for r in csv.DictReader(fh) if r.get("server", "").startswith(servers)]
        except OSError as exc:
            raise ConfigError(
                f"cannot read the extend-attention table {self.path}: {exc}; run "
                "benchmarks/real_engine_accuracy.py on the real engine's calibration records"
            ) from exc
        by: dict[float, list[tuple[float, float]]] = {}
        try:
            for r in rows:
                ms = float(r["extend_attention_ms"])
                if ms > 0:  # a plain-decoding server has no extend attention in its steps
                    by.setdefault(float(r["batch"]), []).append((float(r["kv_per_request"]), ms))
        except (KeyError, ValueError) as exc:
            raise ConfigError(f"{self.path}: a row lacks or garbles {exc}") from exc
        if not by:
            raise ConfigError(
                f"{self.path} has no speculative server named {servers}*: name the prefix of one "
                "model's servers (for example l8b- or q30b-)"
            )
        self._batches = sorted(by)
        lines = [_affine(by[b]) for b in self._batches]
        self._fixed = [a for a, _ in lines]
        self._slope = [s for _, s in lines]

    def _at(self, values: list[float], batch: float) -> float:
        bs = self._batches
        if batch <= bs[0] or len(bs) == 1:
            return values[0]
        i = min(max(bisect.bisect_left(bs, batch), 1), len(bs) - 1)
        return values[i - 1] + (values[i] - values[i - 1]) * (batch - bs[i - 1]) / (bs[i] - bs[i - 1])

    def line(self, batch: float) -> tuple[float, float]:
        """(fixed ms, ms per cached token per request) of one iteration's extend attention at ``batch``."""
        return max(self._at(self._fixed, batch), 0.0), max(self._at(self._slope, batch), 0.0)

    def iteration_ms(self, batch: int, kv_tokens: int) -> float:
        """Extend attention of one speculative iteration at ``batch`` running requests reading ``kv_tokens``
        cached tokens in all (ms)."""
        fixed, slope = self.line(batch)
        return fixed + slope * kv_tokens / max(batch, 1)


def _affine(points: list[tuple[float, float]]) -> tuple[float, float]:
    """Least-squares (intercept, slope) of ``ms`` against ``kv`` over ``(kv, ms)`` pairs; through zero (the mean
    ratio's line) where the cache lengths do not spread or the intercept would be negative."""
    n = len(points)
    mean_kv = sum(k for k, _ in points) / n
    mean_ms = sum(m for _, m in points) / n
    spread = sum((k - mean_kv) ** 2 for k, _ in points)
    if n > 1 and spread > 0:
        slope = sum((k - mean_kv) * (m - mean_ms) for k, m in points) / spread
        fixed = mean_ms - slope * mean_kv
        if fixed >= 0 and slope >= 0:
            return fixed, slope
    return 0.0, sum(m for _, m in points) / sum(k for k, _ in points)


#: What :class:`SmallKernelCosts` charges per iteration, each term's size: ``fixed`` (1), ``per_draft_step``
#: (``num_steps - 1`` draft decode forwards), ``per_verify_row`` (``num_draft_tokens`` rows per request) and
#: ``per_tree`` (1 when ``topk > 1``).
SMALL_KERNEL_TERMS = ("fixed", "per_draft_step", "per_verify_row", "per_tree")


def server_rows(path: Path, servers: tuple[str, ...], table: str) -> list[dict[str, str]]:
    """The rows of a real-engine kernel table (``kernels.csv``) of the named ``servers``, every one of them present.

    Raises:
        ConfigError: the file cannot be read, or a named server has no row (``table`` names the table in the
            message, e.g. ``"small-kernel"``).
    """
    try:
        with path.open(newline="", encoding="utf-8") as fh:
            rows = [r for r in csv.DictReader(fh) if r.get("server") in servers]
    except OSError as exc:
        raise ConfigError(
            f"cannot read the {table} table {path}: {exc}; run "
            "benchmarks/real_engine_accuracy.py on the real engine's calibration records"
        ) from exc
    missing = sorted(set(servers) - {r["server"] for r in rows})
    if missing:
        raise ConfigError(f"{path} has no rows of {', '.join(missing)}: name servers of its 'server' column")
    return rows


class SmallKernelCosts:
    """Per-iteration time of a speculative step's small kernels, measured on the real engine.

    Beside its GEMMs, fused MoE and extend attention, an SGLang 0.5.17 spec v2 iteration runs many small kernels:
    norms, rotary and activations over every verify row of every layer, the draft's decode attention, top-k and
    softmax after each draft forward, tree building and the tree's top-k over ``topk x topk`` candidates, the
    verify's sampling, and copies (the tree's KV move of accepted tokens, ``copy_all_layer_kv_cache_tiled``, 0.95 ms
    per iteration at batch 64 for Llama-3.1-8B's 16-token tree). The real engine's traces give their time per
    iteration (``kernels.csv``'s ``rest_ms``: every kernel but the extend attention, the GEMMs and the fused MoE),
    and this class charges them **instead of** the PyTorch stand-ins of :class:`SpecKernelCosts`.

    What plain decoding pays for the same kinds of kernels is already in a profile fitted on plain decoding (the
    fitted HBM efficiency and fixed time per layer absorb it), so at each measured batch the charged time is a
    server's ``rest_ms`` less the plain-decoding server's ``rest_ms - decode_attention_ms`` (its decode attention
    is charged by the roofline and is not run by a verify). That excess is written, per batch, as four terms
    (:data:`SMALL_KERNEL_TERMS`)::

        fixed + per_draft_step x (num_steps - 1) + per_verify_row x num_draft_tokens + per_tree x [topk > 1]

    solved at that batch from the named servers: four shapes (a chain of 3 and of 7, a tree of 8 and of 16 tokens)
    give the four terms exactly (more servers are solved by least squares). The tables' servers at a second accept
    length (the same shapes) are left out on purpose: they are the check that a term is the shape's, not one
    server's (``benchmarks/real_engine_accuracy.py`` prints it). A term is the launch-bound cost of a draft step at small batches and the row-bound cost of
    the verify's norms and activations at large ones, so it is interpolated linearly in the batch between the
    measured batches, flat below the smallest and extended along the last segment above the largest; the sum is
    never charged below zero.

    Args:
        path: the ``kernels.csv`` of a real-engine calibration run (columns ``server``, ``batch``, ``num_steps``,
            ``topk``, ``num_draft_tokens``, ``rest_ms``, ``decode_attention_ms``).
        servers: the servers of one model whose rows are read, by name: its plain-decoding server (``num_steps``
            0) and its speculative ones.

    Raises:
        ConfigError: a missing or unreadable file, a named server not in it, a row lacking a column, no
            plain-decoding server at a batch with speculative ones, or fewer than four distinct speculative shapes (a chain and a tree each at two
            sizes) at a measured batch.
    """

    def __init__(self, path: str | Path, *, servers: tuple[str, ...]) -> None:
        self.path, self.servers = Path(path), tuple(servers)
        rows = server_rows(self.path, self.servers, "small-kernel")
        plain: dict[float, float] = {}
        spec: dict[float, list[tuple[tuple[float, ...], float]]] = {}
        try:
            for r in rows:
                batch, steps, rest = float(r["batch"]), int(r["num_steps"]), float(r["rest_ms"])
                if steps == 0:
                    plain[batch] = rest - float(r["decode_attention_ms"])
                    continue
                x = (1.0, float(steps - 1), float(r["num_draft_tokens"]), 1.0 if int(r["topk"]) > 1 else 0.0)
                spec.setdefault(batch, []).append((x, rest))
        except (KeyError, ValueError) as exc:
            raise ConfigError(
                f"{self.path}: a row lacks or garbles {exc}; rerun benchmarks/real_engine_accuracy.py, which writes "
                "the shape columns"
            ) from exc
        if not spec:
            raise ConfigError(f"{self.path}: none of {', '.join(self.servers)} is a speculative server")
        self._batches = sorted(spec)
        self._terms: list[tuple[float, ...]] = []
        for b in self._batches:
            if b not in plain:
                raise ConfigError(
                    f"{self.path}: no plain-decoding server among those named at batch {b:g}, so what plain decoding already "
                    "pays for its small kernels is unknown there; profile the baseline at every profiled batch"
                )
            points = [(x, rest - plain[b]) for x, rest in spec[b]]
            if len({x for x, _ in points}) < len(SMALL_KERNEL_TERMS):
                raise ConfigError(
                    f"{self.path}: the servers named have {len({x for x, _ in points})} distinct speculative shapes "
                    f"at batch {b:g}; the {len(SMALL_KERNEL_TERMS)} terms ({', '.join(SMALL_KERNEL_TERMS)}) need chains of "
                    "two lengths and trees of two sizes"
                )
            self._terms.append(linear_least_squares(points))
        self._memo: dict[tuple[int, int, int, int], float] = {}

    def terms(self, batch: float) -> dict[str, float]:
        """Each of :data:`SMALL_KERNEL_TERMS` (ms) at ``batch`` running requests, interpolated in the batch."""
        bs = self._batches
        if batch <= bs[0] or len(bs) == 1:
            values = self._terms[0]
        else:
            i = min(max(bisect.bisect_left(bs, batch), 1), len(bs) - 1)
            f = (batch - bs[i - 1]) / (bs[i] - bs[i - 1])
            values = tuple(a + (b - a) * f for a, b in zip(self._terms[i - 1], self._terms[i]))
        return dict(zip(SMALL_KERNEL_TERMS, values))

    def step_ms(self, batch: int, num_steps: int, topk: int, num_draft_tokens: int) -> float:
        """Milliseconds of one iteration's small kernels beyond plain decoding's, at ``batch`` running requests."""
        if batch <= 0:
            return 0.0
        key = (batch, num_steps, topk, num_draft_tokens)
        out = self._memo.get(key)
        if out is None:
            t = self.terms(batch)
            out = max(
                0.0,
                t["fixed"]
                + t["per_draft_step"] * max(0, num_steps - 1)
                + t["per_verify_row"] * num_draft_tokens
                + (t["per_tree"] if topk > 1 else 0.0),
            )
            self._memo[key] = out
        return out


def linear_least_squares(points: list[tuple[tuple[float, ...], float]]) -> tuple[float, ...]:
    """The coefficients minimising the squared error of ``y ~ x . c`` over ``(x, y)`` pairs (normal equations,
    Gaussian elimination with partial pivoting; the caller has checked the ``x`` span their space)."""
    n = len(points[0][0])
    a = [[sum(x[i] * x[j] for x, _ in points) for j in range(n)] + [sum(x[i] * y for x, y in points)] for i in range(n)]
    for col in range(n):
        pivot = max(range(col, n), key=lambda r: abs(a[r][col]))
        a[col], a[pivot] = a[pivot], a[col]
        for r in range(n):
            if r != col:
                f = a[r][col] / a[col][col]
                a[r] = [v - f * p for v, p in zip(a[r], a[col])]
    return tuple(a[i][n] / a[i][i] for i in range(n))
