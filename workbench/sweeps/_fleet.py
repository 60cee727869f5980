"""A sweep's units as Ray tasks: GPU slots, parallel scheduling, retries and cancellation.

The unit itself stays the workbench's (launch the server, wait until ready, run the load
generator beside it, classify a failure, stop it: ``task`` below); Ray only places it. Each
unit is one Ray task asking for ``num_gpus`` GPU slots: Ray gives tasks disjoint
``CUDA_VISIBLE_DEVICES`` on a node and runs as many at once as the nodes' free slots allow
(Ray 2.60, measured with fake GPUs, ``ray start --num-gpus=4``; docs/FLEET.md).

Faults (Ray's semantics, Ray 2.60 ``ray.remote`` ``max_retries``):

- a worker process that crashed, or a node that was lost, fails the task with a Ray
  system error and Ray runs it again, up to ``max_retries`` times; a unit pinned to its host
  (``one_unit_per_host``) whose host was lost is submitted again by the driver instead, pinned to a
  free alive host, also up to ``max_retries`` times (:func:`run_units`);
- an exception raised by ``task`` is not retried (``retry_exceptions`` stays off): the
  unit's own failures (a server that never became ready) are classified by ``task`` and
  returned as its result, never raised;
- Ctrl-C (``KeyboardInterrupt``) in :func:`run_units` cancels every unit: ``ray.cancel``
  raises ``KeyboardInterrupt`` inside a running task, whose ``with`` blocks stop its server;
  a unit still running :data:`CANCEL_GRACE_S` seconds later is cancelled with ``force=True``
  (its worker is killed; the server's host-side watchdog, which watches the worker's pid,
  stops the server within a second or two: :mod:`workbench.servers`).

Before the first submission :func:`run_units` prestarts one warm worker per unit slot
(:func:`_prestart`), so no unit waits for a worker process to start and import the workbench.

Ray is imported only here and in the other ``_fleet*`` modules (the ``fleet`` extra,
``pip install specbench-workbench[fleet]``); nothing else in the workbench imports it.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import socket
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

from workbench.errors import ConfigError, HostError

__all__ = ["CANCEL_GRACE_S", "Fleet", "FleetUnit", "FleetUnreachable", "Placement", "Prestart", "UnitOutcome",
           "connect", "head_answers", "run_units"]

#: Seconds a cancelled unit gets to stop its server before its worker is killed (force cancel).
CANCEL_GRACE_S = 3.0
#: Default retries of a unit whose worker crashed or whose node was lost.
DEFAULT_MAX_RETRIES = 2
#: Seconds the driver waits for the prestarted workers before it submits the units anyway (a node whose
#: GPUs another job holds cannot take its warm-up; its units then start on cold workers).
PRESTART_TIMEOUT_S = 120.0
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
            raise ConfigError(f"fleet must be a Ray cluster address (e.g. '10.0.0.5:6379' or 'auto') or a "
                              f"workbench.sweeps.Fleet, got {fleet!r}")
        if isinstance(chosen.max_retries, bool) or not isinstance(chosen.max_retries, int) or chosen.max_retries < 0:
            raise ConfigError(f"Fleet.max_retries must be a whole number >= 0, got {chosen.max_retries!r}")
        return chosen

    @property
    def name(self) -> str:
        """``"fleet:<address>"``: what a run's manifest records as its host."""
        return f"fleet:{self.address}"


@dataclasses.dataclass(frozen=True)
class FleetUnit:
    """One unit of work to place on the fleet.

    Attributes:
        key: the caller's key for it (e.g. ``(variant index, repeat)``).
        label: words for progress lines (``"eagle3-topk4 repeat 2"``).
        gpus: GPU slots it asks for (``tp_size x dp_size``; 0 for a CPU-only engine); per node for a unit
            spanning nodes.
        payload: what ``task`` gets (picklable).
        nnodes: the nodes its server spans (default 1). Above 1 the unit gets a placement group of one
            bundle of ``gpus`` per node (``STRICT_SPREAD``) and its task runs in bundle 0
            (:mod:`workbench.sweeps._fleet_multinode`).
    """

    key: Any
    label: str
    gpus: int
    payload: Any
    nnodes: int = 1


