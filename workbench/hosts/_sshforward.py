"""SSH local port forwarding (like ``ssh -L``) over an existing connection.

A listening socket on 127.0.0.1 accepts clients in a thread; each client gets a
``direct-tcpip`` channel to the destination (opened by the host, so it rides the
host's one connection and its reconnect logic) and a thread that copies bytes
both ways, passing half-closes through, until both sides are done.
"""

from __future__ import annotations

import logging
import select
import socket
import threading
from collections.abc import Callable

import paramiko

from workbench.errors import HostError
from workbench.hosts._base import Forward

log = logging.getLogger(__name__)

#: Seconds between checks of the closed flag by the accept and copy threads.
POLL_S = 0.2
#: Bytes read per ``recv``.
CHUNK = 1 << 16

OpenChannel = Callable[[tuple[str, int], tuple[str, int]], paramiko.Channel]


class SSHForward(Forward):
    """A local port forwarded to ``remote_host:remote_port`` through an SSH connection.

    Args:
        open_channel: opens a ``direct-tcpip`` channel: ``open_channel(dest, src)``.
        host_name: the host's name (for messages and thread names).
        remote_host: address the host connects to.
        remote_port: port the host connects to.
        local_port: port to listen on, on 127.0.0.1 (0: any free port).

    Raises:
        HostError: the local port cannot be bound.
    """

    def __init__(
        self,
        open_channel: OpenChannel,
        *,
        host_name: str,
        remote_host: str,
        remote_port: int,
        local_port: int = 0,
    ) -> None:
        server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        try:
            server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            server.bind(("127.0.0.1", local_port))
            server.listen(64)
        except OSError as exc:
            server.close()
            raise HostError(
                f"Cannot listen on 127.0.0.1:{local_port} to forward to {remote_host}:{remote_port} "
                f"on host {host_name!r}: {exc.strerror}. Pick another local_port (0: any free port)."
            ) from exc
        server.settimeout(POLL_S)
        super().__init__(
            local_host="127.0.0.1", local_port=server.getsockname()[1], remote_host=remote_host, remote_port=remote_port
        )
        self.host_name = host_name
        self._open_channel = open_channel
        self._server = server
        self._closed = threading.Event()
        self._lock = threading.Lock()
        self._pairs: set[tuple[socket.socket, paramiko.Channel]] = set()
        self._threads: list[threading.Thread] = []
        self._accepter = threading.Thread(
            target=self._accept_loop, name=f"forward-{host_name}-{self.local_port}", daemon=True
        )
        self._accepter.start()

    @property
    def closed(self) -> bool:
        """True once :meth:`close` has run."""
        return self._closed.is_set()

    @property
    def active_connections(self) -> int:
        """Client connections currently being forwarded."""
        with self._lock:
            return len(self._pairs)

    def close(self) -> None:
        """Stop listening, close every forwarded connection and join the threads (≤ ~1 s)."""
        if self._closed.is_set():
            return
        self._closed.set()
        self._accepter.join(2 * POLL_S + 1)
        self._server.close()
        with self._lock:
            pairs = list(self._pairs)
            threads = list(self._threads)
        for client, chan in pairs:
            _close_pair(client, chan)
        for thread in threads:
            thread.join(2 * POLL_S + 1)

    def _accept_loop(self) -> None:
        while not self._closed.is_set():
            try:
                client, addr = self._server.accept()
            except socket.timeout:
                continue
            except OSError:
                return
            client.settimeout(None)
            thread = threading.Thread(
                target=self._serve, args=(client, addr), name=f"{self._accepter.name}-conn", daemon=True
            )
            with self._lock:
                self._threads = [t for t in self._threads if t.is_alive()] + [thread]
            thread.start()

    def _serve(self, client: socket.socket, addr: tuple[str, int]) -> None:
        try:
            chan = self._open_channel((self.remote_host, self.remote_port), addr)
        except HostError as exc:
            log.warning("forward %s: %s", self, exc)
            client.close()
            return
        pair = (client, chan)
        with self._lock:
            if self._closed.is_set():
                _close_pair(client, chan)
                return
            self._pairs.add(pair)
        try:
            _copy_both_ways(client, chan, self._closed)
        except (OSError, EOFError, paramiko.SSHException) as exc:
            log.debug("forward %s: connection from %s ended: %s", self, addr, exc)
        finally:
            with self._lock:
                self._pairs.discard(pair)
            _close_pair(client, chan)


def _copy_both_ways(client: socket.socket, chan: paramiko.Channel, closed: threading.Event) -> None:
    """Copy client->chan and chan->client until both directions reached EOF (or ``closed``)."""
    up_open = down_open = True  # up: client -> host; down: host -> client
    while (up_open or down_open) and not closed.is_set():
        readers = ([client] if up_open else []) + ([chan] if down_open else [])
        ready, _, _ = select.select(readers, [], [], POLL_S)
        if client in ready:
            data = client.recv(CHUNK)
            if data:
                chan.sendall(data)
            else:
                up_open = False
                chan.shutdown_write()
        if chan in ready:
            data = chan.recv(CHUNK)
            if data:
                client.sendall(data)
            else:
                down_open = False
                try:
                    client.shutdown(socket.SHUT_WR)
                except OSError:
                    up_open = False
        if chan.closed and not down_open:
            return


def _close_pair(client: socket.socket, chan: paramiko.Channel) -> None:
    try:
        client.close()
    finally:
        chan.close()
