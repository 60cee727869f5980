"""The GEMMs' time by rows, measured on the real engine: an achieved fraction of the roofline per row count.

A roofline charges a forward's weight GEMMs (the dense layers and the LM head) ``max(bytes / bandwidth, FLOPs /
FLOP/s)``: flat in the rows below the compute knee (about 295 rows for bf16 on an H100), linear above it. cuBLAS
does not follow that line. On one H100 under SGLang 0.5.17 (``data/calibration/h100-sglang-0.5.17-2026-12-06-real``,
Llama-3.1-8B's shapes) the target's GEMMs take 5.3 ms per forward at 1 row and 5.6 at 64, then grow below the knee
as the tiles widen (the 16-token tree's 128 verify rows at batch 8 cost about 0.4 ms more than the chain's 32), and
reach 0.78 of the data sheet's FLOP/s only at 1,024 rows: around the knee neither bound is met.

:class:`GemmCosts` states that as one curve, the **achieved fraction of the data-sheet roofline** of a forward's
GEMMs at ``rows`` rows (``efficiency(rows) = max(bytes / data-sheet bandwidth, FLOPs / data-sheet FLOP/s) /
measured time``), read from the real engine's traces (``kernels.csv``'s ``gemm_ms``: every GEMM kernel of an
iteration, target and draft together, by kernel name). An iteration of ``b`` requests runs the target's GEMMs over
``b x num_draft_tokens`` rows (``b`` for plain decoding), the draft's ``num_steps - 1`` decode forwards over ``b x
topk`` rows each and the draft's extend over ``b x num_draft_tokens`` rows (SGLang 0.5.13+, spec v2). With ``x(r)
= 1 / efficiency(r)`` the iteration's GEMM time is linear in ``x``::

    gemm_ms = target_bound(b n) x(b n) + (num_steps - 1) draft_bound(b topk) x(b topk) + draft_bound(b n) x(b n)

so the named servers' points give ``x`` at every row count they run by least squares (the draft's GEMMs, which
the traces do not tell apart from the target's, are charged at the same efficiency by rows: the 8B draft's
layers are the target's width). The curve is then made monotone where it must be (the target's GEMM time never
falls as the rows grow: adjacent row counts that break this are pooled) and interpolated linearly in ``log(rows)``
between the measured row counts, flat outside them (below one row nothing changes; above the widest measured
verify the GEMMs are compute-bound, at the efficiency measured there).

A profile names it in ``[spec_kernels]`` (``gemm = "data/calibration/.../kernels.csv"``, ``gemm_servers = [...]``)
and the roofline then charges every weight GEMM group (dense layers and LM head, target and draft; not an MoE
model's experts, which are the fused-MoE kernel) at this efficiency instead of its fitted ``hbm_efficiency`` and
``flops_efficiency``.
"""

from __future__ import annotations

import bisect
import math
from pathlib import Path

from workbench.errors import ConfigError
from workbench.sim._hardware import GpuSpec, ModelConfig
from workbench.sim._spec_kernels import linear_least_squares, server_rows
from workbench.sim._roofline import RooflineCost
from workbench.sim._roofline_terms import Deployment, Efficiency