@dataclasses.dataclass(frozen=True)
class Placement:
    """Where a unit ran, as its Ray worker saw it.

    Attributes:
        node_id: the Ray node's id.
        host: the node's IP address (``ray.util.get_node_ip_address()``).
        hostname: the node's host name.
        gpus: the GPU ids Ray gave the task (``ray.get_gpu_ids()``, as strings), which are
            also its ``CUDA_VISIBLE_DEVICES``.
        pid: the worker's process id.
        started_at: UTC wall-clock seconds (``time.time()``) when the task began on the worker.
    """

    node_id: str
    host: str
    hostname: str
    gpus: tuple[str, ...]
    pid: int
    started_at: float


@dataclasses.dataclass(frozen=True)
class UnitOutcome:
    """What became of one unit.

    Attributes:
        unit: the unit.
        placement: where its last attempt ran (None when it never returned).
        result: what ``task`` returned (None when it did not return).
        finished_at: UTC wall-clock seconds when the driver saw it finish.
        submitted_at: UTC wall-clock seconds when the driver submitted it (its last submission;
            ``placement.started_at - submitted_at`` is the fleet's overhead before the unit runs:
            Ray's scheduling, a worker process, unpickling).
        lost: True when the error is Ray's (its worker crashed or its node was lost, after the
            retries), False when ``task`` raised or the unit was cancelled.
        moved_from: with ``one_unit_per_host``, the hosts (node IPs) the unit was pinned to that were lost
            before or while it ran there, in order; each time the driver submitted it again to a free host
            (:func:`run_units`). Empty otherwise.
        error: why it did not return: a Ray system error after its retries (worker crash,
            lost node), an exception ``task`` raised, or ``"cancelled"``; None when it returned.
    """

    unit: FleetUnit
    placement: Placement | None
    result: Any
    finished_at: float
    error: str | None = None
    submitted_at: float | None = None
    lost: bool = False
    moved_from: tuple[str, ...] = ()

    @property
    def ok(self) -> bool:
        """True when ``task`` returned."""
        return self.error is None


def _ray() -> Any:
    """The ``ray`` module, or a ConfigError saying how to install it."""
    try:
        import ray
    except ImportError as exc:
        raise ConfigError("Sweeps on a fleet need Ray: pip install 'specbench-workbench[fleet]' (ray[default]); "
                          f"importing it failed: {exc}") from None
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
                found[address] = (f"Ray's record of the last cluster ({record_file})" if address == record
                                  else "a Ray process running on this machine")
    if not found:
        raise FleetUnreachable("--fleet auto found no Ray cluster (no RAY_ADDRESS, no Ray process on this machine, no "
                               f"record in {record_file}): pass the head's address (--fleet HOST:6379) or start a "
                               "fleet (`workbench fleet up HOST...`)")
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
    instead = (f"clusters that answer here: {', '.join(others)} (pass one with --fleet HOST:PORT)" if others
               else "pass a live head's address (--fleet HOST:6379) or start a fleet (`workbench fleet up HOST...`)")
    stale = f"; if that cluster is gone, remove the stale record (rm {record_file})" if "record" in source else ""
    raise FleetUnreachable(f"--fleet auto ignored {source}: it names {chosen}, which does not answer "
                           f"({why[chosen]}); {instead}{stale}")


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
                    files.append(f"fleet {state.name}'s is {state.token_path} here, {state.remote_dir}/auth_token "
                                 "on its hosts")
    except OSError:
        pass
    where = "; ".join(files) or "a fleet of `workbench fleet up` keeps it in .fleet/NAME.token and "\
                                "~/.workbench/fleet/NAME/auth_token on its hosts"
    return (f"The Ray cluster at {shown} wants its token: "
            f"{'the token given is not its own' if given else 'this process gave none (RAY_AUTH_MODE is not token)'}."
            f" Give it with RAY_AUTH_MODE=token and RAY_AUTH_TOKEN_PATH=FILE (or RAY_AUTH_TOKEN) in the environment "
            f"({where})")


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
            raise FleetUnreachable(f"No Ray head answers at {fleet.address} ({why}): check the address (the head's "
                                   "IP and its GCS port, 6379 by default) and that the cluster is up (`workbench "
                                   "fleet status`, or `ray start --head` there)")
    ray = _ray()
    address, head, shown = fleet.address, fleet.address, fleet.address
    if fleet.address == "auto":
        head = _auto_address()
        shown = f"{head} (found by --fleet auto)"
    elif "://" in fleet.address:
        why = head_answers(fleet.address)
        if why is not None:
            raise FleetUnreachable(f"No Ray client server answers at {fleet.address} ({why}): check the address "
                                   "(ray://HEAD:10001) and that the cluster is up")
    if "://" not in head:
        if address == "auto":  # as ray.init does for a cluster it found: a local token turns token mode on
            with contextlib.suppress(ImportError):
                from ray._private.authentication.authentication_token_setup import (
                    maybe_enable_token_auth_if_token_available)

                maybe_enable_token_auth_if_token_available(warn_if_disabled=False)
        from ray._raylet import InnerGcsClient  # type: ignore[attr-defined]

        try:
            with _quiet_stderr():
                InnerGcsClient.standalone(head, None, GCS_CHECK_MS)
        except ray.exceptions.AuthenticationError:
            raise ConfigError(_token_advice(head, shown)) from None
        except Exception as exc:  # noqa: BLE001 - Ray's RPC errors have no common class
            first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
            raise FleetUnreachable(f"The Ray head at {shown} took the connection but its GCS did not answer within "
                                   f"{GCS_CHECK_MS / 1000:g} s ({first}): check that it is a Ray head and up "
                                   "(`workbench fleet status`)") from None
    try:
        ray.init(address=address, log_to_driver=False, configure_logging=False)
    except (ConnectionError, RuntimeError, ValueError) as exc:
        raise HostError(f"Cannot join the Ray cluster at {shown}, though its head answers: {exc}") from exc
    return ray


