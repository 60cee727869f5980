"""What an SGLang server spent its start-up on, read from its log (pure functions, no I/O).

SGLang 0.5.17 logs one summary line when its engine is up (``srt/managers/scheduler.py``, recorded on an
H200: ``tests/fixtures/sglang_real/0.5.17/``)::

    Engine startup timings (s): load_weight=0.15, kv_cache_allocation=0.03, scheduler_e2e=48.84,
    cuda_graph={prefill=41.64, decode=2.01, target_verify=0.00, draft_prefill=0.00, draft_decode=0.00,
    draft_extend=0.00}, tokenizer_e2e=60.43

and, before it, ``Load weight end. ... mem usage=15.02 GB`` per model (target, then draft) and ``KV Cache is
allocated. ... #tokens: 788603, K size: 48.13 GB, V size: 48.13 GB`` per pool. :func:`startup_timings` turns
them into one flat record (seconds and GB), so a run can say where its time to ready went: the first start of
a machine compiles its kernels (the prefill CUDA graphs took 41.6 s there, 7.9 s on later starts).
"""

from __future__ import annotations

import re
from typing import Any

__all__ = ["startup_timings"]

_TIMINGS = re.compile(r"Engine startup timings \(s\): (?P<body>.*)$", re.MULTILINE)
_PAIR = re.compile(r"(\w+)=([0-9.]+)")
_GRAPHS = re.compile(r"cuda_graph=\{(?P<graphs>[^}]*)\}")
_WEIGHTS = re.compile(r"Load weight end\..*?type=(?P<type>\w+).*?mem usage=(?P<gb>[0-9.]+) GB")
_KV = re.compile(
    r"KV Cache is allocated\..*?#tokens: (?P<tokens>\d+), K size: (?P<k>[0-9.]+) GB, V size: "
    r"(?P<v>[0-9.]+) GB"
)


def startup_timings(log_text: str) -> dict[str, Any]:
    """The start-up record of an SGLang log: ``{}`` when the log has none of the lines (an older release, a
    server that never got that far).

    Keys: ``load_weight_s``, ``kv_cache_allocation_s``, ``scheduler_e2e_s``, ``tokenizer_e2e_s`` (each as
    SGLang logged it), ``cuda_graph_s`` (phase -> seconds: prefill, decode, target_verify, draft_prefill,
    draft_decode, draft_extend) and ``cuda_graph_total_s``; ``weights_gb`` (model class -> GB, target and
    draft) and ``kv_cache`` (a list per pool: ``tokens``, ``gb`` for K and V together).
    """
    out: dict[str, Any] = {}
    found = _TIMINGS.findall(log_text)
    if found:
        body = found[-1]  # the last start in the log
        graphs = _GRAPHS.search(body)
        flat = _GRAPHS.sub("", body)
        for key, value in _PAIR.findall(flat):
            out[f"{key}_s"] = float(value)
        if graphs:
            phases = {k: float(v) for k, v in _PAIR.findall(graphs.group("graphs"))}
            out["cuda_graph_s"] = phases
            out["cuda_graph_total_s"] = round(sum(phases.values()), 3)
    weights = {m.group("type"): float(m.group("gb")) for m in _WEIGHTS.finditer(log_text)}
    if weights:
        out["weights_gb"] = weights
    pools = [
        {"tokens": int(m.group("tokens")), "gb": round(float(m.group("k")) + float(m.group("v")), 3)}
        for m in _KV.finditer(log_text)
    ]
    if pools:
        out["kv_cache"] = pools
    return out
