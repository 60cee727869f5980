#!/usr/bin/env python3
"""GPU inventory of this host from nvidia-smi: names, memory, and NVLink vs PCIe, answer JSON.

Runs ON the GPU host with any Python 3.8 or newer, standard library only. Two
nvidia-smi calls, one round trip for the caller:

- ``nvidia-smi --query-gpu=index,name,uuid,memory.total,memory.used,pci.bus_id,driver_version
  --format=csv,noheader,nounits`` for the GPUs;
- ``nvidia-smi topo -m`` for how each pair of GPUs is connected. Its legend (as
  nvidia-smi prints it): ``X`` self; ``NV#`` a bonded set of # NVLinks; ``PIX`` at
  most one PCIe bridge; ``PXB`` several PCIe bridges; ``PHB`` a PCIe host bridge
  (the CPU); ``NODE`` PCIe plus the interconnect between host bridges of one NUMA
  node; ``SYS`` PCIe plus the SMP interconnect between NUMA nodes.

Request: ``{"nvidia_smi": "nvidia-smi", "topology": true}`` (both optional).

Answer::

    {"ok": true,
     "nvidia_smi": true,              # false: no nvidia-smi on this host (then gpus is [])
     "driver_version": "550.54.15",
     "gpus": [{"index": 0, "name": "NVIDIA H100 80GB HBM3", "uuid": "GPU-...",
               "memory_total_mib": 81559, "memory_used_mib": 4, "pci_bus_id": "00000000:18:00.0"}],
     "links": [{"a": 0, "b": 1, "link": "NV18"}],   # each GPU pair once (a < b)
     "interconnect": "nvlink" | "pcie" | "mixed" | "single" | "none" | "unknown",
     "topology_text": "...",           # nvidia-smi topo -m as printed (null when not run)
     "error": null}                    # why nvidia-smi failed, when it exists but failed

``interconnect`` is ``nvlink`` when every GPU pair is NV#, ``pcie`` when none is,
``mixed`` otherwise, ``single`` for one GPU, ``none`` without GPUs and
``unknown`` when nvidia-smi failed or printed no matrix.
"""

from __future__ import annotations

import csv
import os
import re
import shutil
import subprocess
import sys

sys.path[:0] = [os.path.dirname(os.path.abspath(__file__))]  # _common.py lies beside (also under python -I)
import _common  # noqa: E402
from _common import RequestError  # noqa: E402

SMI_TIMEOUT_S = 60
QUERY_FIELDS = "index,name,uuid,memory.total,memory.used,pci.bus_id,driver_version"
_GPU_LABEL = re.compile(r"^GPU(\d+)$")


def _int_or_none(text):
    try:
        return int(float(text))
    except (TypeError, ValueError):
        return None


def parse_query_csv(text):
    """GPU dicts from ``--query-gpu=...`` CSV output (noheader, nounits); driver version or None."""
    gpus, driver = [], None
    for row in csv.reader(text.splitlines(), skipinitialspace=True):
        if len(row) < 6 or not row[0].strip().isdigit():
            continue
        gpus.append(
            {
                "index": int(row[0]),
                "name": row[1].strip(),
                "uuid": row[2].strip(),
                "memory_total_mib": _int_or_none(row[3]),
                "memory_used_mib": _int_or_none(row[4]),
                "pci_bus_id": row[5].strip(),
            }
        )
        if len(row) > 6 and row[6].strip():
            driver = row[6].strip()
    return gpus, driver


