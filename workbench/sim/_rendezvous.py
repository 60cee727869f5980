"""SIMULATED multi-node group of the simulated server: the ranks meet at ``--dist-init-addr`` over TCP.

SGLang's ranks of one server spanning nodes (``--nnodes N --node-rank R --dist-init-addr HOST:PORT``,
SGLang 0.5.9 ``srt/server_args.py``) meet at rank 0's address: torch.distributed's TCP store listens
there on rank 0 and every other rank connects to it, then NCCL joins the GPUs. Only rank 0 runs the
tokenizer and the HTTP API; a rank > 0 waits on its schedulers and serves a dummy health server on
its ``--port`` (``/health``, ``/health_generate``, ``/ping``: ``launch_dummy_health_check_server``
in ``srt/utils/common.py``, called from ``srt/entrypoints/engine.py`` for ``node_rank >= 1``).

The simulator keeps that shape and nothing else (no NCCL, no GPUs, no torch): rank 0 listens at the
port of ``--dist-init-addr`` (on every interface, as a TCP store does), each rank > 0 connects and
sends ``JOIN <rank> <nnodes>``; when all ``N - 1`` have joined, rank 0 answers ``READY`` to each
and only then serves HTTP. The connections stay open: a rank > 0 exits when rank 0's closes (rank 0
went away: SGLang's non-zero ranks die with their group), and rank 0 logs a rank that left (a real
rank 0 would hang in its collectives until NCCL's timeout; the workbench stops the group).

Bounds and messages (torch's own wording, so the classifier reads them as ``multi_node``):
a rank > 0 that cannot reach rank 0 within ``timeout_s`` logs ``torch.distributed.DistNetworkError:
The client socket has timed out after <ms>ms while trying to connect to (<host>, <port>).``;
rank 0 whose ranks have not all joined within ``timeout_s`` logs ``torch.distributed.DistStoreError:
Timed out after <s> seconds waiting for clients. <k>/<N-1> clients joined.``
"""

from __future__ import annotations

import asyncio
import logging
import time

#: Seconds a rank waits for the group by default (the simulator's ``--sim-dist-timeout``; SGLang's own
#: default is torch.distributed's, 600 s for the TCP store).
DEFAULT_TIMEOUT_S = 120.0
#: Seconds between a rank > 0's connection attempts while rank 0 is not listening yet.
RETRY_S = 0.2


class RendezvousError(Exception):
    """The group did not form (the message is torch's wording, see the module docstring)."""


def split_addr(addr: str) -> tuple[str, int]:
    """``"HOST:PORT"`` (``"[v6]:PORT"``) as ``(host, port)``.

    Raises:
        RendezvousError: no port, or a port that is not a number in 1-65535.
    """
    host, sep, port = addr.rpartition(":")
    host = host[1:-1] if host.startswith("[") and host.endswith("]") else host
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise RendezvousError(f"please provide --dist-init-addr as host:port of head node, got {addr!r}")
    return host, int(port)


class Group:
    """Rank 0's side of a formed group: the open connection of every other rank (rank -> its streams)."""

    def __init__(
        self, server: asyncio.AbstractServer, peers: dict[int, tuple[asyncio.StreamReader, asyncio.StreamWriter]]
    ) -> None:
        self.server = server
        self.peers = peers
        self.left: list[int] = []

    async def watch(self, log: logging.Logger) -> None:
        """Log each rank whose connection closes (rank 0 keeps serving, as a real one would until NCCL's timeout)."""

        async def one(rank: int, reader: asyncio.StreamReader) -> None:
            await reader.read()  # b"" at EOF
            self.left.append(rank)
            log.error(
                "SIMULATED: rank %d left the group (its connection to --dist-init-addr closed); a real "
                "rank 0 would hang in its collectives until NCCL's timeout",
                rank,
            )

        await asyncio.gather(*(one(r, rw[0]) for r, rw in self.peers.items()))

    async def close(self) -> None:
        self.server.close()
        for _, writer in self.peers.values():
            writer.close()


