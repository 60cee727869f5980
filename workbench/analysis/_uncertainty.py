"""Sampling uncertainty of the spec/baseline comparison (bootstrap over requests).

Per-request speed (output tokens / E2E latency) varies from request to request with
the prompt, its acceptance and where it fell in the batch, so a level's mean has a
sampling error, and so has the spec/baseline ratio. :func:`per_request_ratio_ci`
returns the ratio's percentile-bootstrap confidence interval (Efron & Tibshirani
1993, ch. 13). The benchmark sends the same seeded prompt sequence to every
variant, so when both variants completed the same request indices with the same
prompts the requests are resampled as pairs, which removes the prompt-to-prompt
spread that both variants share; otherwise each variant is resampled on its own. It
does not cover run-to-run effects (another server start, another day): repeat runs
for that.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from workbench.analysis._load import LOAD_AXES
from workbench.errors import ConfigError


def per_request_ratio_ci(
    requests: pd.DataFrame,
    *,
    baseline: str,
    spec: str,
    confidence: float = 0.95,
    resamples: int = 2000,
    seed: int = 0,
    load: str = "concurrency",
) -> pd.DataFrame:
    """Bootstrap CI of mean per-request tok/s (spec / baseline) at each shared level.

    Args:
        requests: request rows with ``variant``, ``concurrency``, ``output_tokens``,
            ``e2e_ms`` and ``error`` (failed rows are dropped).
        baseline, spec: variant names.
        confidence: two-sided confidence level in (0, 1); default 0.95.
        resamples: bootstrap resamples per level (default 2000).
        seed: seed of the resampling (``numpy.random.default_rng``).
        load: the column naming a level (``"request_rate_req_s"`` for open-loop levels).

    Returns:
        One row per shared level: the ``load`` column, ``ratio`` (point estimate),
        ``ratio_lo``, ``ratio_hi``, ``n_baseline``, ``n_spec``, ``paired`` (bool), and
        ``excludes_1`` (the interval excludes 1: the requests of this one run differ, which is not
        a significance test; see :data:`workbench.analysis.SIGNIFICANCE_RULE`).

    Raises:
        ConfigError: missing columns, bad confidence, or fewer than 2 completed
            requests of a variant at a level.
    """
    need = {"variant", load, "output_tokens", "e2e_ms", "error"}
    if need - set(requests.columns):
        raise ConfigError(f"request table lacks columns {sorted(need - set(requests.columns))}")
    if not 0.0 < confidence < 1.0:
        raise ConfigError(f"confidence must be in (0, 1), got {confidence}")
    ok = requests[requests["error"].isna()]
    speed = ok["output_tokens"].astype(float) / (ok["e2e_ms"].astype(float) / 1000.0)
    frame = pd.DataFrame({"variant": ok["variant"], "level": ok[load], "speed": speed, "pair": _pair_keys(ok)})
    rng = np.random.default_rng(seed)
    alpha = (1.0 - confidence) / 2.0
    rows = []
    levels = sorted(
        set(frame.loc[frame["variant"] == baseline, "level"]) & set(frame.loc[frame["variant"] == spec, "level"])
    )
    for c in levels:
        fb = frame[(frame["variant"] == baseline) & (frame["level"] == c)].set_index("pair")["speed"]
        fs = frame[(frame["variant"] == spec) & (frame["level"] == c)].set_index("pair")["speed"]
        b, s = fb.to_numpy(), fs.to_numpy()
        if len(b) < 2 or len(s) < 2:
            raise ConfigError(f"need at least 2 completed requests per variant at {LOAD_AXES[load].text(c)}")
        paired = fb.index.notna().all() and fb.index.is_unique and set(fb.index) == set(fs.index)
        if paired:
            s = fs.loc[fb.index].to_numpy()
            picks = rng.integers(0, len(b), size=(resamples, len(b)))
            ratios = s[picks].mean(axis=1) / b[picks].mean(axis=1)
        else:
            ratios = rng.choice(s, size=(resamples, len(s))).mean(axis=1) / rng.choice(
                b, size=(resamples, len(b))
            ).mean(axis=1)
        lo, hi = np.quantile(ratios, [alpha, 1.0 - alpha])
        rows.append(
            {
                load: LOAD_AXES[load].value(c),
                "ratio": float(s.mean() / b.mean()),
                "ratio_lo": float(lo),
                "ratio_hi": float(hi),
                "n_baseline": len(b),
                "n_spec": len(s),
                "paired": bool(paired),
                "excludes_1": bool(lo > 1.0 or hi < 1.0),
            }
        )
    return pd.DataFrame(rows)


def _pair_keys(requests: pd.DataFrame) -> pd.Series:
    """``"<request_index>:<prompt_id>"`` per row, or None where either is missing."""
    if "request_index" not in requests or "prompt_id" not in requests:
        return pd.Series([None] * len(requests), index=requests.index, dtype=object)
    idx, pid = requests["request_index"], requests["prompt_id"]
    keys = idx.astype("Int64").astype(str) + ":" + pid.astype(str)
    return keys.where(idx.notna() & pid.notna(), None)
