"""Servers that span nodes on a fleet: a placement group per unit, an actor per rank > 0, every rank watched.

A variant with ``[flags] nnodes = N`` (N > 1; :mod:`workbench.variants._multinode`) is one unit that
asks Ray for a placement group of N bundles, one per node (``STRICT_SPREAD``), each of the GPUs one node
runs (``tp_size x dp_size / N``, SGLang's split: :func:`workbench.variants.gpus_per_node`):

- the unit's task runs in bundle 0 (:func:`group_options`): that node is rank 0. It takes a port free
  there and makes ``--dist-init-addr`` of ``ray.util.get_node_ip_address()`` and that port;
- :func:`rank_group` starts one actor (:class:`RankServer`) in each bundle 1 .. N-1, which launches the
  rank's server with the same launch code as any server (:meth:`ServerHandle.start`; the variant's
  command plus ``--nnodes N --node-rank R --dist-init-addr ADDR``: :func:`workbench.variants.rank_variant`),
  with the lease watchdog that stops it when its actor's process dies;
- rank 0 is the unit's own server, launched, made ready, measured (the load generator on this node, against
  its 127.0.0.1), classified and stopped by the unit as on one node;
- a watcher thread waits on every rank > 0 (:meth:`RankServer.wait_exit`); when one exits, it stops rank 0
  (whose unit then fails as a server that died) and :meth:`RankGroup.explain` classifies the unit from the
  rank that exited first (the existing classifier on its log tail), with each rank's log tail, rank number
  and host in the message; when rank 0 fails first its own classification stands, with the same tails;
- leaving the group (the unit done, failed, or cancelled: ``KeyboardInterrupt`` from ``ray.cancel``) stops
  every rank's server and kills the actors; a force-cancelled unit's worker takes its actors with it (Ray's
  owner fate sharing) and each rank's watchdog stops its server; the driver removes the placement group.

Ray is imported only inside these functions (the ``fleet`` extra).
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import socket
import threading
import time
from collections.abc import Iterator, Mapping
from typing import Any

from workbench.errors import ConfigError, HostError, ServerError
from workbench.servers import ServerHandle, server_died
from workbench.variants import Variant, apply_parameters, nnodes_of, rank_variant

__all__ = ["RankGroup", "RankServer", "check_groups_fit", "group_options", "rank_group"]

#: Seconds between two checks that a rank's server still runs (the watcher's resolution).
POLL_S = 0.2
#: Seconds each rank > 0 gets to start its server (its actor's worker starting included: 18-22 s on 2 loaded
#: cores, docs/FLEET.md).
RANK_START_S = 300.0
#: Log lines of each rank in a group failure's message.
TAIL_LINES = 30


def group_options(unit: Any) -> tuple[dict[str, Any], Any]:
    """The Ray options of a unit spanning ``unit.nnodes`` nodes, and its new placement group.

    One bundle per node (``STRICT_SPREAD``: no two on one node) of ``unit.gpus`` GPUs (a CPU for a unit
    without GPUs); the unit's task runs in bundle 0.
    """
    from ray.util.placement_group import placement_group
    from ray.util.scheduling_strategies import PlacementGroupSchedulingStrategy

    bundle = {"GPU": float(unit.gpus)} if unit.gpus else {"CPU": 1.0}
    group = placement_group(
        [dict(bundle) for _ in range(unit.nnodes)],
        strategy="STRICT_SPREAD",
        name=f"workbench-unit-{os.getpid()}-{id(unit)}",
    )
    options = {
        "num_gpus": unit.gpus,
        "num_cpus": 0 if unit.gpus else 1,
        "scheduling_strategy": PlacementGroupSchedulingStrategy(group, placement_group_bundle_index=0),
    }
    return options, group


def check_groups_fit(nodes: list[Mapping[str, Any]], units: list[Any]) -> None:
    """Refuse a unit spanning more nodes than the fleet has with its GPUs per node (it would wait forever).

    Raises:
        ConfigError: naming the unit, its nodes and GPUs per node, and the nodes that have them.
    """
    for unit in units:
        if getattr(unit, "nnodes", 1) <= 1:
            continue
        key = "GPU" if unit.gpus else "CPU"
        able = sum(1 for n in nodes if n.get("Alive") and float(n.get("Resources", {}).get(key, 0)) >= (unit.gpus or 1))
        if able < unit.nnodes:
            raise ConfigError(
                f"{unit.label} spans {unit.nnodes} nodes of {unit.gpus} GPU(s) each, but the fleet has "
                f"{able} node(s) with that many: add nodes, or lower nnodes in the variant's flags"
            )


def remove_group(group: Any) -> None:
    """Remove a unit's placement group (whatever still runs in it is killed by Ray)."""
    from ray.util import remove_placement_group

    try:
        remove_placement_group(group)
    except Exception:  # noqa: BLE001 - already removed, or the cluster is going away
        pass


