"""workbench.bench._workload: the label that keeps levels of different workloads apart."""

from __future__ import annotations

import math

import pandas as pd

from workbench.bench import workload_labels


def test_labels_of_our_own_rows_and_a_swept_dimension() -> None:
    rows = pd.DataFrame(
        {
            "max_new_tokens": [64, 64, 512],
            "temperature": [0.0, 0.0, 0.0],
            "backend": ["generate"] * 3,
            "sweep": ["output_len"] * 3,
            "sweep_value": [64.0, 64.0, 512.0],
        }
    )
    assert list(workload_labels(rows)) == ["out=64 temperature=0 backend=generate"] * 2 + [
        "out=512 temperature=0 backend=generate"
    ]
    swept_only = pd.DataFrame({"sweep": ["temperature", "temperature"], "sweep_value": [0.0, 0.7]})
    assert list(workload_labels(swept_only)) == ["temperature=0", "temperature=0.7"]
    assert list(workload_labels(pd.DataFrame({"x": [1]}))) == ["default"]


def test_imported_random_lengths_count_only_for_random_datasets() -> None:
    rows = pd.DataFrame(
        {
            "bench_serving_dataset_name": ["random", "sharegpt"],
            "bench_serving_random_input_len": [1024.0, 1024.0],
            "bench_serving_random_output_len": [1024.0, 1024.0],
            "bench_serving_sharegpt_output_len": [math.nan, math.nan],
            "bench_serving_backend": ["sglang", "sglang"],
        }
    )
    assert list(workload_labels(rows)) == [
        "dataset=random in=1024 out=1024 backend=sglang",
        "dataset=sharegpt backend=sglang",
    ]