def _execute(task: Callable[[Any, Placement], Any], payload: Any, ended: Any = None,
             key: int | None = None) -> tuple[Placement, Any]:
    """The Ray task body: where it runs, then ``task(payload, placement)``; then, however it ended (a soft cancel's
    ``KeyboardInterrupt`` included, after the task's ``with`` blocks stopped its server), tells ``ended`` (an
    :class:`_Ended` actor) that unit ``key`` is over."""
    import ray

    try:
        placement = Placement(node_id=ray.get_runtime_context().get_node_id(), host=ray.util.get_node_ip_address(),
                              hostname=socket.gethostname(), gpus=tuple(str(g) for g in ray.get_gpu_ids()),
                              pid=os.getpid(), started_at=time.time())
        return placement, task(payload, placement)
    finally:
        if ended is not None:
            ended.end.remote(key)  # not waited on: a force-cancelled worker may not get to send it


class _Ended:
    """A Ray actor the units tell when they are over, so that a soft cancel can wait for their servers' stop.

    Ray resolves a soft-cancelled task's reference at once (``TaskCancelledError``) while the task's
    ``KeyboardInterrupt`` is still unwinding through the ``with`` blocks that stop its server; a driver that
    took that as the end returned, and when it was a job's, Ray ended the units' workers with it and left their
    servers to the watchdogs (docs/FLEET.md, *fleet cancel*).
    """

    def __init__(self) -> None:
        self.keys: set[int] = set()

    def end(self, key: int) -> None:
        self.keys.add(key)

    def which(self, keys: list[int]) -> list[int]:
        """The ones of ``keys`` that are over."""
        return [k for k in keys if k in self.keys]


def _check_fits(ray: Any, units: Sequence[FleetUnit]) -> None:
    """Refuse units no node could ever hold (they would wait forever).

    Raises:
        ConfigError: naming the unit, its GPUs and the largest node's.
    """
    from workbench.sweeps._fleet_multinode import check_groups_fit

    nodes = ray.nodes()
    check_groups_fit(nodes, list(units))
    most = max((float(n.get("Resources", {}).get("GPU", 0)) for n in nodes if n.get("Alive")), default=0.0)
    too_big = sorted({(u.gpus, u.label) for u in units if u.gpus > most})
    if too_big:
        gpus, label = too_big[-1]
        raise ConfigError(f"{label} asks for {gpus} GPU(s), but the largest node of the fleet has {most:g}: lower "
                          "tp_size (or dp_size), or add a node with more GPUs")