class RankServer:
    """A Ray actor (one per rank > 0, in that rank's bundle) holding the rank's server.

    Its methods run in the actor's threads (``max_concurrency``), so :meth:`wait_exit` blocks while
    :meth:`tail` and :meth:`stop` are answered.
    """

    def __init__(self) -> None:
        self.handle: ServerHandle | None = None
        self.stopped = threading.Event()

    def start(self, variant: Variant, engine: str, sim_options: dict[str, Any] | None) -> dict[str, Any]:
        """Launch ``variant`` (a rank's per-node variant) on this node's GPUs without waiting for it.

        Returns:
            ``{"host", "hostname", "gpus", "pid", "log_path", "command"}`` of the rank's server.
        """
        import ray

        gpus = [str(g) for g in ray.get_gpu_ids()]
        launch = apply_parameters(variant, gpus=",".join(gpus)) if gpus else variant
        self.handle = ServerHandle.start(launch, engine=engine, sim_options=sim_options, wait=False)
        return {
            "host": ray.util.get_node_ip_address(),
            "hostname": socket.gethostname(),
            "gpus": ",".join(gpus),
            "pid": self.handle.process.pid,
            "log_path": self.handle.process.log_path,
            "command": list(self.handle.command),
        }

    def wait_exit(self) -> float:
        """Block until the rank's server has exited (or :meth:`stop` ran); returns the UTC time it was seen gone."""
        from workbench.hosts import processes

        assert self.handle is not None
        while not self.stopped.is_set() and processes.is_alive(self.handle.host, self.handle.process):
            time.sleep(POLL_S)
        return time.time()

    def tail(self, lines: int = TAIL_LINES) -> str:
        """The last ``lines`` lines of the rank's server log."""
        return self.handle.logs_tail(lines) if self.handle is not None else ""

    def launch_text(self) -> str:
        """The rank's environment and command line (the classifier's ``launch``)."""
        return self.handle.launch_text if self.handle is not None else ""

    def stop(self) -> None:
        """Stop the rank's server (idempotent)."""
        self.stopped.set()
        if self.handle is not None:
            self.handle.stop()


@dataclasses.dataclass
class _Exit:
    """The first rank seen gone: its rank and the UTC times it was seen gone and rank 0 was stopped."""

    rank: int
    seen_at: float
    rank0_stopped_at: float | None = None


