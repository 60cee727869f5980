"""Acceptance by prompt set (``--sim-prompt-set``) and by sampling regime (each request's temperature)."""

from __future__ import annotations

import pytest

from workbench.errors import ConfigError
from workbench.sim._predict import predict
from workbench.sim._profile_acceptance import acceptance_regime
from workbench.sim._profiles import load_profile
from workbench.sim._server import SimServer
from workbench.sim._server_args import parse_server_args
from workbench.sim._spec import SpecConfig

CHAIN7 = SpecConfig("EAGLE3", 7, 1, 8)
FLAGS = [
    "--model-path",
    "meta-llama/Llama-3.1-8B-Instruct",
    "--speculative-algorithm",
    "EAGLE3",
    "--speculative-num-steps",
    "3",
    "--speculative-eagle-topk",
    "1",
    "--speculative-num-draft-tokens",
    "4",
    "--sim-profile",
    "h100-llama3-8b-eagle3",
]


def test_regime_follows_sglang_greedy_rule() -> None:
    assert acceptance_regime(0.0) == acceptance_regime(5e-7) == acceptance_regime(0.9, top_k=1) == "greedy"
    assert acceptance_regime(1e-6) == acceptance_regime(1.0) == "sampled"
    assert acceptance_regime(None) is None


def test_server_picks_acceptance_per_request_and_prompt_set() -> None:
    server = SimServer(parse_server_args([*FLAGS, "--sim-prompt-set", "gsm8k"]))
    greedy = server.submit(100, 10, temperature=0.0).request.acceptance
    sampled = server.submit(100, 10).request.acceptance  # no temperature: SGLang's default 1.0
    assert sampled.expected_accept_length(CHAIN7) == pytest.approx(3.34, abs=1e-3)  # GSM8K, temperature 1
    assert greedy.expected_accept_length(CHAIN7) == pytest.approx(3.53, abs=1e-3)  # no greedy GSM8K figure
    assert server.submit(100, 10, temperature=0.7, top_k=1).request.acceptance is greedy
    info = server.simulation_info()
    assert (
        info["prompt_set"] == "gsm8k"
        and info["expected_accept_length_by_regime"]["sampled"] < info["expected_accept_length_by_regime"]["greedy"]
    )
    refused = server._check({"max_new_tokens": 4, "temperature": "hot"}, "x", None)
    assert refused.status == 400 and b"temperature must be a number" in refused.body
    mtbench = SimServer(parse_server_args(FLAGS))
    assert mtbench.submit(100, 10, temperature=1.0).request.acceptance.expected_accept_length(CHAIN7) == pytest.approx(
        2.77, abs=1e-3
    )


def test_unknown_prompt_set_is_refused() -> None:
    with pytest.raises(ConfigError, match="no acceptance figures.*known: gsm8k, humaneval"):
        parse_server_args([*FLAGS, "--sim-prompt-set", "sharegpt"])
    with pytest.raises(ConfigError, match="carry names"):
        from workbench.sim._profiles import acceptance_model

        acceptance_model({"alpha": 0.6, "sampled": {"carry": ["bogus"]}}, regime="sampled")


def test_offline_prediction_follows_temperature() -> None:
    common = dict(concurrency_levels=[1], requests_per_level=4, max_new_tokens=256)
    greedy = predict("h100-llama3-8b-eagle3", ["llama3-8b-eagle3"], **common)[0]
    sampled = predict("h100-llama3-8b-eagle3", ["llama3-8b-eagle3"], temperature=1.0, **common)[0]
    prof = load_profile("h100-llama3-8b-eagle3")
    chain3 = SpecConfig("EAGLE3", 3, 1, 4)
    # about 200 verifies each: within 0.25 of the model's means (2.69 greedy, 2.33 sampled)
    assert greedy["accept_length"] == pytest.approx(prof.acceptance.expected_accept_length(chain3), abs=0.25)
    assert sampled["accept_length"] == pytest.approx(
        prof.acceptance_for(temperature=1).expected_accept_length(chain3), abs=0.25
    )
    assert greedy["output_throughput_tok_s"] > sampled["output_throughput_tok_s"]
    with pytest.raises(ConfigError, match="no acceptance figures"):
        predict("h100-llama3-8b-eagle3", ["llama3-8b-eagle3"], prompt_set="sharegpt", **common)
