"""Kernel receive stamps: a read is timed when its bytes arrived, not when a busy client loop got to them.

A real aiohttp server (tests/doubles/scripted_server.py, its own thread and loop) streams one chunk
every 50 ms; right after the first chunk the client's event loop is blocked for 80 ms, over the second. With the
run's session (stamped sockets) the chunk keeps its arrival time; with a plain session it is timed
when the loop wakes, 30 ms late, and the next gap shrinks by as much.
"""

from __future__ import annotations

import asyncio
import math
import socket
import time

import aiohttp

from doubles.scripted_server import ScriptedServer, StreamScript
from undisturbed import until_undisturbed
from workbench.bench._client import send_request
from workbench.bench._measure import open_session
from workbench.bench._record import RequestRecord
from workbench.bench._rxstamp import ANCHOR_SLACK_S, ArrivalClock, StampedSocket, stamped_socket
from workbench.bench._timing import Timebase

SCRIPT = StreamScript(first_delay_s=0.05, chunk_tokens=(1, 1, 1, 1), gap_s=0.05)
#: Client gap minus the server's own gap between its writes, ms: the kernel's stamp follows the write
#: within loopback's microseconds; the slack is for the server thread reading its clock after the write.
TOLERANCE_MS = 8.0


def _measure(session_factory, block_s: float) -> tuple[RequestRecord, list[float]]:
    """One 4-chunk stream; right after the first chunk's read the client loop sleeps ``block_s``.
    Returns the record and the server's gaps between its writes (ms): a loaded machine may delay the
    server thread's writes, so the client's gaps are compared with those, not with the script's 50 ms."""

    async def go() -> RequestRecord:
        loop = asyncio.get_running_loop()
        reads = []

        def after_read(events, t) -> None:
            reads.append(t)
            if len(reads) == 1:
                loop.call_soon(time.sleep, block_s)  # the loop is busy: nothing is read meanwhile

        async with session_factory() as session:
            return await send_request(
                session, srv.url, "hi", max_new_tokens=4, timebase=Timebase.start(), timeout_s=10, observer=after_read
            )

    with ScriptedServer(SCRIPT) as srv:
        record = asyncio.run(go())
        writes = srv.write_times
    return record, [(b - a) * 1000.0 for a, b in zip(writes, writes[1:])]


def _check_stamped(measured: tuple[RequestRecord, list[float]]) -> None:
    stamped, sent = measured
    assert stamped.error is None and stamped.num_chunks == 4 and stamped.num_reads == 4, stamped
    assert stamped.kernel_stamped_reads == 4, stamped.kernel_stamped_reads
    assert all(abs(gap - server) <= TOLERANCE_MS for gap, server in zip(stamped.itl_ms, sent, strict=True)), (
        stamped.itl_ms,
        sent,
    )


def _check_plain(measured: tuple[RequestRecord, list[float]]) -> None:
    plain, sent = measured
    assert plain.error is None and plain.kernel_stamped_reads == 0, plain
    # the second chunk is read when the 80 ms sleep ends (or when it was sent, if later): late by the rest
    assert plain.itl_ms[0] >= max(75.0, sent[0] - TOLERANCE_MS), (plain.itl_ms, sent)
    if sent[0] < 70.0:  # it was sent during the sleep: the loop's reading moved it, and the next gap shrank
        assert plain.itl_ms[0] - sent[0] >= 5.0 and plain.itl_ms[1] < sent[1] - 5.0, (plain.itl_ms, sent)


def test_a_read_delayed_by_a_busy_loop_keeps_its_kernel_arrival_time() -> None:
    # chunks leave about 50 ms apart; the loop sleeps 80 ms right after reading the first, over the second.
    # A preemption of the server thread between its write and its clock reading (> 8 ms), or one that lets
    # two chunks meet in one read, disturbs a try on a loaded machine: such a try is measured again
    until_undisturbed(lambda: _measure(open_session, 0.08), _check_stamped)
    until_undisturbed(lambda: _measure(aiohttp.ClientSession, 0.08), _check_plain)  # the loop's readings


