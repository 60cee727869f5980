"""Where a fleet sweep runs: a Ray cluster (:class:`Fleet`) and joining it as a driver (:func:`connect`).

Before ``ray.init``, which waits about 14 minutes for a head that does not answer, the head is probed
(:func:`head_answers`: a TCP connection, then the gRPC greeting) and asked once for its cluster id, so a
wrong address, a head that is down and a missing token are each told in seconds (:class:`FleetUnreachable`,
or a :class:`~workbench.errors.ConfigError` saying how to give the token).

Ray is imported only in the ``_fleet*`` modules (the ``fleet`` extra).
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import socket
import sys
import threading
from collections.abc import Iterator
from typing import Any

from workbench.errors import ConfigError, HostError

__all__ = ["DEFAULT_MAX_RETRIES", "Fleet", "FleetUnreachable", "connect", "head_answers", "ray_module"]

#: Default retries of a unit whose worker crashed or whose node was lost.
DEFAULT_MAX_RETRIES = 2
#: Seconds :func:`head_answers` waits for a fleet's head to accept a TCP connection, then for its gRPC answer.
PROBE_CONNECT_S = 5.0
PROBE_ANSWER_S = 10.0
#: Milliseconds the one GCS request before ``ray.init`` may take (the token check, :func:`connect`).
GCS_CHECK_MS = 10_000
#: An HTTP/2 client preface and an empty SETTINGS frame: a gRPC server (Ray's GCS, its client server) answers
#: with a SETTINGS frame of its own (frame type 4), whatever its token; anything else is no Ray head.
_HTTP2_HELLO = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + bytes([0, 0, 0, 4, 0, 0, 0, 0, 0])


class FleetUnreachable(ConfigError, HostError):
    """No Ray head answers at the fleet's address (or none of those ``"auto"`` found): the address is wrong or
    its head is down. A HostError (the cluster cannot be reached) that the CLI treats as bad input (exit 2)."""


@dataclasses.dataclass(frozen=True)
class Fleet:
    """Where a sweep's units run: a Ray cluster, and how units share its hosts.

    Attributes:
        address: the Ray cluster's address as ``ray.init`` takes it (``"10.0.0.5:6379"``,
            ``"auto"`` for the cluster this machine belongs to, ``"ray://host:10001"``).
        one_unit_per_host: run at most one unit at a time on each host (a host is a node IP):
            neighbours share CPU, PCIe and memory bandwidth, so this measures each unit alone
            at the cost of idle GPUs. Default False: as many as the GPU slots allow.
        max_retries: how often Ray runs a unit again whose worker crashed or node was lost; with
            ``one_unit_per_host`` also how often the driver moves a unit whose pinned host was lost.
    """

    address: str
    one_unit_per_host: bool = False
    max_retries: int = DEFAULT_MAX_RETRIES

    @classmethod
    def of(cls, fleet: str | Fleet) -> Fleet:
        """``fleet`` as a :class:`Fleet` (an address string gets the defaults).

        Raises:
            ConfigError: neither a non-empty address nor a Fleet, or a negative ``max_retries``.
        """
        if isinstance(fleet, Fleet):
            chosen = fleet
        elif isinstance(fleet, str) and fleet.strip():
            chosen = cls(address=fleet.strip())
        else:
            raise ConfigError(
                f"fleet must be a Ray cluster address (e.g. '10.0.0.5:6379' or 'auto') or a "
                f"workbench.sweeps.Fleet, got {fleet!r}"
            )
        if isinstance(chosen.max_retries, bool) or not isinstance(chosen.max_retries, int) or chosen.max_retries < 0:
            raise ConfigError(f"Fleet.max_retries must be a whole number >= 0, got {chosen.max_retries!r}")
        return chosen

    @property
    def name(self) -> str:
        """``"fleet:<address>"``: what a run's manifest records as its host."""
        return f"fleet:{self.address}"


def ray_module() -> Any:
    """The ``ray`` module, or a ConfigError saying how to install it."""
    try:
        import ray
    except ImportError as exc:
        raise ConfigError(
            "Sweeps on a fleet need Ray: pip install 'specbench-workbench[fleet]' (ray[default]); "
            f"importing it failed: {exc}"
        ) from None
    return ray


def _host_port(address: str) -> tuple[str, int] | None:
    """``(host, port)`` of ``"host:port"``, ``"[v6]:port"`` or ``"ray://host:port"``; None for anything else."""
    host, sep, port = address.split("://", 1)[-1].rstrip("/").rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        return None
    return host.strip("[]"), int(port)


