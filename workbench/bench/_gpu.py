"""GPU telemetry of the machine the load generator runs on: ``nvidia-smi --query-gpu`` as points.

One query per sample (``nvidia-smi --query-gpu=<QUERY_FIELDS> --format=csv``, about
20-50 ms; NVML directly would need ``pynvml``, which a GPU host's SGLang environment may
lack). :func:`parse_query_csv` reads the CSV by its header, so any field list parses;
units (``" %"``, ``" MiB"``, ``" W"``, ``" MHz"``) and ``[N/A]`` / ``[Not Supported]``
cells are handled (the latter left out). Without ``nvidia-smi`` (no NVIDIA driver, as on
this workbench's own machine) :func:`query_gpus` reports why and samples nothing.

Points (see :mod:`workbench.bench._observe`) have ``source="gpu"``, ``rank="gpu<index>"``
and these names: ``gpu_util_pct``, ``memory_used_mib``, ``memory_total_mib``, ``power_w``,
``sm_clock_mhz``, ``graphics_clock_mhz``, ``memory_clock_mhz``, ``temperature_c``,
``fan_pct``.
"""

from __future__ import annotations

import asyncio
import csv
import io
import shutil
import time
from typing import Any

__all__ = ["QUERY_FIELDS", "parse_query_csv", "query_gpus"]

#: What each sample asks for.
QUERY_FIELDS = ("timestamp", "index", "utilization.gpu", "memory.used", "memory.total", "power.draw", "clocks.sm")

#: Header field (without its ``[unit]``) -> point name.
_NAMES = {
    "utilization.gpu": "gpu_util_pct",
    "memory.used": "memory_used_mib",
    "memory.total": "memory_total_mib",
    "power.draw": "power_w",
    "clocks.current.sm": "sm_clock_mhz",
    "clocks.sm": "sm_clock_mhz",
    "clocks.current.graphics": "graphics_clock_mhz",
    "clocks.gr": "graphics_clock_mhz",
    "clocks.current.memory": "memory_clock_mhz",
    "clocks.mem": "memory_clock_mhz",
    "temperature.gpu": "temperature_c",
    "fan.speed": "fan_pct",
}


def _number(cell: str) -> float | None:
    text = cell.strip()
    if not text or text.startswith("["):  # [N/A], [Not Supported], [Unknown Error]
        return None
    try:
        return float(text.split()[0])
    except ValueError:
        return None


def _timestamp(cell: str) -> float | None:
    """``2026/12/01 13:01:21.329`` (the host's local time) -> Unix seconds."""
    text = cell.strip()
    whole, _, frac = text.partition(".")
    try:
        return time.mktime(time.strptime(whole, "%Y/%m/%d %H:%M:%S")) + (float("0." + frac) if frac else 0.0)
    except ValueError:
        return None


def parse_query_csv(text: str, *, now: float | None = None) -> list[dict[str, Any]]:
    """Points of ``nvidia-smi --query-gpu ... --format=csv[,nounits]`` output.

    Args:
        text: the CSV (header first; lines starting with ``#`` are skipped).
        now: Unix seconds for rows without a ``timestamp`` column (default: now).

    Returns:
        One point per numeric cell of a known field (see the module docstring).

    Raises:
        ValueError: no header, or a row with a different number of cells.
    """
    lines = [line for line in text.splitlines() if line.strip() and not line.lstrip().startswith("#")]
    if not lines:
        raise ValueError("nvidia-smi output has no CSV header")
    rows = list(csv.reader(io.StringIO("\n".join(lines)), skipinitialspace=True))
    header = [h.split(" [", 1)[0].strip() for h in rows[0]]
    stamp = time.time() if now is None else now
    out = []
    for n, row in enumerate(rows[1:]):
        if len(row) != len(header):
            raise ValueError(f"nvidia-smi CSV row {n + 1} has {len(row)} cells for {len(header)} columns: {row}")
        cells = dict(zip(header, row))
        t = _timestamp(cells["timestamp"]) if "timestamp" in cells else None
        index = _number(cells["index"]) if "index" in cells else None
        rank = f"gpu{int(index) if index is not None else n}"
        for field, name in _NAMES.items():
            if field in cells:
                value = _number(cells[field])
                if value is not None:
                    out.append(
                        {
                            "source": "gpu",
                            "t_epoch_s": t if t is not None else stamp,
                            "rank": rank,
                            "name": name,
                            "value": value,
                        }
                    )
    return out


async def query_gpus(
    executable: str | None = None, *, timeout_s: float = 10.0
) -> tuple[list[dict[str, Any]], str | None]:
    """One sample of every GPU: ``(points, None)``, or ``([], why not)`` (no nvidia-smi, an error).

    Args:
        executable: the ``nvidia-smi`` to run (default: the one on ``PATH``).
        timeout_s: give up after this long.
    """
    exe = executable or shutil.which("nvidia-smi")
    if exe is None:
        return [], "nvidia-smi is not on PATH (no NVIDIA driver here): no GPU telemetry"
    try:
        proc = await asyncio.create_subprocess_exec(
            exe,
            f"--query-gpu={','.join(QUERY_FIELDS)}",
            "--format=csv",
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        out, err = await asyncio.wait_for(proc.communicate(), timeout_s)
    except (OSError, asyncio.TimeoutError) as exc:
        return [], f"{exe}: {type(exc).__name__}: {exc}"
    if proc.returncode != 0:
        return [], f"{exe} exited {proc.returncode}: {err.decode(errors='replace').strip()[:300]}"
    try:
        return parse_query_csv(out.decode(errors="replace")), None
    except ValueError as exc:
        return [], f"{exe}: {exc}"
