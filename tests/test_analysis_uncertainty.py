"""Bootstrap CI of the per-request speed ratio: paired when the prompt sequences match."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from workbench.analysis._uncertainty import per_request_ratio_ci
from workbench.errors import ConfigError


def _requests(spec_gain: float, n: int = 40, *, paired: bool = True, seed: int = 1) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    prompt_cost = rng.uniform(0.5, 1.5, size=n)  # shared prompt-to-prompt spread
    rows = []
    for variant, gain in (("baseline", 1.0), ("spec", spec_gain)):
        noise = rng.normal(1.0, 0.01, size=n)
        for i in range(n):
            e2e_ms = 1000.0 * prompt_cost[i] * noise[i] / gain
            rows.append(
                {
                    "variant": variant,
                    "concurrency": 1,
                    "output_tokens": 100,
                    "e2e_ms": e2e_ms,
                    "error": None,
                    "request_index": i if paired else None,
                    "prompt_id": f"p{i}" if paired else None,
                }
            )
    return pd.DataFrame(rows)


def test_paired_bootstrap_resolves_a_small_gain() -> None:
    ci = per_request_ratio_ci(_requests(1.03), baseline="baseline", spec="spec")
    row = ci.iloc[0]
    assert row["paired"] and row["excludes_1"] and row["ratio_lo"] > 1.0 and row["ratio_hi"] < 1.06
    assert row["ratio"] == pytest.approx(1.03, abs=0.01)


def test_unpaired_bootstrap_is_wider_and_honest() -> None:
    ci = per_request_ratio_ci(_requests(1.03, paired=False), baseline="baseline", spec="spec")
    row = ci.iloc[0]
    assert not row["paired"] and not row["excludes_1"]  # the shared spread swamps 3%
    assert row["ratio_lo"] < 1.0 < row["ratio_hi"]


def test_failed_rows_dropped_and_bad_input_refused() -> None:
    req = _requests(1.0)
    req.loc[0, "error"] = "boom"
    assert not per_request_ratio_ci(req, baseline="baseline", spec="spec").iloc[0]["paired"]
    with pytest.raises(ConfigError, match="confidence"):
        per_request_ratio_ci(req, baseline="baseline", spec="spec", confidence=1.5)
    with pytest.raises(ConfigError, match="lacks columns"):
        per_request_ratio_ci(req.drop(columns=["e2e_ms"]), baseline="baseline", spec="spec")
    tiny = req[req["request_index"].isin([1])]
    with pytest.raises(ConfigError, match="at least 2"):
        per_request_ratio_ci(tiny, baseline="baseline", spec="spec")


def test_intervals_are_never_negative_and_the_report_never_writes_minus_zero() -> None:
    from workbench.studies import Study

    # a gain of +0.2%: the paired interval starts just below 1 (ratio_lo - 1 in (-0.5%, 0))
    requests = _requests(1.002)
    ci = per_request_ratio_ci(requests, baseline="baseline", spec="spec").iloc[0]
    assert 0.0 < ci["ratio_lo"] < 1.0 < ci["ratio"] and -0.005 < ci["ratio_lo"] - 1.0 < 0.0
    speed = requests.assign(tok_s=requests["output_tokens"] / requests["e2e_ms"] * 1000.0)
    levels = (
        speed.groupby(["variant", "concurrency"], as_index=False)["tok_s"]
        .mean()
        .rename(columns={"tok_s": "mean_per_request_tok_s"})
        .assign(output_throughput_tok_s=lambda d: d["mean_per_request_tok_s"], simulated=True, engine="sim")
    )
    text = Study.from_frames(levels, requests, [], "baseline").findings()
    assert "requests' spread: +0% to +1%" in text  # was "-0% to +1%"
    assert "-0%" not in text