def head_answers(address: str, *, connect_s: float = PROBE_CONNECT_S, answer_s: float = PROBE_ANSWER_S) -> str | None:
    """Why no Ray head answers at ``address``, in a few words; None when one does.

    A TCP connection to the head's port (at most ``connect_s`` seconds), then the HTTP/2 greeting every gRPC
    server answers (at most ``answer_s`` seconds), so a closed port, a host that drops the connection and a port
    held by something else (Redis on 6379) are each told apart in seconds, where ``ray.init`` retries for about
    14 minutes (Ray 2.60: 20 attempts of 5 + 30 s, each logging warnings). With ``RAY_USE_TLS`` set only the
    TCP connection is tried. Plain sockets: Ctrl-C ends the wait at once.

    Args:
        address: ``host:port`` (the GCS port, 6379 by default) or ``ray://host:port`` (a Ray client server).
        connect_s: seconds allowed for the TCP connection.
        answer_s: seconds allowed for the gRPC answer.
    """
    where = _host_port(address)
    if where is None:
        return "it is not HOST:PORT"
    try:
        sock = socket.create_connection(where, timeout=connect_s)
    except ConnectionRefusedError:
        return "connection refused: nothing listens on that port"
    except TimeoutError:
        return f"no answer to a TCP connection within {connect_s:g} s"
    except OSError as exc:
        return exc.strerror or str(exc)
    with sock:
        if os.environ.get("RAY_USE_TLS", "").lower() in ("1", "true"):
            return None
        try:
            sock.settimeout(answer_s)
            sock.sendall(_HTTP2_HELLO)
            head = sock.recv(9)
        except TimeoutError:
            return f"it took the connection but gave no gRPC answer within {answer_s:g} s, so it is no Ray head"
        except OSError as exc:
            return f"the connection failed: {exc.strerror or exc}"
    if len(head) < 4 or head[3] != 4:
        return "what listens there is not a Ray head (no gRPC answer)"
    return None


def _auto_address() -> str:
    """The head ``ray.init(address="auto")`` would join, once it answers (its ``host:port``).

    Ray 2.60 takes ``RAY_ADDRESS``; else a Ray GCS process running on this machine when there is exactly one;
    else its record of the last cluster started here (``ray_current_cluster`` under ``$RAY_TMPDIR/ray``, default
    ``/tmp/ray``), which outlives that cluster (``fleet down`` leaves it). Ray's choice is joined only when it
    answers (:func:`head_answers`); every other cluster found is checked at the same time, so that the error
    can name those that answer, but none is joined in its place (it may be another user's).

    Raises:
        FleetUnreachable: none found, or Ray's choice does not answer (the message names each one found, why
            it was ignored, and what to do).
    """
    from ray._common.utils import get_ray_address_file
    from ray._private import services

    record_file = get_ray_address_file(None)
    found: dict[str, str] = {}  # address -> where it was found, Ray's choice first
    if os.environ.get("RAY_ADDRESS"):
        found[os.environ["RAY_ADDRESS"]] = "RAY_ADDRESS"
    else:
        record = services.find_bootstrap_address(None)
        running = sorted(services.find_gcs_addresses())
        try:
            pick = services.get_ray_address_from_environment("auto", None)
        except ConnectionError:
            pick = None
        for address in [pick, record, *running] if pick else []:
            if address and address not in found:
                found[address] = (
                    f"Ray's record of the last cluster ({record_file})"
                    if address == record
                    else "a Ray process running on this machine"
                )
    if not found:
        raise FleetUnreachable(
            "--fleet auto found no Ray cluster (no RAY_ADDRESS, no Ray process on this machine, no "
            f"record in {record_file}): pass the head's address (--fleet HOST:6379) or start a "
            "fleet (`workbench fleet up HOST...`)"
        )
    why: dict[str, str | None] = {address: "not checked" for address in found}

    def check(address: str) -> None:
        why[address] = head_answers(address)

    # daemon threads: Ctrl-C (in the main thread's join) ends the command without waiting for them
    threads = [threading.Thread(target=check, args=(address,), daemon=True) for address in found]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    chosen, source = next(iter(found.items()))
    if why[chosen] is None:
        return chosen
    others = [address for address in found if address != chosen and why[address] is None]
    instead = (
        f"clusters that answer here: {', '.join(others)} (pass one with --fleet HOST:PORT)"
        if others
        else "pass a live head's address (--fleet HOST:6379) or start a fleet (`workbench fleet up HOST...`)"
    )
    stale = f"; if that cluster is gone, remove the stale record (rm {record_file})" if "record" in source else ""
    raise FleetUnreachable(
        f"--fleet auto ignored {source}: it names {chosen}, which does not answer ({why[chosen]}); {instead}{stale}"
    )