@dataclasses.dataclass(frozen=True)
class Prestart:
    """The workers started before the first unit was submitted (:func:`run_units`, ``prestart=True``).

    Attributes:
        wanted: warm-up tasks submitted: on each node, as many as its GPU slots hold units of the
            smallest unit's size (one with ``one_unit_per_host``), at most the number of units.
        warmed: those that ran, each in its own worker process, all alive at once.
        seconds: wall-clock seconds from the first warm-up's submission to the last one's return.
        workers: ``(node IP, worker pid)`` of each warmed worker.
    """

    wanted: int
    warmed: int
    seconds: float
    workers: tuple[tuple[str, int], ...]


class _Gate:
    """A Ray actor that counts the warm-up tasks which have started: each waits until all have, so no two
    share a worker (Ray would otherwise run a quick warm-up on the worker another just left)."""

    def __init__(self) -> None:
        self.arrived = 0
        self.closed = False

    def arrive(self) -> int:
        self.arrived += 1
        return self.arrived

    def ready(self, wanted: int) -> bool:
        """True once ``wanted`` warm-ups have started, or the driver closed the gate."""
        return self.closed or self.arrived >= wanted

    def close(self) -> None:
        """End the prestart: every warm-up still waiting (or starting later) returns at its next poll."""
        self.closed = True


def _warm_up(gate: Any, wanted: int, task: Callable[[Any, Placement], Any], payload: Any) -> tuple[str, int]:
    """A warm-up task: by the time it runs, its worker has imported Ray, and unpickling ``task`` and a unit's
    ``payload`` (its arguments) imported every module a unit needs. Waits (polling the gate) until all
    ``wanted`` warm-ups run at once, at most :data:`PRESTART_TIMEOUT_S`; returns ``(node IP, pid)``."""
    import ray

    ray.get(gate.arrive.remote())
    deadline = time.monotonic() + PRESTART_TIMEOUT_S
    while not ray.get(gate.ready.remote(wanted)) and time.monotonic() < deadline:
        time.sleep(0.2)  # a few actor calls a second per warm-up: cheap on a loaded node
    return ray.util.get_node_ip_address(), os.getpid()


def _unit_options(gpus: int) -> dict[str, Any]:
    """The Ray resources of a unit of ``gpus`` GPUs: its GPU slots, or a CPU slot for a CPU-only unit."""
    return {"num_gpus": gpus, "num_cpus": 0 if gpus else 1}