class RankGroup:
    """The ranks of one unit's server, from rank 0's unit task (:func:`rank_group`).

    Attributes:
        variant: what rank 0 launches (the variant itself on one node).
        nnodes: the nodes the server spans.
        dist_init_addr: ``RANK0_IP:PORT`` (None on one node).
        ranks: for each rank > 0, what :meth:`RankServer.start` returned, plus ``rank``.
        first_exit: the first rank > 0 seen gone while rank 0 ran, else None.
    """

    def __init__(
        self,
        variant: Variant,
        *,
        nnodes: int = 1,
        dist_init_addr: str | None = None,
        host: str = "",
        hostname: str = "",
    ) -> None:
        self.variant = variant
        self.nnodes = nnodes
        self.dist_init_addr = dist_init_addr
        self.host, self.hostname = host, hostname
        self.ranks: list[dict[str, Any]] = []
        self.first_exit: _Exit | None = None
        self._actors: list[Any] = []
        self._rank0: ServerHandle | None = None
        self._closing = threading.Event()
        self._watcher: threading.Thread | None = None

    def row_tags(self, placement: Any) -> dict[str, str]:
        """Extra tags of every request row (none on one node): ``fleet_ranks``, each rank's host and GPUs,
        e.g. ``"rank 0 on 10.0.0.5 (GPUs 0,1); rank 1 on 10.0.0.6 (GPUs 0,1)"``."""
        if self.nnodes == 1:
            return {}
        ranks = [(0, self.host, ",".join(placement.gpus))] + [(r["rank"], r["host"], r["gpus"]) for r in self.ranks]
        return {"fleet_ranks": "; ".join(f"rank {r} on {h} (GPUs {g or '-'})" for r, h, g in ranks)}

    def adopt(self, server: ServerHandle) -> None:
        """Take rank 0's handle (the unit's ``on_server``) and start watching the other ranks."""
        self._rank0 = server
        if self._actors and self._watcher is None:
            self._watcher = threading.Thread(target=self._watch, name="workbench-rank-watch", daemon=True)
            self._watcher.start()

    def _watch(self) -> None:
        import ray

        pending = {actor.wait_exit.remote(): r for r, actor in enumerate(self._actors, start=1)}
        while pending and not self._closing.is_set():
            done, _ = ray.wait(list(pending), num_returns=1, timeout=0.5)
            if not done or self._closing.is_set():
                continue
            rank = pending.pop(done[0])
            try:
                seen = float(ray.get(done[0]))
            except ray.exceptions.RayError:  # its actor died (its node, or a kill): its watchdog stops the server
                seen = time.time()
            if not self._rank0_alive():
                return  # rank 0 went first (or the unit ended): the rank followed it, as SGLang's ranks do
            self.first_exit = _Exit(rank, seen)
            self._stop_rank0()
            return

    def _rank0_alive(self) -> bool:
        from workbench.hosts import processes

        return self._rank0 is not None and processes.is_alive(self._rank0.host, self._rank0.process)

    def _stop_rank0(self) -> None:
        """Stop rank 0's processes (the unit's ``with`` blocks then see it gone and classify the unit)."""
        from workbench.hosts import processes

        if self._rank0 is not None:
            processes.stop(self._rank0.host, self._rank0.process, grace_s=5.0)
        if self.first_exit is not None:
            self.first_exit.rank0_stopped_at = time.time()

    def _tails(self) -> list[tuple[int, str, str, str, str]]:
        """``(rank, host, hostname, log tail, launch text)`` of every rank, rank 0 first."""
        import ray

        out = []
        if self._rank0 is not None:
            try:
                tail0 = self._rank0.logs_tail(TAIL_LINES)
            except (HostError, ServerError) as exc:
                tail0 = f"(its log could not be read: {exc})"
            out.append((0, self.host, self.hostname, tail0, self._rank0.launch_text))
        for info, actor in zip(self.ranks, self._actors):
            try:
                tail, launch = ray.get([actor.tail.remote(), actor.launch_text.remote()], timeout=30)
            except ray.exceptions.RayError as exc:
                tail, launch = f"(its actor is gone, so is its log tail: {type(exc).__name__})", ""
            out.append((info["rank"], info["host"], info["hostname"], tail, launch))
        return out

    def explain(self, failure: Any) -> Any:
        """``failure`` (the unit's :class:`SweepFailure`) for a server spanning nodes: classified from the rank
        that exited first (rank 0's own when it failed first), its message naming that rank and its host, and
        every rank's log tail. On one node: ``failure`` itself."""
        if self.nnodes == 1:
            return failure
        tails = self._tails()
        kind, suggestion = failure.kind, failure.suggestion
        head = failure.message.splitlines()[0].removesuffix("Server log tail:").rstrip()  # the tails follow
        if self.first_exit is not None:
            rank, host, hostname, tail, launch = next(t for t in tails if t[0] == self.first_exit.rank)
            found = server_died(tail, launch=launch)
            kind, suggestion = found.kind, found.suggestion
            after = (
                f"; rank 0 was stopped {self.first_exit.rank0_stopped_at - self.first_exit.seen_at:.1f} s after"
                if self.first_exit.rank0_stopped_at
                else ""
            )
            head = (
                f"rank {rank} of {self.nnodes} on {host} ({hostname}) exited first, classified {kind}: "
                f"{suggestion} The workbench stopped the group{after}. Rank 0's unit: {head}"
            )
        else:
            head = f"rank 0 of {self.nnodes} on {self.host} ({self.hostname}) failed: {head}"
        blocks = "\n".join(
            f"--- rank {r} of {self.nnodes} on {h} ({n}), log tail:\n{t.rstrip()}" for r, h, n, t, _ in tails
        )
        return dataclasses.replace(
            failure,
            kind=kind,
            suggestion=suggestion,
            message=f"{failure.variant}: the server spanning {self.nnodes} nodes failed: {head}\n{blocks}",
        )

    def close(self) -> None:
        """Stop every rank > 0 and kill its actor (rank 0 is the unit's: its ``with`` block stops it)."""
        import ray

        self._closing.set()
        stops = [actor.stop.remote() for actor in self._actors]
        if stops:
            try:
                ray.get(stops, timeout=20)
            except ray.exceptions.RayError:
                pass  # an actor already gone: its server's watchdog stops the server
            except Exception:  # noqa: BLE001 - GetTimeoutError: the kill below ends it; the watchdog stops the server
                pass
        for actor in self._actors:
            ray.kill(actor)  # an actor, not a task: no race with a finished reply (docs/FLEET.md)
        if self._watcher is not None:
            self._watcher.join(timeout=2.0)


