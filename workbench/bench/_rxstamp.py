"""Kernel receive timestamps for the load generator's sockets (Linux ``SO_TIMESTAMPNS``).

The client times a network read when its coroutine gets the bytes. On a loaded client (hundreds
of streams on a few cores) that is late: the bytes waited in the socket while the event loop
ran other streams' callbacks, and the delay lands in TTFT and ITL. The kernel stamps every
received TCP segment as it arrives; with the ``SO_TIMESTAMPNS`` option, each ``recvmsg`` returns
the stamp (``CLOCK_REALTIME``, ns) of the newest segment it read (Linux ``tcp_recvmsg`` →
``tcp_recv_timestamp``, kernel 4.13 and later; ``socket(7)``). On 127.0.0.1 here the stamp was
0.01–0.03 ms after the peer's ``send`` while the reader came 10 ms late.

How it is used: :func:`stamped_socket` is the ``socket_factory`` of the run's
:class:`aiohttp.TCPConnector`; it makes :class:`StampedSocket` objects, whose ``recv`` (what the
standard asyncio selector transport calls for every read) goes through ``recvmsg`` and keeps the
newest stamp. :class:`ArrivalClock` maps that stamp onto the run's monotonic clock for one
response, with an anchor pair ``(clock(), time.time())`` read when the response's headers
arrived, so clock drift over a long run does not enter.

Limits, said where the rows are used (``kernel_stamped_reads`` per request):

- A read holding several chunks gets the stamp of the newest segment: the older chunks of that
  read arrived earlier by an unknown amount (they share one arrival, as without the stamps).
- uvloop and non-Linux systems do not call ``socket.recv``; there, and whenever a stamp is
  missing or outside the request's span, the read keeps the loop's own reading.
"""

from __future__ import annotations

import atexit
import math
import socket
import struct
import time
import weakref
from typing import Any

__all__ = [
    "ANCHOR_SLACK_S",
    "SO_TIMESTAMPNS",
    "ArrivalClock",
    "StampedSocket",
    "keep_stamping_on",
    "stamped_socket",
    "socket_of",
]

#: ``SO_TIMESTAMPNS`` (Linux ``asm-generic/socket.h``: ``SO_TIMESTAMPNS_OLD`` = 35; Python's
#: ``socket`` module does not export it). Its control message type has the same number.
SO_TIMESTAMPNS = getattr(socket, "SO_TIMESTAMPNS", 35)

#: Room for one ``struct timespec`` control message (two 64-bit fields).
_ANCILLARY_BYTES = socket.CMSG_SPACE(16)

#: A stamp mapped up to this far past the loop's reading is the loop's reading (seconds).
ANCHOR_SLACK_S = 1e-3

#: Stamped sockets by file descriptor (the transport exposes only a wrapper of the socket).
_BY_FD: "weakref.WeakValueDictionary[int, StampedSocket]" = weakref.WeakValueDictionary()


class StampedSocket(socket.socket):
    """A TCP socket whose :meth:`recv` keeps the kernel's receive stamp of the newest segment read.

    Attributes:
        rx_epoch_s: epoch seconds (``CLOCK_REALTIME``) of the newest stamped read; NaN before one.
        stamped_reads: reads that carried a stamp.
    """

    rx_epoch_s: float = float("nan")
    stamped_reads: int = 0

    def recv(self, bufsize: int, flags: int = 0) -> bytes:  # the asyncio selector transport's read
        data, ancillary, _flags, _addr = self.recvmsg(bufsize, _ANCILLARY_BYTES, flags)
        for level, kind, payload in ancillary:
            if level == socket.SOL_SOCKET and kind == SO_TIMESTAMPNS and len(payload) >= 16:
                seconds, nanoseconds = struct.unpack_from("qq", payload)
                self.rx_epoch_s = seconds + nanoseconds * 1e-9
                self.stamped_reads += 1
        return data


#: The datagram socket :func:`keep_stamping_on` holds for the process's life (None until then).
_KEEPER: list[socket.socket] = []