@contextlib.contextmanager
def _quiet_stderr() -> Iterator[None]:
    """File descriptor 2 sent to /dev/null: Ray's C++ client logs each failed attempt there itself."""
    sys.stderr.flush()
    saved = os.dup(2)
    try:
        with open(os.devnull, "w") as null:
            os.dup2(null.fileno(), 2)
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)


def _token_advice(address: str, shown: str) -> str:
    """One line: the cluster at ``address`` refused this process's token (or its lack of one), and how to give it."""
    given = os.environ.get("RAY_AUTH_MODE", "").lower() == "token"
    files = []
    try:
        from workbench.sweeps._fleet_state import fleet_dir, load_state

        for path in sorted(fleet_dir().glob("*.json")):
            with contextlib.suppress(ConfigError):
                state = load_state(path.stem)
                if state.address == address:
                    files.append(
                        f"fleet {state.name}'s is {state.token_path} here, {state.remote_dir}/auth_token on its hosts"
                    )
    except OSError:
        pass
    where = (
        "; ".join(files)
        or "a fleet of `workbench fleet up` keeps it in .fleet/NAME.token and "
        "~/.workbench/fleet/NAME/auth_token on its hosts"
    )
    return (
        f"The Ray cluster at {shown} wants its token: "
        f"{'the token given is not its own' if given else 'this process gave none (RAY_AUTH_MODE is not token)'}."
        f" Give it with RAY_AUTH_MODE=token and RAY_AUTH_TOKEN_PATH=FILE (or RAY_AUTH_TOKEN) in the environment "
        f"({where})"
    )


def connect(fleet: Fleet) -> Any:
    """Join the Ray cluster at ``fleet.address`` as a driver (once per process); returns ``ray``.

    Before ``ray.init``, which waits about 14 minutes for a head that does not answer: the head is checked
    (:func:`head_answers`, seconds; for ``"auto"`` each cluster Ray would find, :func:`_auto_address`), then asked
    once for its cluster id, which tells a missing or wrong token at once (Ray 2.60 ``AuthenticationError``, where
    ``ray.init`` retries 20 times over 20 s).

    Raises:
        ConfigError: Ray is not installed, or the cluster refused the token (the message says how to give it).
        FleetUnreachable: no Ray head answers at the address (or none of those ``"auto"`` found).
        HostError: the head answers, but joining failed.
    """
    loaded = sys.modules.get("ray")
    if loaded is not None and loaded.is_initialized():
        return loaded
    if fleet.address != "auto" and "://" not in fleet.address:  # before importing Ray: seconds on a loaded host
        why = head_answers(fleet.address)
        if why is not None:
            raise FleetUnreachable(
                f"No Ray head answers at {fleet.address} ({why}): check the address (the head's "
                "IP and its GCS port, 6379 by default) and that the cluster is up (`workbench "
                "fleet status`, or `ray start --head` there)"
            )
    ray = ray_module()
    address, head, shown = fleet.address, fleet.address, fleet.address
    if fleet.address == "auto":
        head = _auto_address()
        shown = f"{head} (found by --fleet auto)"
    elif "://" in fleet.address:
        why = head_answers(fleet.address)
        if why is not None:
            raise FleetUnreachable(
                f"No Ray client server answers at {fleet.address} ({why}): check the address "
                "(ray://HEAD:10001) and that the cluster is up"
            )
    if "://" not in head:
        if address == "auto":  # as ray.init does for a cluster it found: a local token turns token mode on
            with contextlib.suppress(ImportError):
                from ray._private.authentication.authentication_token_setup import (
                    maybe_enable_token_auth_if_token_available,
                )

                maybe_enable_token_auth_if_token_available(warn_if_disabled=False)
        from ray._raylet import InnerGcsClient  # type: ignore[attr-defined]

        try:
            with _quiet_stderr():
                InnerGcsClient.standalone(head, None, GCS_CHECK_MS)
        except ray.exceptions.AuthenticationError:
            raise ConfigError(_token_advice(head, shown)) from None
        except Exception as exc:  # noqa: BLE001 - Ray's RPC errors have no common class
            first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
            raise FleetUnreachable(
                f"The Ray head at {shown} took the connection but its GCS did not answer within "
                f"{GCS_CHECK_MS / 1000:g} s ({first}): check that it is a Ray head and up "
                "(`workbench fleet status`)"
            ) from None
    try:
        ray.init(address=address, log_to_driver=False, configure_logging=False)
    except (ConnectionError, RuntimeError, ValueError) as exc:
        raise HostError(f"Cannot join the Ray cluster at {shown}, though its head answers: {exc}") from exc
    return ray