def _free_port() -> int:
    """A TCP port free on every interface of this node now (its kernel picks it)."""
    with socket.socket() as s:
        s.bind(("", 0))
        return int(s.getsockname()[1])


@contextlib.contextmanager
def rank_group(
    variant: Variant, placement: Any, *, engine: str, sim_options: dict[str, Any] | None
) -> Iterator[RankGroup]:
    """The ranks of ``variant``'s server for a unit running at ``placement`` (rank 0's node, in bundle 0 of the
    unit's placement group): ranks > 0 started on the other bundles' nodes before rank 0 starts. One node:
    a group of rank 0 alone (nothing started).

    Raises:
        ConfigError: a variant spanning nodes outside a placement group (not run by ``run_units``), or a
            bad ``nnodes``.
        ServerError: a rank > 0 could not start its server (the ranks started are stopped first).
    """
    nodes = nnodes_of(variant)
    if nodes == 1:
        yield RankGroup(variant)
        return
    import ray
    from ray.util.scheduling_strategies import PlacementGroupSchedulingStrategy

    pg = ray.util.get_current_placement_group()
    if pg is None:
        raise ConfigError(
            f"{variant.name} spans {nodes} nodes (nnodes = {nodes}): it runs on a fleet only, whose "
            "run_units gives it a placement group of one bundle per node"
        )
    addr = f"{placement.host}:{_free_port()}"
    group = RankGroup(
        rank_variant(variant, rank=0, dist_init_addr=addr),
        nnodes=nodes,
        dist_init_addr=addr,
        host=placement.host,
        hostname=placement.hostname,
    )
    per_node = len(placement.gpus)
    actor_class = ray.remote(RankServer)
    try:
        for rank in range(1, nodes):
            group._actors.append(
                actor_class.options(
                    num_cpus=0 if per_node else 1,
                    num_gpus=per_node,
                    max_concurrency=4,
                    max_restarts=0,
                    scheduling_strategy=PlacementGroupSchedulingStrategy(pg, placement_group_bundle_index=rank),
                ).remote()
            )
        starts = [
            actor.start.remote(rank_variant(variant, rank=r, dist_init_addr=addr), engine, sim_options)
            for r, actor in enumerate(group._actors, start=1)
        ]
        try:
            infos = ray.get(starts, timeout=RANK_START_S)
        except ray.exceptions.RayTaskError as exc:
            raise ServerError(
                f"{variant.name}: a rank > 0 of its {nodes}-node server could not start: "
                f"{exc.cause if isinstance(getattr(exc, 'cause', None), BaseException) else exc}"
            ) from None
        group.ranks = [{**info, "rank": r} for r, info in enumerate(infos, start=1)]
        yield group
    finally:
        group.close()