class GemmCosts:
    """The achieved fraction of the data-sheet roofline of a forward's weight GEMMs, by rows.

    Args:
        path: the ``kernels.csv`` of a real-engine calibration run (columns ``server``, ``batch``, ``num_steps``,
            ``topk``, ``num_draft_tokens``, ``gemm_ms``).
        servers: the servers whose rows are solved from, by name (one model's: its plain-decoding server and the
            speculative ones measured on purpose; the others are the check).
        target_bound: (ms to read the target's GEMM weights once, ms of their FLOPs per row), both at the data
            sheet's bandwidth and FLOP/s.
        draft_bound: the same for the draft model.

    Raises:
        ConfigError: a missing or unreadable file, a named server not in it, a row lacking a column, a row count
            no named point runs the target at, or an efficiency outside (0, 1] (the table and the shapes disagree).
    """

    def __init__(
        self,
        path: str | Path,
        *,
        servers: tuple[str, ...],
        target_bound: tuple[float, float],
        draft_bound: tuple[float, float],
    ) -> None:
        self.path, self.servers = Path(path), tuple(servers)
        rows = server_rows(self.path, self.servers, "GEMM")
        points: list[tuple[dict[int, float], float]] = []
        try:
            for r in rows:
                batch, steps, topk, n = (int(r[k]) for k in ("batch", "num_steps", "topk", "num_draft_tokens"))
                x = {batch * n: _bound(target_bound, batch * n)}
                if steps > 0:
                    wide = batch * topk
                    x[wide] = x.get(wide, 0.0) + (steps - 1) * _bound(draft_bound, wide)
                    x[batch * n] += _bound(draft_bound, batch * n)
                points.append((x, float(r["gemm_ms"])))
        except (KeyError, ValueError) as exc:
            raise ConfigError(
                f"{self.path}: a row lacks or garbles {exc}; rerun benchmarks/real_engine_accuracy.py, which writes "
                "the shape columns"
            ) from exc
        targets = {next(iter(x)) for x, _ in points}
        loose = sorted({r for x, _ in points for r in x} - targets)
        if loose:
            raise ConfigError(
                f"{self.path}: the draft runs {', '.join(map(str, loose))} rows in the servers named but no target "
                "forward does, so the GEMMs' efficiency there cannot be told apart; add a server whose verify (or "
                "plain decode) runs that many rows"
            )
        sizes = sorted(targets)
        inverse = _least_squares(points, sizes)
        times = _monotone([_bound(target_bound, r) * v for r, v in zip(sizes, inverse)])
        self.rows = sizes
        self.efficiency = [_bound(target_bound, r) / t for r, t in zip(sizes, times)]
        bad = [(r, e) for r, e in zip(sizes, self.efficiency) if not 0.0 < e <= 1.0]
        if bad:
            raise ConfigError(
                f"{self.path}: the GEMMs of {', '.join(self.servers)} reach "
                + ", ".join(f"{e:.2f} at {r} rows" for r, e in bad)
                + " of the data-sheet roofline: outside (0, 1], so the table and the model shapes or GPU named disagree; check the profile's "
                "target, draft and gpu"
            )
        self._logs = [math.log(r) for r in sizes]
        self._memo: dict[int, float] = {}

    def __call__(self, rows: int) -> float:
        """The achieved fraction of the data-sheet roofline of a forward's GEMMs over ``rows`` rows."""
        out = self._memo.get(rows)
        if out is None:
            logs, eff = self._logs, self.efficiency
            x = math.log(max(rows, 1))
            i = bisect.bisect_left(logs, x)
            if i == 0:
                out = eff[0]
            elif i >= len(logs):
                out = eff[-1]
            else:
                out = eff[i - 1] + (eff[i] - eff[i - 1]) * (x - logs[i - 1]) / (logs[i] - logs[i - 1])
            self._memo[rows] = out
        return out

    def target_ms(self, rows: int, target_bound: tuple[float, float]) -> float:
        """Milliseconds of one forward's GEMMs over ``rows`` rows for a model of this ``bound``."""
        return _bound(target_bound, rows) / self(rows)


def _bound(bound: tuple[float, float], rows: int) -> float:
    """The data-sheet roofline (ms) of GEMMs reading ``bound[0]`` ms of weights with ``bound[1]`` ms of FLOPs a row."""
    return max(bound[0], bound[1] * rows)


def _least_squares(points: list[tuple[dict[int, float], float]], sizes: list[int]) -> list[float]:
    """``x`` (one per row count in ``sizes``) minimising the squared error of ``ms ~ sum(coef x)`` over the points
    (:func:`workbench.sim._spec_kernels.linear_least_squares` on each point's coefficients laid out by ``sizes``; each size
    is a target's row count, so the system has full rank)."""
    return list(linear_least_squares([(tuple(coef.get(r, 0.0) for r in sizes), ms) for coef, ms in points]))


def _monotone(times: list[float]) -> list[float]:
    """The closest non-decreasing sequence (pool adjacent violators, equal weights)."""
    blocks: list[list[float]] = []  # [sum, count]
    for t in times:
        blocks.append([t, 1.0])
        while len(blocks) > 1 and blocks[-2][0] / blocks[-2][1] > blocks[-1][0] / blocks[-1][1]:
            s, c = blocks.pop()
            blocks[-1][0] += s
            blocks[-1][1] += c
    return [s / c for s, c in blocks for _ in range(int(c))]


def sheet_bounds(
    gpu: GpuSpec, interconnect: str, target: ModelConfig, draft: ModelConfig | None
) -> dict[str, tuple[float, float]]:
    """Each model's (ms to read its GEMM weights once, ms of their FLOPs per row) at TP 1 and the data sheet's rates:
    the dense layers and the LM head, as the roofline counts them (``target`` and ``draft``).

    Raises:
        ConfigError: no draft (the real engine's speculative GEMMs run the draft's too).
    """
    if draft is None:
        raise ConfigError(f"a measured GEMM table needs the draft beside {target.name}: name the profile's draft")
    dep = Deployment(gpu=gpu, interconnect=gpu.interconnect(interconnect))  # TP 1: the link is not used
    cost = RooflineCost(target, dep, Efficiency(hbm_efficiency=1.0, flops_efficiency=1.0), draft=draft)
    assert cost.draft is not None  # built with a draft just above
    return {
        name: (fwd.dense_mem + fwd.lm_mem, fwd.dense_flop + fwd.lm_flop)
        for name, fwd in (("target", cost.target), ("draft", cost.draft))
    }
