"""Acceptance in detail: per draft position, the accept-length distribution, and by prompt category.

One accept length per level hides why a chain of 7 loses to a chain of 3. The request rows
say more: each request's ``spec_accept_histogram`` counts its verify steps by how many draft
tokens each accepted (index ``k``: ``k`` drafts accepted, the bonus token not counted), as
SGLang's final ``meta_info`` gives it (``spec_accept_histogram`` 0.5.9 to 0.5.20,
``spec_correct_drafts_histogram`` from 0.5.12; older releases and the OpenAI routes give none)
and as the simulated engine records it from every verify it models.

Definitions:

- **acceptance rate at draft position j** (1-based): the share of verify steps that accepted at
  least ``j`` drafts, ``sum_{k >= j} h[k] / sum_k h[k]``. Pooled over a level's verifies this is
  vLLM's ``spec_decode_per_position_acceptance_rates`` (``num_accepted_tokens_per_pos[j] /
  num_drafts``, vllm/benchmarks/serve.py), so imported and measured rates read alike
  (``rate``). Averaged over requests (each request's own share first) it weighs every request
  once (``per_request_rate``, with a 95% Student t interval over the requests): a request that
  accepts little takes more verifies for the same output, so the pooled rate leans towards it.
- **accept length of a verify**: ``k + 1`` (the bonus token included, as SGLang's
  ``spec_accept_length``); its distribution is the share of verifies at each length.
- **accept length per prompt category**: ``sum(output_tokens) / sum(spec_verify_ct)`` over the
  category's completed requests (SGLang's formula, prefill token included).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import pandas as pd

from workbench.analysis._repeats import mean_interval

__all__ = ["accept_by_category", "accept_length_distribution", "imported_position_rates", "position_rates"]


#: The columns of a position-rate table after its ``by`` columns (:func:`position_rates`,
#: :func:`imported_position_rates`).
_POSITION_COLUMNS = (
    "position",
    "rate",
    "per_request_rate",
    "per_request_rate_lo",
    "per_request_rate_hi",
    "n_requests",
    "verifies",
)


def _histograms(requests: pd.DataFrame) -> pd.DataFrame:
    """Completed rows with a non-empty histogram, each as a numpy array in ``hist``."""
    if "spec_accept_histogram" not in requests or not len(requests):
        return requests.iloc[0:0].assign(hist=[])
    ok = requests["error"].isna() if "error" in requests else pd.Series(True, index=requests.index)
    hists = requests["spec_accept_histogram"].map(
        lambda h: np.asarray(h, dtype=float) if h is not None and len(h) and float(np.sum(h)) > 0 else None
    )
    keep = ok & hists.notna()
    return requests[keep].assign(hist=hists[keep])


def _keys(by: Sequence[str], key: object) -> dict:
    return dict(zip(by, key if isinstance(key, tuple) else (key,)))


def position_rates(
    requests: pd.DataFrame, *, by: Sequence[str] = ("variant", "concurrency"), confidence: float = 0.95
) -> pd.DataFrame:
    """Acceptance rate at each draft position, per level (module docstring).

    Args:
        requests: request rows with ``spec_accept_histogram`` (lists), the ``by`` columns and
            ``error``; rows without a histogram are left out.
        by: the columns naming a level (``("variant", "request_rate_req_s")`` for open loop).
        confidence: two-sided level of ``per_request_rate``'s interval.

    Returns:
        One row per (level, position): the ``by`` columns, ``position`` (1-based), ``rate``
        (pooled over verifies: vLLM's definition), ``per_request_rate``, ``per_request_rate_lo``,
        ``per_request_rate_hi`` (NaN with fewer than 2 requests), ``n_requests`` and ``verifies``.
        Empty (same columns) when no row has a histogram.
    """
    cols = [*by, *_POSITION_COLUMNS]
    rows = _histograms(requests)
    out = []
    if len(rows):
        for key, group in rows.groupby(list(by), sort=True):
            width = max(len(h) for h in group["hist"])
            hists = np.array([np.pad(h, (0, width - len(h))) for h in group["hist"]])  # requests x (k = 0..)
            totals = hists.sum(axis=1)
            at_least = np.cumsum(hists[:, ::-1], axis=1)[:, ::-1]  # [:, j]: verifies with >= j drafts
            for j in range(1, width):
                iv = mean_interval(at_least[:, j] / totals, confidence=confidence)
                out.append(
                    {
                        **_keys(by, key),
                        "position": j,
                        "rate": float(at_least[:, j].sum() / totals.sum()),
                        "per_request_rate": iv.mean,
                        "per_request_rate_lo": iv.lo,
                        "per_request_rate_hi": iv.hi,
                        "n_requests": iv.n,
                        "verifies": int(totals.sum()),
                    }
                )
    return pd.DataFrame(out, columns=cols)


def accept_length_distribution(
    requests: pd.DataFrame, *, by: Sequence[str] = ("variant", "concurrency")
) -> pd.DataFrame:
    """Share of a level's verify steps at each accept length (``k`` drafts accepted + the bonus token).

    Returns:
        One row per (level, accept length): the ``by`` columns, ``accept_length`` (int, tokens
        per verify), ``share`` (of the level's verifies), ``verifies`` (at that length) and
        ``n_requests``. Empty (same columns) without histograms.
    """
    cols = [*by, "accept_length", "share", "verifies", "n_requests"]
    rows = _histograms(requests)
    out = []
    if len(rows):
        for key, group in rows.groupby(list(by), sort=True):
            width = max(len(h) for h in group["hist"])
            counts = np.sum([np.pad(h, (0, width - len(h))) for h in group["hist"]], axis=0)
            for k, count in enumerate(counts):
                out.append(
                    {
                        **_keys(by, key),
                        "accept_length": k + 1,
                        "share": float(count / counts.sum()),
                        "verifies": int(count),
                        "n_requests": len(group),
                    }
                )
    return pd.DataFrame(out, columns=cols)


def accept_by_category(requests: pd.DataFrame, *, by: Sequence[str] = ("variant",)) -> pd.DataFrame:
    """Accept length per prompt category (``sum(output_tokens) / sum(spec_verify_ct)``).

    Args:
        requests: request rows with ``prompt_category``, ``output_tokens``, ``spec_verify_ct``,
            ``error`` and the ``by`` columns; rows without a verify count are left out.
        by: what else to split by (default the variant: every level pooled).

    Returns:
        One row per (``by``, category): the ``by`` columns, ``prompt_category``, ``accept_length``,
        ``n_requests``, ``verifies``. Empty (same columns) when no row has a verify count.
    """
    cols = [*by, "prompt_category", "accept_length", "n_requests", "verifies"]
    need = {"prompt_category", "output_tokens", "spec_verify_ct", *by}
    if need - set(requests.columns) or not len(requests):
        return pd.DataFrame(columns=cols)
    rows = requests[pd.to_numeric(requests["spec_verify_ct"], errors="coerce").fillna(0) > 0]
    if "error" in rows:
        rows = rows[rows["error"].isna()]
    rows = rows.assign(
        prompt_category=rows["prompt_category"].fillna("(none)"),
        output_tokens=pd.to_numeric(rows["output_tokens"], errors="coerce"),
        spec_verify_ct=pd.to_numeric(rows["spec_verify_ct"], errors="coerce"),
    )
    out = [
        {
            **_keys([*by, "prompt_category"], key),
            "accept_length": float(g["output_tokens"].sum() / g["spec_verify_ct"].sum()),
            "n_requests": len(g),
            "verifies": int(g["spec_verify_ct"].sum()),
        }
        for key, g in rows.groupby([*by, "prompt_category"], sort=True)
    ]
    return pd.DataFrame(out, columns=cols)


def imported_position_rates(
    levels: pd.DataFrame,
    *,
    by: Sequence[str] = ("variant", "concurrency"),
    column: str = "vllm_spec_decode_per_position_acceptance_rates",
) -> pd.DataFrame:
    """The per-position rates another tool wrote, as :func:`position_rates` rows (``rate`` only).

    vLLM's bench results carry ``spec_decode_per_position_acceptance_rates`` (a list of fractions,
    position 1 first; kept by the importer as ``vllm_spec_decode_per_position_acceptance_rates``);
    the level's ``vllm_spec_decode_num_drafts`` gives ``verifies``. Repeats of a level are
    averaged position by position.

    Returns:
        :func:`position_rates`' columns; ``per_request_rate`` and its bounds NaN (the file has no
        per-request figures), ``n_requests`` the level's completed requests where known.
    """
    cols = [*by, *_POSITION_COLUMNS]
    if column not in levels or not len(levels):
        return pd.DataFrame(columns=cols)
    rows = levels[levels[column].map(lambda r: r is not None and not isinstance(r, float) and len(r) > 0)]
    out = []
    for key, group in rows.groupby(list(by), sort=True):
        rates = [np.asarray(r, dtype=float) for r in group[column]]
        width = min(len(r) for r in rates)
        mean = np.mean([r[:width] for r in rates], axis=0)
        drafts = pd.to_numeric(
            group.get("vllm_spec_decode_num_drafts", pd.Series(math.nan, index=group.index)), errors="coerce"
        ).sum(min_count=1)
        completed = pd.to_numeric(group.get("completed", pd.Series(math.nan, index=group.index)), errors="coerce").sum(
            min_count=1
        )
        for j, rate in enumerate(mean, start=1):
            out.append(
                {
                    **_keys(by, key),
                    "position": j,
                    "rate": float(rate),
                    "per_request_rate": math.nan,
                    "per_request_rate_lo": math.nan,
                    "per_request_rate_hi": math.nan,
                    "n_requests": completed,
                    "verifies": drafts,
                }
            )
    return pd.DataFrame(out, columns=cols)
