"""What a server handle asks: the host's view of the server's process group, and the server's own HTTP answers.

:class:`~workbench.servers.ServerHandle` asks both while it waits for a server and whenever it is asked
about it: the process group through the host's ``process_status`` helper (:func:`process_status`: alive,
members, listening ports, heartbeat age, and the log's new bytes from an offset), and the server itself
over HTTP through the handle's forward (:func:`http_status` of a route such as ``/health_generate``, and
:func:`server_info`).
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from typing import Any

from workbench.errors import ServerError
from workbench.hosts import Host, SpawnedProcess, call_helper
from workbench.servers._registry import ServerRecord

__all__ = ["http_status", "process_status", "server_info"]


def process_status(
    host: Host,
    record: ServerRecord,
    process: SpawnedProcess,
    *,
    python: str,
    log_offset: int | None = None,
    ports: bool = False,
    max_log_bytes: int | None = None,
) -> dict[str, Any]:
    """The host's ``process_status`` answer for one server (the helper's JSON, one process).

    Args:
        host: where the server runs.
        record: its registry record (id, heartbeat file).
        process: its detached leader (pid, process group, start time, log path).
        python: the interpreter on the host that runs the helper.
        log_offset: also read the log from this byte offset (None: no log).
        ports: also list the ports the process group listens on.
        max_log_bytes: the most log bytes to read (None: the helper's default).
    """
    spec: dict[str, Any] = {
        "id": record.id,
        "pid": process.pid,
        "pgid": process.pgid,
        "start_time": process.start_time,
        "heartbeat_path": record.heartbeat_path,
    }
    if log_offset is not None:
        spec.update(log_path=process.log_path, log_offset=log_offset)
    request: dict[str, Any] = {"processes": [spec], "ports": ports}
    if max_log_bytes:
        request["max_log_bytes"] = max_log_bytes
    return call_helper(host, "process_status", request, python=python)["processes"][0]


def http_status(url: str, route: str, *, timeout_s: float = 30) -> int | None:
    """The HTTP status of ``GET <url><route>``; None when the server does not answer."""
    try:
        with urllib.request.urlopen(url + route, timeout=timeout_s) as resp:
            return resp.status
    except urllib.error.HTTPError as exc:
        return exc.code
    except OSError:
        return None


def server_info(url: str, variant: str) -> dict[str, Any]:
    """``GET /server_info`` of the server at ``url`` (falls back to ``/get_server_info`` before 0.5.6).

    Raises:
        ServerError: the server (``variant``, for the message) does not answer either route.
    """
    for route in ("/server_info", "/get_server_info"):
        try:
            with urllib.request.urlopen(url + route, timeout=30) as resp:
                return json.loads(resp.read())
        except urllib.error.HTTPError as exc:
            if exc.code != 404:
                raise ServerError(f"{route} on {url} answered HTTP {exc.code}") from exc
        except OSError as exc:
            raise ServerError(f"Server {variant!r} at {url} does not answer: {exc}") from exc
    raise ServerError(f"Server at {url} has neither /server_info nor /get_server_info")