def parse_topology(text):
    """The GPU-to-GPU part of ``nvidia-smi topo -m`` output.

    Returns:
        ``{(i, j): code}`` for every GPU row ``i`` and GPU column ``j`` printed
        (``code`` as printed: ``X``, ``NV12``, ``PIX``, ``SYS``...). NIC columns,
        CPU/NUMA affinity columns, NIC rows and the legend are ignored. An empty
        dict when no matrix header (a line starting with ``GPU0``) is found.
    """
    columns = None
    matrix = {}
    for line in text.splitlines():
        tokens = line.split()
        if not tokens:
            continue
        if tokens[0] == "Legend:":
            break
        if columns is None:
            if tokens[0] == "GPU0":
                columns = []
                for token in tokens:
                    match = _GPU_LABEL.match(token)
                    if not match:
                        break
                    columns.append(int(match.group(1)))
            continue
        match = _GPU_LABEL.match(tokens[0])
        if not match:
            continue
        row = int(match.group(1))
        for col, code in zip(columns, tokens[1 : 1 + len(columns)]):
            matrix[(row, col)] = code
    return matrix


def classify_links(matrix):
    """(links, interconnect) from a parsed matrix: each GPU pair once, and the summary word."""
    gpus = sorted({i for i, _ in matrix} | {j for _, j in matrix})
    links = []
    for (i, j), code in sorted(matrix.items()):
        if i < j:
            links.append({"a": i, "b": j, "link": code})
    if not links:
        return links, ("single" if len(gpus) == 1 else "unknown")
    nv = [link["link"].upper().startswith("NV") for link in links]
    if all(nv):
        kind = "nvlink"
    elif any(nv):
        kind = "mixed"
    else:
        kind = "pcie"
    return links, kind


def _run(argv):
    proc = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=SMI_TIMEOUT_S)
    out = proc.stdout.decode("utf-8", "replace")
    err = proc.stderr.decode("utf-8", "replace")
    return proc.returncode, out, err


def inventory(nvidia_smi="nvidia-smi", topology=True):
    """The answer object (see module docstring)."""
    reply = {
        "ok": True,
        "nvidia_smi": False,
        "driver_version": None,
        "gpus": [],
        "links": [],
        "interconnect": "none",
        "topology_text": None,
        "error": None,
    }
    exe = nvidia_smi if os.sep in nvidia_smi else shutil.which(nvidia_smi)
    if not exe or not os.access(exe, os.X_OK):
        return reply
    reply["nvidia_smi"] = True
    try:
        code, out, err = _run([exe, "--query-gpu=" + QUERY_FIELDS, "--format=csv,noheader,nounits"])
    except (OSError, subprocess.SubprocessError) as exc:
        reply.update(interconnect="unknown", error="%s: %s" % (type(exc).__name__, exc))
        return reply
    if code != 0:
        message = (err.strip() or out.strip() or "exit status %d" % code)[-500:]
        reply.update(interconnect="unknown", error="nvidia-smi failed: " + message)
        return reply
    reply["gpus"], reply["driver_version"] = parse_query_csv(out)
    if not reply["gpus"]:
        return reply
    if len(reply["gpus"]) == 1:
        reply["interconnect"] = "single"
    if not topology or len(reply["gpus"]) == 1:
        return reply
    try:
        code, out, err = _run([exe, "topo", "-m"])
    except (OSError, subprocess.SubprocessError) as exc:
        reply.update(interconnect="unknown", error="nvidia-smi topo -m: %s: %s" % (type(exc).__name__, exc))
        return reply
    reply["topology_text"] = out
    if code != 0:
        reply.update(interconnect="unknown", error="nvidia-smi topo -m failed: " + (err.strip() or out.strip())[-500:])
        return reply
    reply["links"], reply["interconnect"] = classify_links(parse_topology(out))
    return reply


def parse_request(raw):
    """The request object from stdin bytes (empty input means the defaults)."""
    request = _common.load_request(raw, empty_means_defaults=True)
    if not isinstance(request.get("nvidia_smi", "nvidia-smi"), str):
        raise RequestError("'nvidia_smi' must be a string")
    return request


def answer(request):
    """The answer object for a parsed request."""
    return inventory(request.get("nvidia_smi") or "nvidia-smi", bool(request.get("topology", True)))


def main():
    """Read the request from stdin, write the answer to stdout; return the exit status."""
    return _common.serve(lambda raw: answer(parse_request(raw)))


if __name__ == "__main__":
    sys.exit(main())
