"""A level's workload: what was sent, apart from the load, as one label per row.

Two levels are repeats of each other only when they ran the same workload: prompt set or
dataset, input and output lengths, temperature, backend and the swept value.
:func:`workload_labels` names each row's workload from whichever of those columns the
table has (:data:`WORKLOAD_COLUMNS`: the workbench's own level columns, and imported rows'
columns under the tool's own names, docs/IMPORTS.md), so rows of different workloads are
never grouped together (the importer's repeats, a study's levels, ``workbench runs show``).
"""

from __future__ import annotations

import math

import pandas as pd

__all__ = ["WORKLOAD_COLUMNS", "workload_labels"]

#: ``(column, label)`` of the columns that tell workloads apart, in the order a label names them:
#: the workbench's own level columns, then the imported tools' (docs/IMPORTS.md).
WORKLOAD_COLUMNS: tuple[tuple[str, str | None], ...] = (
    ("prompt_set", "prompts"),
    ("bench_serving_dataset_name", "dataset"),
    ("vllm_dataset_name", "dataset"),
    ("input_len", "in"),
    ("bench_serving_random_input_len", "in"),
    ("vllm_random_input_len", "in"),
    ("max_new_tokens", "out"),
    ("bench_serving_random_output_len", "out"),
    ("vllm_random_output_len", "out"),
    ("bench_serving_sharegpt_output_len", "out"),
    ("temperature", "temperature"),
    ("backend", "backend"),
    ("bench_serving_backend", "backend"),
    ("vllm_backend", "backend"),
    ("sweep_value", None),
)


#: A swept dimension (``SweepPlan.sweep``) -> the label of its column in :data:`WORKLOAD_COLUMNS`.
_SWEPT_LABELS = {"input_len": "in", "output_len": "out", "temperature": "temperature"}


def _text(value: object) -> str | None:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return None
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    try:
        if pd.isna(value):  # pd.NA, NaT
            return None
    except (TypeError, ValueError):
        pass
    return str(value)


def workload_labels(levels: pd.DataFrame) -> pd.Series:
    """Each row's workload, named by the :data:`WORKLOAD_COLUMNS` the table has.

    E.g. ``"dataset=random in=1024 out=1024 backend=sglang"`` or, for the workbench's own sweep
    over temperature, ``"prompts=default out=256 temperature=0.7 backend=generate"``. A label
    gives each label once (the first column of a label that has a value); ``sweep_value``
    counts as its dimension's column (``sweep`` ``output_len`` -> ``out``). Rows without any
    of the columns get ``"default"``. A tool's ``random_*_len`` counts only for a random dataset
    (sglang.bench_serving writes its ``--random-input-len`` whatever ``--dataset-name`` was).

    Returns:
        A string Series aligned with ``levels``.
    """
    present = [(c, label) for c, label in WORKLOAD_COLUMNS if c in levels.columns]
    out = []
    for _, row in levels.iterrows():
        parts: dict[str, str] = {}
        dataset = _text(row.get("bench_serving_dataset_name")) or _text(row.get("vllm_dataset_name")) or "random"
        for col, label in present:
            text = _text(row[col])
            if text is None or ("_random_" in col and not dataset.startswith("random")):
                continue  # the client records --random-*-len with every dataset; only random ones use it
            if label is None:  # sweep_value: named as its dimension's own column is
                sweep = _text(row.get("sweep")) or "sweep"
                label = _SWEPT_LABELS.get(sweep, sweep)
            parts.setdefault(label, text)
        out.append(" ".join(f"{k}={v}" for k, v in parts.items()) or "default")
    return pd.Series(out, index=levels.index, dtype=object)