def keep_stamping_on() -> None:
    """Hold one socket with ``SO_TIMESTAMPNS`` on for the rest of the process (once; cheap).

    Linux stamps arriving packets only while some socket asks for it: the first to ask switches
    stamping on for the whole stack and the last to close switches it off (``net_enable_timestamp``
    and ``net_disable_timestamp`` in ``net/core/dev.c``, a static key switched by deferred work). A
    packet that arrives before the switch carries no stamp, and TCP then gives the read none, so a
    process whose sockets come and go (a session per sweep, other processes' on a shared machine)
    lost the first reads' stamps now and then (issue 24, a read-stamp count short on a busy machine).
    Held open from the first stamped socket on, the switch happens once, long before the next
    response arrives. Refused options (not Linux) are ignored.
    """
    if _KEEPER:
        return
    keeper = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        keeper.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
    except OSError:
        keeper.close()
        return
    _KEEPER.append(keeper)
    atexit.register(keeper.close)  # closed at exit, not left to the collector


def stamped_socket(addr_info: Any) -> socket.socket:
    """``socket_factory`` for :class:`aiohttp.TCPConnector`: a :class:`StampedSocket` with
    ``SO_TIMESTAMPNS`` on, or a plain socket where the option is refused (not Linux). Stamping is
    then kept on for the process (:func:`keep_stamping_on`).

    Args:
        addr_info: ``(family, type, proto, canonname, sockaddr)`` as :func:`socket.getaddrinfo` gives.
    """
    keep_stamping_on()
    family, kind, proto = addr_info[0], addr_info[1], addr_info[2]
    sock = StampedSocket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
    except OSError:
        sock.close()
        return socket.socket(family, kind, proto)
    _BY_FD[sock.fileno()] = sock
    return sock


def socket_of(transport: Any) -> StampedSocket | None:
    """The :class:`StampedSocket` behind an asyncio transport, or None (another socket, no transport)."""
    if transport is None:
        return None
    wrapped = transport.get_extra_info("socket")
    if wrapped is None:
        return None
    try:
        fd = wrapped.fileno()
    except OSError:
        return None
    sock = _BY_FD.get(fd)
    return sock if sock is not None and sock.fileno() == fd else None


#: Tries at reading the two clocks together (:func:`_anchor`); the closest pair is kept.
ANCHOR_TRIES = 5


def _anchor(clock: Any, wall_clock: Any) -> tuple[float, float]:
    """``(monotonic, epoch)`` read at one instant: the epoch clock between two monotonic reads, the
    pair whose two monotonic reads are closest of :data:`ANCHOR_TRIES` (the midpoint). One try alone
    can straddle a preemption on a loaded machine (milliseconds to tens of them), which would map
    every kernel stamp of the response that much off and past :data:`ANCHOR_SLACK_S`."""
    spread, raw, epoch = math.inf, 0.0, 0.0
    for _ in range(ANCHOR_TRIES):
        before, now_epoch, after = clock(), wall_clock(), clock()
        if after - before < spread:
            spread, raw, epoch = after - before, (before + after) / 2, now_epoch
        if spread <= ANCHOR_SLACK_S / 10:
            break
    return raw, epoch


class ArrivalClock:
    """Arrival times of one response's reads on the run's monotonic clock, from kernel stamps.

    Args:
        sock: the response's :class:`StampedSocket` (None: every read keeps the loop's reading).
        clock: the run's monotonic clock (the :class:`~workbench.bench.Timebase`'s).
        start: raw clock reading of the request's send; a stamp before it is not this request's.
        wall_clock: epoch clock read once with ``clock`` for the anchor (default :func:`time.time`).
    """

    def __init__(self, sock: StampedSocket | None, clock: Any, start: float, *, wall_clock: Any = time.time) -> None:
        self._sock = sock
        self._start = start
        self._last = start
        self._anchor_raw, self._anchor_epoch = _anchor(clock, wall_clock)
        self._seen = sock.stamped_reads if sock is not None else 0
        self._pending = sock is not None and sock.stamped_reads > 0  # the headers' read may carry body bytes

    def arrival(self, now: float) -> tuple[float, bool]:
        """``(raw clock reading of the newest bytes' arrival, True when it is the kernel's)`` for a read
        the loop handed over at raw reading ``now``. The loop's reading is kept when no new stamped
        read happened since the last call, or the stamp falls outside ``[previous arrival, now]``."""
        sock = self._sock
        if sock is None or (sock.stamped_reads == self._seen and not self._pending):
            return now, False
        self._seen, self._pending = sock.stamped_reads, False
        t = self._anchor_raw + (sock.rx_epoch_s - self._anchor_epoch)
        if now < t <= now + ANCHOR_SLACK_S:  # the anchor's two clock reads are microseconds apart
            t = now
        if not (self._last <= t <= now):
            return now, False
        self._last = t
        return t, True
