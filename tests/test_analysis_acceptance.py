"""workbench.analysis._acceptance: per-position acceptance, the accept-length distribution, by category."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from workbench.analysis import accept_by_category, accept_length_distribution, imported_position_rates, position_rates


def _requests() -> pd.DataFrame:
    # request a: 4 verifies accepting 0, 1, 2, 2 drafts; request b: 2 verifies accepting 2 and 2 (a chain of 2)
    return pd.DataFrame(
        [
            {
                "variant": "spec",
                "concurrency": 1,
                "spec_accept_histogram": [1, 1, 2],
                "error": None,
                "prompt_category": "coding",
                "output_tokens": 9,
                "spec_verify_ct": 4,
            },
            {
                "variant": "spec",
                "concurrency": 1,
                "spec_accept_histogram": [0, 0, 2],
                "error": None,
                "prompt_category": "chat",
                "output_tokens": 6,
                "spec_verify_ct": 2,
            },
            {
                "variant": "spec",
                "concurrency": 1,
                "spec_accept_histogram": [5],
                "error": "boom",
                "prompt_category": "chat",
                "output_tokens": 1,
                "spec_verify_ct": 1,
            },  # failed: left out
            {
                "variant": "base",
                "concurrency": 1,
                "spec_accept_histogram": [],
                "error": None,
                "prompt_category": "chat",
                "output_tokens": 6,
                "spec_verify_ct": None,
            },  # not speculative
        ]
    )


def test_position_rates_pooled_and_per_request() -> None:
    rates = position_rates(_requests())
    assert list(rates["variant"]) == ["spec", "spec"] and list(rates["position"]) == [1, 2]
    # pooled: position 1 reached by 3 of a's 4 verifies and both of b's -> 5/6; position 2: 4/6
    assert rates["rate"].tolist() == pytest.approx([5 / 6, 4 / 6])
    # per request: a 3/4 and 2/4, b 1 and 1 -> means 0.875 and 0.75 over n=2 requests
    assert rates["per_request_rate"].tolist() == pytest.approx([0.875, 0.75])
    assert (rates["n_requests"] == 2).all() and (rates["verifies"] == 6).all()
    assert (rates["per_request_rate_lo"] < rates["per_request_rate"]).all()


def test_accept_length_distribution_and_by_category() -> None:
    dist = accept_length_distribution(_requests())
    assert dist["accept_length"].tolist() == [1, 2, 3] and dist["verifies"].tolist() == [1, 1, 4]
    assert dist["share"].sum() == pytest.approx(1.0)
    cats = accept_by_category(_requests())
    assert cats[["prompt_category", "accept_length", "n_requests"]].values.tolist() == [
        ["chat", 3.0, 1],
        ["coding", 2.25, 1],
    ]
    assert position_rates(_requests().drop(columns=["spec_accept_histogram"])).empty


def test_vllm_rates_as_the_file_gave_them() -> None:
    levels = pd.DataFrame(
        [
            {
                "variant": "eagle3",
                "concurrency": 1,
                "vllm_spec_decode_per_position_acceptance_rates": [0.8, 0.5],
                "vllm_spec_decode_num_drafts": 100.0,
                "completed": 8.0,
            },
            {
                "variant": "eagle3",
                "concurrency": 1,
                "vllm_spec_decode_per_position_acceptance_rates": [0.6, 0.3],
                "vllm_spec_decode_num_drafts": 120.0,
                "completed": 8.0,
            },
            {"variant": "base", "concurrency": 1, "vllm_spec_decode_per_position_acceptance_rates": None},
        ]
    )
    rates = imported_position_rates(levels)
    assert rates["rate"].tolist() == pytest.approx([0.7, 0.4]) and rates["verifies"].tolist() == [220.0, 220.0]
    assert math.isnan(rates["per_request_rate"].iloc[0])