async def host_group(addr: str, nnodes: int, *, timeout_s: float, log: logging.Logger) -> Group:
    """Rank 0: listen at ``addr``'s port and wait until ranks ``1 .. nnodes - 1`` have joined, then answer READY.

    Raises:
        RendezvousError: not all joined within ``timeout_s`` (torch's DistStoreError wording).
        OSError: the port is taken (the caller logs it as SGLang's "Address already in use").
    """
    _, port = split_addr(addr)
    peers: dict[int, tuple[asyncio.StreamReader, asyncio.StreamWriter]] = {}
    everyone = asyncio.Event()

    async def on_join(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        words = (await reader.readline()).decode(errors="replace").split()
        ok = len(words) == 3 and words[0] == "JOIN" and words[1].isdigit() and words[2] == str(nnodes)
        rank = int(words[1]) if ok else -1
        if not ok or not 0 < rank < nnodes or rank in peers:
            log.error(
                "SIMULATED: refused a join %r (want JOIN <rank 1..%d> %d, each rank once)",
                " ".join(words),
                nnodes - 1,
                nnodes,
            )
            writer.write(b"REFUSED\n")
            writer.close()
            return
        peers[rank] = (reader, writer)
        log.info(
            "SIMULATED: rank %d joined from %s (%d/%d)", rank, writer.get_extra_info("peername"), len(peers), nnodes - 1
        )
        if len(peers) == nnodes - 1:
            everyone.set()

    server = await asyncio.start_server(on_join, host=None, port=port)  # every interface, as a TCP store
    log.info("SIMULATED: rank 0 of %d waits for the other ranks at %s", nnodes, addr)
    try:
        await asyncio.wait_for(everyone.wait(), timeout_s)
    except (asyncio.TimeoutError, TimeoutError):
        server.close()
        for _, writer in peers.values():
            writer.close()
        raise RendezvousError(
            f"torch.distributed.DistStoreError: Timed out after {timeout_s:g} seconds waiting "
            f"for clients. {len(peers)}/{nnodes - 1} clients joined."
        ) from None
    for _, writer in peers.values():
        writer.write(b"READY\n")
        await writer.drain()
    log.info("SIMULATED: all %d ranks joined at %s", nnodes, addr)
    return Group(server, peers)


async def join_group(
    addr: str, rank: int, nnodes: int, *, timeout_s: float, log: logging.Logger
) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    """Rank ``rank`` > 0: connect to rank 0 at ``addr`` (retrying while it is not listening), join, wait for READY.

    Returns:
        The open connection; EOF on its reader means rank 0 went away.

    Raises:
        RendezvousError: no READY within ``timeout_s`` (torch's DistNetworkError wording), or rank 0 refused it.
    """
    host, port = split_addr(addr)
    deadline = time.monotonic() + timeout_s
    timed_out = RendezvousError(
        f"torch.distributed.DistNetworkError: The client socket has timed out after "
        f"{int(timeout_s * 1000)}ms while trying to connect to ({host}, {port})."
    )
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            raise timed_out
        try:
            reader, writer = await asyncio.wait_for(asyncio.open_connection(host, port), left)
            break
        except (OSError, asyncio.TimeoutError, TimeoutError):
            await asyncio.sleep(min(RETRY_S, max(deadline - time.monotonic(), 0)))
    writer.write(f"JOIN {rank} {nnodes}\n".encode())
    await writer.drain()
    log.info("SIMULATED: rank %d of %d connected to rank 0 at %s", rank, nnodes, addr)
    try:
        answer = await asyncio.wait_for(reader.readline(), max(deadline - time.monotonic(), 0.01))
    except (asyncio.TimeoutError, TimeoutError):
        writer.close()
        raise timed_out from None
    if answer.strip() != b"READY":
        writer.close()
        raise RendezvousError(
            f"SIMULATED: rank 0 at {addr} refused rank {rank} of {nnodes} "
            f"({answer.decode(errors='replace').strip() or 'connection closed'}): every rank needs "
            "the same --nnodes and its own --node-rank"
        )
    return reader, writer