class _FakeSocket:
    def __init__(self) -> None:
        self.stamped_reads = 0
        self.rx_epoch_s = math.nan

    def stamp(self, epoch_s: float) -> None:
        self.stamped_reads += 1
        self.rx_epoch_s = epoch_s


def test_arrival_clock_maps_stamps_and_keeps_the_loop_reading_when_a_stamp_cannot_be_this_read() -> None:
    sock = _FakeSocket()
    # the run's clock reads 128.0 when the epoch clock reads 4096.0; the request was sent at 127.5
    # (binary fractions, so the mapped times are exact)
    clock = ArrivalClock(sock, lambda: 128.0, 127.5, wall_clock=lambda: 4096.0)
    assert clock.arrival(128.25) == (128.25, False)  # no stamped read yet
    sock.stamp(4096.0625)
    assert clock.arrival(128.25) == (128.0625, True)  # arrived 62.5 ms after the anchor
    assert clock.arrival(128.375) == (128.375, False)  # no new stamped read since: not this read's stamp
    sock.stamp(4096.0)  # before the previous arrival: out of order, not used
    assert clock.arrival(128.4375) == (128.4375, False)
    sock.stamp(4096.5 + 2**-11)  # 0.49 ms past the loop's reading (< ANCHOR_SLACK_S): the anchor's jitter
    assert 2**-11 < ANCHOR_SLACK_S and clock.arrival(128.5) == (128.5, True)
    sock.stamp(4097.0)  # a quarter second past it: not believable
    assert clock.arrival(128.75) == (128.75, False)
    assert ArrivalClock(None, lambda: 1.0, 0.0).arrival(2.0) == (2.0, False)


def test_a_keep_alive_socket_stamped_before_the_request_is_not_used() -> None:
    sock = _FakeSocket()
    sock.stamp(4095.0)  # the previous response's last read
    clock = ArrivalClock(sock, lambda: 128.0, 127.5, wall_clock=lambda: 4096.0)
    assert clock.arrival(128.25) == (128.25, False)  # 4095.0 maps to 127.0, before this request's send


def test_stamped_socket_turns_on_the_option_and_reads_the_stamp() -> None:
    server = socket.create_server(("127.0.0.1", 0))
    addr = server.getsockname()
    client = stamped_socket((socket.AF_INET, socket.SOCK_STREAM, 0, "", addr))
    try:
        assert isinstance(client, StampedSocket)
        client.connect(addr)
        peer, _ = server.accept()
        time.sleep(0.05)  # a first socket switches the kernel's stamping on by deferred work: let it run
        before = time.time()
        peer.sendall(b"data")  # on loopback the bytes arrive within this call
        time.sleep(0.03)  # the reader is at least 30 ms late
        read_at = time.time()
        assert client.recv(64) == b"data"
        # the stamp is the arrival: not before the send began, and at least 15 ms before the read (which
        # comes 30 ms or more after the send). Unlike a bound on the distance to the send, it holds however
        # long a loaded machine stalls either thread; a stamp taken at the read fails it
        assert client.stamped_reads == 1 and before - 0.001 <= client.rx_epoch_s <= read_at - 0.015, (
            before,
            client.rx_epoch_s,
            read_at,
        )
        peer.close()
    finally:
        client.close()
        server.close()


def test_the_anchor_is_not_thrown_off_by_a_preemption_between_its_two_clock_reads() -> None:
    # truth: epoch = raw + 4900. The first try is preempted for 30 ms after its monotonic read (a loaded
    # machine); the second reads both clocks together. A stamp at epoch 5000.050 arrived at raw 100.050.
    raws = iter([100.000, 100.030, 100.031, 100.031])
    walls = iter([5000.030, 5000.031])
    sock = _FakeSocket()
    clock = ArrivalClock(sock, lambda: next(raws), 99.9, wall_clock=lambda: next(walls))
    sock.stamp(5000.050)
    t, kernel = clock.arrival(100.0502)
    assert kernel and abs(t - 100.050) < 1e-9, t  # one unchecked pair would map it to 100.020, 30 ms early