def _warm_plan(nodes: Sequence[Mapping[str, Any]], units: Sequence[FleetUnit], *,
               one_unit_per_host: bool) -> list[str]:
    """The node id of each warm-up task to run: on every alive node, as many as its slots hold units of the
    smallest unit's size (GPU slots, or CPU slots for CPU-only units; one with ``one_unit_per_host``), at most
    ``len(units)`` per node, so wherever Ray places a unit a warm worker waits there.

    Args:
        nodes: ``ray.nodes()`` (dicts with ``Alive``, ``NodeID`` and ``Resources``).
        units: the units to run.
    """
    if not units:
        return []
    gpus = min(u.gpus for u in units)
    plan: list[str] = []
    for node in nodes:
        if not node.get("Alive"):
            continue
        have = float(node.get("Resources", {}).get("GPU" if gpus else "CPU", 0))
        slots = min(1, int(have // (gpus or 1))) if one_unit_per_host else int(have // (gpus or 1))
        plan += [node["NodeID"]] * min(slots, len(units))
    return plan


def _prestart(ray: Any, units: Sequence[FleetUnit], task: Callable[[Any, Placement], Any], fleet: Fleet,
              clock: Callable[[], float]) -> Prestart:
    """Start and warm the workers the units will run on, before any is submitted (:class:`Prestart`).

    A Ray worker process is started for a task the first time one needs it, and imports Ray and then
    (unpickling the task) the workbench: 18-22 s per unit on 2 loaded cores (docs/FLEET.md). Here one
    warm-up task per unit slot, pinned to its node and asking for the unit's resources, pays that before
    the first submission; Ray keeps the idle worker and runs the next task of the same resource shape
    (this driver's units) on it. Warm-ups that cannot all start within :data:`PRESTART_TIMEOUT_S` are
    released through the gate (never ``ray.cancel``: see the comment below) and the units are submitted.
    """
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    plan = _warm_plan(ray.nodes(), units, one_unit_per_host=fleet.one_unit_per_host)
    if not plan:
        return Prestart(0, 0, 0.0, ())
    gpus = min(u.gpus for u in units)
    started = clock()
    gate = ray.remote(num_cpus=0)(_Gate).remote()
    warm = ray.remote(_warm_up)
    refs = [warm.options(**_unit_options(gpus), max_retries=0,
                         scheduling_strategy=NodeAffinitySchedulingStrategy(node_id, soft=False)).remote(
        gate, len(plan), task, units[0].payload) for node_id in plan]
    try:
        done, left = ray.wait(refs, num_returns=len(refs), timeout=PRESTART_TIMEOUT_S + 10)
    finally:
        # No ray.cancel here: cancelling a task whose reply is in flight crashes the driver in Ray 2.60
        # (task_manager.cc "Tried to complete task that was not pending", the race of ray-project/ray
        # PR #54798). Closing the gate ends each waiting warm-up at its next poll instead; one that has
        # not started yet returns as soon as it does, holding its slot for a moment.
        ray.get(gate.close.remote())
    workers = []
    for ref in done:
        try:
            workers.append(tuple(ray.get(ref)))
        except ray.exceptions.RayError:
            pass
    if left:
        ray.wait(left, num_returns=len(left), timeout=2.0)
    ray.kill(gate)  # an actor, not a task: a warm-up starting later fails at once on the dead gate
    return Prestart(wanted=len(plan), warmed=len(set(workers)), seconds=round(clock() - started, 3),
                    workers=tuple(sorted(set(workers))))


class _Hosts:
    """For ``one_unit_per_host``: which node IPs are busy, and a node to pin the next unit to."""

    def __init__(self, ray: Any) -> None:
        self._ray = ray
        self.busy: set[str] = set()

    def free_node(self, gpus: int) -> tuple[str, str] | None:
        """``(node id, host)`` of an alive node on a host without a unit and with ``gpus`` slots."""
        for node in self._ray.nodes():
            host = node.get("NodeManagerAddress")
            if node.get("Alive") and host not in self.busy and float(node.get("Resources", {}).get("GPU", 0)) >= gpus:
                return node["NodeID"], host
        return None

    def alive(self, host: str) -> bool:
        """Whether an alive node has the IP ``host``."""
        return any(node.get("Alive") and node.get("NodeManagerAddress") == host for node in self._ray.nodes())


def run_units(units: Sequence[FleetUnit], task: Callable[[Any, Placement], Any], *, fleet: Fleet,
              on_done: Callable[[UnitOutcome], None] | None = None,
              retry_exceptions: Sequence[type[BaseException]] = (), prestart: bool = True,
              on_prestart: Callable[[Prestart], None] | None = None,
              clock: Callable[[], float] = time.time) -> list[UnitOutcome]:
    """Run every unit as a Ray task on ``fleet`` and collect the outcomes as they finish.

    Args:
        units: the units (their ``gpus`` are the tasks' ``num_gpus``).
        task: a module-level function ``task(payload, placement) -> result`` (it runs on a
            Ray worker: it must be importable there, and its result picklable).
        fleet: the cluster and its sharing rule.
        on_done: called in the driver with each :class:`UnitOutcome` as soon as it finishes
            (e.g. to store its rows), in finishing order.
        retry_exceptions: exceptions of ``task`` that Ray retries like a crash (up to
            ``fleet.max_retries``); any other exception is reported, not retried.
            With ``fleet.one_unit_per_host`` a unit is pinned to its host (Ray's
            ``NodeAffinitySchedulingStrategy``, ``soft=False``), so Ray cannot retry it elsewhere when that host
            is lost: its retry fails with ``TaskUnschedulableError`` as soon as Ray marks the node dead (Ray
            2.60, ``ray.cluster_utils.Cluster``, health checks every 0.5 s: 1.2 s after the loss). The driver
            then submits it again itself (on that error, or a Ray error with the host no longer alive), pinned
            to a free alive host, up to ``fleet.max_retries`` times per unit (:attr:`UnitOutcome.moved_from`).
        prestart: before submitting, start one warm worker per unit slot (:func:`_prestart`:
            Ray and the unit's modules imported), so a unit starts within a fraction of a second of
            its submission instead of a cold worker's start; units spanning nodes are left out (their
            ranks' actors start workers of their own). Default True.
        on_prestart: called in the driver with the :class:`Prestart` (when ``prestart``).
        clock: UTC wall clock for ``finished_at``.

    Returns:
        The outcomes in finishing order (cancelled units last, with ``error="cancelled"``).

    Raises:
        ConfigError: Ray is not installed, or a unit asks for more GPUs than any node has.
        HostError: the cluster cannot be reached.
        KeyboardInterrupt: after cancelling every unit (Ctrl-C).
    """
    ray = connect(fleet)
    _check_fits(ray, units)
    if prestart:
        # a unit spanning nodes gains nothing from a warm worker: its ranks > 0 are actors, each in a worker of
        # its own that no warm-up can start, and its rank 0 waits for them (workbench.sweeps._fleet_multinode)
        warmed = _prestart(ray, [u for u in units if u.nnodes == 1], task, fleet, clock)
        if on_prestart is not None:
            on_prestart(warmed)
    from workbench.sweeps._fleet_multinode import group_options, remove_group

    remote = ray.remote(_execute)
    ended = ray.remote(num_cpus=0)(_Ended).remote()
    waiting: list[tuple[FleetUnit, tuple[str, ...]]] = [(u, ()) for u in units]  # (unit, the pinned hosts it lost)
    running: dict[Any, tuple[FleetUnit, str | None, tuple[str, ...]]] = {}  # ObjectRef -> (unit, pinned host, lost)
    keys: dict[Any, int] = {}  # ObjectRef -> its key for ``ended``
    submitted: dict[Any, float] = {}
    groups: dict[Any, Any] = {}  # ObjectRef -> the placement group of a unit spanning nodes
    hosts = _Hosts(ray)
    outcomes: list[UnitOutcome] = []

    def submit() -> None:
        while waiting:
            unit, lost = waiting[0]
            # GPU slots bound how many run at once; a CPU-only unit (the simulator without GPUs) takes a CPU slot
            options: dict[str, Any] = {**_unit_options(unit.gpus), "max_retries": fleet.max_retries,
                                       "retry_exceptions": list(retry_exceptions) or False}
            host = None
            if unit.nnodes > 1:  # a placement group of one bundle per node (never pinned: it spans hosts)
                waiting.pop(0)
                spread, group = group_options(unit)
                ref = remote.options(**{**options, **spread}).remote(task, unit.payload, ended, len(keys))
                running[ref], submitted[ref], groups[ref], keys[ref] = (unit, None, lost), clock(), group, len(keys)
                continue
            if fleet.one_unit_per_host:
                free = hosts.free_node(unit.gpus)
                if free is None:
                    return
                node_id, host = free
                from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

                options["scheduling_strategy"] = NodeAffinitySchedulingStrategy(node_id, soft=False)
                hosts.busy.add(host)
            waiting.pop(0)
            ref = remote.options(**options).remote(task, unit.payload, ended, len(keys))
            running[ref], submitted[ref], keys[ref] = (unit, host, lost), clock(), len(keys)

    try:
        submit()
        while running:
            done, _ = ray.wait(list(running), num_returns=1, timeout=1.0)
            for ref in done:
                unit, host, lost = running[ref]  # it stays in ``running`` (so a Ctrl-C cancels it) until moved on
                outcome = dataclasses.replace(_collect(ray, ref, unit, clock()), submitted_at=submitted[ref],
                                              moved_from=lost)
                move = (outcome.lost and host is not None and len(lost) < fleet.max_retries
                        and (_unschedulable(outcome) or not hosts.alive(host)))
                del running[ref], submitted[ref]
                hosts.busy.discard(host)
                if ref in groups:
                    remove_group(groups.pop(ref))
                if move:
                    assert host is not None
                    waiting.insert(0, (unit, (*lost, host)))  # its pinned host is gone: pin it to another (submit)
                    continue
                outcomes.append(outcome)
                if on_done is not None:
                    on_done(outcome)
            submit()
        while waiting:  # with nothing running, no alive host has the GPUs they ask for (theirs were lost)
            unit, lost = waiting.pop(0)
            outcomes.append(UnitOutcome(unit, None, None, clock(), f"no alive host has the {unit.gpus} GPU(s) it asks "
                                        f"for after {', '.join(lost) or 'its host'} was lost", lost=True,
                                        moved_from=lost))
            if on_done is not None:
                on_done(outcomes[-1])
    except KeyboardInterrupt:
        for ref, outcome in _cancel(ray, running, clock, ended, keys).items():
            outcome = dataclasses.replace(outcome, submitted_at=submitted.get(ref), moved_from=running[ref][2])
            outcomes.append(outcome)
            if outcome.error != "cancelled" and on_done is not None:
                on_done(outcome)  # it finished before the Ctrl-C was seen: its rows are kept like any other's
        outcomes += [UnitOutcome(u, None, None, clock(), "cancelled", moved_from=lost) for u, lost in waiting]
        raise
    finally:
        for group in groups.values():  # cancelled units' groups (whatever still runs in one is killed by Ray)
            remove_group(group)
    return outcomes


def _collect(ray: Any, ref: Any, unit: FleetUnit, now: float) -> UnitOutcome:
    """The outcome of a finished task (its result, or the error that ended it)."""
    try:
        placement, result = ray.get(ref)
    except ray.exceptions.TaskCancelledError:
        return UnitOutcome(unit, None, None, now, "cancelled")
    except ray.exceptions.RayTaskError as exc:  # task raised: not retried, reported
        cause = exc.cause if isinstance(getattr(exc, "cause", None), BaseException) else exc
        return UnitOutcome(unit, None, None, now, f"the unit raised {type(cause).__name__}: {cause}")
    except ray.exceptions.RayError as exc:  # worker crashed / node lost, after max_retries
        return UnitOutcome(unit, None, None, now, f"{type(exc).__name__} after its retries: {exc}", lost=True)
    return UnitOutcome(unit, placement, result, now)


#: How :func:`_collect` words Ray's error for a task pinned to a node that is gone (or cannot take it).
_UNSCHEDULABLE = "TaskUnschedulableError "


def _unschedulable(outcome: UnitOutcome) -> bool:
    """Whether Ray gave up on the unit as unschedulable: with ``soft=False`` node affinity, its node is gone."""
    return (outcome.error or "").startswith(_UNSCHEDULABLE)


def _cancel(ray: Any, running: Mapping[Any, tuple[FleetUnit, str | None, tuple[str, ...]]],
            clock: Callable[[], float], ended: Any, keys: Mapping[Any, int]) -> dict[Any, UnitOutcome]:
    """Cancel every running unit: softly (``KeyboardInterrupt`` in the task, whose ``with`` blocks stop
    the server), then with ``force=True`` for those that have not told ``ended`` (:class:`_Ended`) they are
    over after :data:`CANCEL_GRACE_S` (a cancelled reference resolves at once, so it cannot say).

    Returns:
        The outcome of each unit of ``running``, by its ObjectRef: its real outcome (:func:`_collect`) for a unit that had
        already finished, ``error="cancelled"`` for the others.
    """
    # a unit that already finished is not cancelled (cancelling a task whose reply is in flight is the
    # Ray 2.60 race that crashes the driver: see _prestart); the window left is a unit finishing just now
    finished, refs = ray.wait(list(running), num_returns=len(running), timeout=0) if running else ([], [])
    for ref in refs:
        ray.cancel(ref, force=False)
    left, deadline = list(refs), time.monotonic() + CANCEL_GRACE_S
    while left and time.monotonic() < deadline:
        time.sleep(0.1)
        try:
            over = set(ray.get(ended.which.remote([keys[ref] for ref in left]),
                               timeout=max(0.1, deadline - time.monotonic())))
        except ray.exceptions.GetTimeoutError:  # the actor not up yet (a cold worker): none is known to be over
            continue
        left = [ref for ref in left if keys[ref] not in over]
    for ref in left:
        ray.cancel(ref, force=True)
    now = clock()
    return {**{ref: _collect(ray, ref, running[ref][0], now) for ref in finished},
            **{ref: UnitOutcome(running[ref][0], None, None, now, "cancelled") for ref in refs}}
