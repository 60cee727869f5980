"""How it was measured (workbench/studies/_method_words.py): every sentence from the runs' own record.

Issue 33: the spec_vs_baseline report said "4 times" and "time scale 2" when its runs were made at 8x, and "the
order of variants alternated between repeats" of a measurement that ran every variant at once. The words now
come from the manifests (time scale, plan) and the requests' wall-clock stamps (which passes overlapped).
"""

from __future__ import annotations

import pandas as pd

from workbench import Study
from workbench.studies._method_words import pass_order

T0 = 1_796_535_000.0  # wall-clock seconds (2026-12-05)


def _study(
    *, parallel: bool, time_scales: tuple[float, float] = (8.0, 8.0), repeats: int = 3, pause_s: float = 0.0
) -> Study:
    """baseline and eagle3 at concurrency 1 and 4, ``repeats`` repeats; each pass (variant, repeat) lasts 10 s,
    the two variants' passes side by side (``parallel``) or one after the other, their order reversed each repeat;
    ``pause_s`` before the last repeat (a later sweep resuming the runs)."""
    levels, requests, t = [], [], T0
    for r in range(repeats):
        t += pause_s if r == repeats - 1 else 0.0
        order = ["baseline", "eagle3"] if r % 2 == 0 else ["eagle3", "baseline"]
        for k, name in enumerate(order):
            start = t if parallel else t + 10.0 * k
            for i, c in enumerate((1, 4)):
                levels.append(
                    {
                        "variant": name,
                        "concurrency": c,
                        "repeat": r,
                        "output_throughput_tok_s": 100.0 * c,
                        "mean_per_request_tok_s": 100.0,
                        "simulated": True,
                        "engine": "sim",
                        "num_requests": 4 * c,
                        "backend": "generate",
                    }
                )
                for q in range(2):
                    requests.append(
                        {
                            "variant": name,
                            "concurrency": c,
                            "repeat": r,
                            "level_index": i,
                            "request_index": q,
                            "output_tokens": 64,
                            "e2e_ms": 500.0,
                            "start_epoch_s": start + 5.0 * i,
                            "end_epoch_s": start + 5.0 * i + 4.0,
                        }
                    )
        t += 10.0 if parallel else 20.0
    manifests = [
        {
            "variant": name,
            "host": "local",
            "simulated": True,
            "time_scale": scale,
            "simulation": {"profile": "seed-pcie-8gpu", "time_scale": scale},
            "plan": {
                "max_new_tokens": 64,
                "prompt_set": "default",
                "repeats": repeats,
                "extra_sampling_params": {"stream_interval": 8},
            },
        }
        for name, scale in zip(("baseline", "eagle3"), time_scales)
    ]
    return Study.from_frames(pd.DataFrame(levels), pd.DataFrame(requests), manifests, "baseline")


def test_a_parallel_measurement_at_time_scale_8_says_so_and_no_alternating_order() -> None:
    text = _study(parallel=True).method_text()
    assert "8 times faster than real time (time scale 8" in text
    assert "all 2 variants' servers were measured at the same time" in text and "alternat" not in text
    assert "reversed" not in text and "time scale 2" not in text and "4 times" not in text
    assert "concurrency 1 and 4" in text and "4–16 requests per level" in text and "64 output tokens" in text
    assert "measured 3 times" in text and "8 tokens per streamed chunk" in text and "one session" in text
    order = pass_order(_study(parallel=True).requests)
    assert order.kind == "parallel" and order.most_at_once == 2


def test_a_sequential_measurement_names_its_reversing_order() -> None:
    study = _study(parallel=False)
    order = pass_order(study.requests)
    assert order.kind == "sequential" and order.most_at_once == 1 and order.alternated
    assert order.orders == (("baseline", "eagle3"), ("eagle3", "baseline"), ("baseline", "eagle3"))
    text = study.method_text()
    assert "One server at a time" in text and "reversed from each repeat to the next" in text
    assert "at the same time" not in text


def test_runs_at_two_time_scales_and_two_sessions_are_named() -> None:
    text = _study(parallel=True, time_scales=(2.0, 8.0), pause_s=3600.0).method_text()
    assert "different time scales (2, 8)" in text and "not like for like" in text
    assert "in 2 sessions" in text and "resumed" in text


def test_levels_without_request_stamps_say_the_order_is_not_known() -> None:
    study = _study(parallel=True)
    bare = Study.from_frames(
        study.levels, study.requests.drop(columns=["start_epoch_s", "end_epoch_s"]), study.manifests, "baseline"
    )
    text = bare.method_text()
    assert "is not known" in text and "at the same time" not in text and "session" not in text


def test_the_server_generation_rate_beside_the_clients_is_explained() -> None:
    """Issue 33: "What the server saw" showed server generation 2,800 tok/s beside the client's 735, unexplained."""
    from workbench.studies._server_view import gen_throughput_note

    simulated = gen_throughput_note(pd.DataFrame({"simulated": [True]}))
    real = gen_throughput_note(pd.DataFrame({"simulated": [False]}))
    for note in (simulated, real):
        assert note.startswith("*Mean server gen (tok/s)*") and "the server's figure is the higher one" in note
        assert "whole level" in note and "prefill" in note
    assert "simulated engine counts its decode steps' time alone" in simulated and "simulated" not in real
