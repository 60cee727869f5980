"""Latency of definition lookups over SSH at 50 ms round trip: one ``sed`` per lookup versus one batched call.

Starts a real OpenSSH server on 127.0.0.1 (``tests/sshd_fixture.py``) and a TCP proxy
in front of it that delays every chunk by 25 ms each way (50 ms round trip), then
on SGLang 0.5.9's source tree (the release's wheel, fetched and cached by
:func:`workbench.source.sglang_release`) measures, each with a fresh connection:

(a) the old way: one ``ssh host sed -n A,Bp FILE`` per definition, for 20 definitions
    (line ranges known in advance, as a notebook had them);
(b) the 20 definitions looked up in one call (``find_definition`` of 20 names on the
    tree over SSH) with an empty on-host index (cold);
(c) the same call again, answered from the index (warm).

Targets (issue 7): (b) at most 5 s, (c) at most 0.5 s, connection included.

Usage::

    .venv/bin/python benchmarks/source_lookup_latency.py [--delay-ms 25] [--repeat 3] [--out results.json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import shlex
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from sshd_fixture import running_sshd  # noqa: E402

from workbench.hosts import SSHHost  # noqa: E402
from workbench.source import find_definition, search_tree, sglang_release  # noqa: E402

VERSION = "0.5.9"
#: Twenty definitions in 0.5.9 that an investigation of speculative decoding reads.
NAMES = (
    "get_alloc_len_per_decode", "Req", "ScheduleBatch", "EAGLEWorker", "EagleDraftInput", "ServerArgs",
    "ModelRunner", "Scheduler", "TokenizerManager", "EAGLEWorker.forward_batch_generation", "ForwardBatch",
    "CudaGraphRunner", "ScheduleBatch.prepare_for_decode", "alloc_token_slots", "LogitsProcessor", "RadixCache",
    "Scheduler.get_next_batch_to_run", "Scheduler.run_batch", "Scheduler.process_batch_result", "launch_server",
)  # fmt: skip


class DelayProxy:
    """A TCP proxy on 127.0.0.1 that forwards each chunk ``delay_s`` later, in both directions.

    Runs an asyncio loop in a daemon thread. Each direction has a reader that stamps
    chunks as they arrive and a writer that sends them once their time has come, so
    the delay adds latency without limiting throughput.

    Args:
        target_port: the port on 127.0.0.1 to forward to.
        delay_s: one-way delay in seconds (0.025 makes a 50 ms round trip).
    """

    def __init__(self, target_port: int, delay_s: float) -> None:
        self.target_port = target_port
        self.delay_s = delay_s
        self.port = 0
        self._loop = asyncio.new_event_loop()
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._run, name="delay-proxy", daemon=True)

    def __enter__(self) -> DelayProxy:
        self._thread.start()
        if not self._ready.wait(10):
            raise RuntimeError("the delaying proxy did not start within 10 s")
        return self

    def __exit__(self, *exc: object) -> None:
        async def cancel_all() -> None:
            tasks = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)

        asyncio.run_coroutine_threadsafe(cancel_all(), self._loop).result(10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)

    def _run(self) -> None:
        asyncio.set_event_loop(self._loop)
        server = self._loop.run_until_complete(asyncio.start_server(self._client, "127.0.0.1", 0))
        self.port = server.sockets[0].getsockname()[1]
        self._ready.set()
        self._loop.run_forever()

    async def _client(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            up_reader, up_writer = await asyncio.open_connection("127.0.0.1", self.target_port)
            await asyncio.gather(self._pipe(reader, up_writer), self._pipe(up_reader, writer), return_exceptions=True)
        except asyncio.CancelledError:  # the proxy is closing
            writer.close()

    async def _pipe(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        queue: asyncio.Queue[tuple[float, bytes]] = asyncio.Queue()
        loop = asyncio.get_running_loop()

        async def send() -> None:
            while True:
                due, chunk = await queue.get()
                wait = due - loop.time()
                if wait > 0:
                    await asyncio.sleep(wait)
                if not chunk:
                    writer.close()
                    return
                writer.write(chunk)
                await writer.drain()

        sender = asyncio.create_task(send())
        try:
            while True:
                chunk = await reader.read(65536)
                queue.put_nowait((loop.time() + self.delay_s, chunk))
                if not chunk:
                    break
            await sender
        except (ConnectionError, OSError):
            sender.cancel()
            writer.close()


@contextmanager
def delayed_host(delay_s: float, work: Path) -> Iterator[tuple[Path, str]]:
    """(ssh config file, alias) of a real sshd reached through a :class:`DelayProxy`."""
    with running_sshd(work) as sshd, DelayProxy(sshd.port, delay_s) as proxy:
        known = work / "known_hosts_proxy"
        known.write_text(f"[127.0.0.1]:{proxy.port} {sshd.host_key_line}\n")
        config = sshd.write_config("ssh_config_delayed", {"delayed": sshd.options(
            Port=str(proxy.port), UserKnownHostsFile=str(known))})  # fmt: skip
        yield config, "delayed"


def timed(fn) -> tuple[float, object]:  # type: ignore[no-untyped-def]
    started = time.perf_counter()
    value = fn()
    return time.perf_counter() - started, value


def old_way(config: Path, alias: str, root: str, ranges: list[tuple[str, int, int]]) -> float:
    """(a): one ``ssh host sed -n A,Bp FILE`` (OpenSSH's client, a new connection each) per definition."""
    started = time.perf_counter()
    for path, start, end in ranges:
        line = f"sed -n {start},{end}p {shlex.quote(os.path.join(root, path))}"
        subprocess.run(["ssh", "-F", str(config), alias, line], check=True, capture_output=True)
    return time.perf_counter() - started


def batched(config: Path, alias: str, root: str, index_dir: str) -> tuple[float, dict]:
    """(b)/(c): a fresh connection, then the 20 names in one call; returns (seconds, the helper's counts)."""
    queries = [{"name": name, "type": "definition"} for name in NAMES]
    started = time.perf_counter()
    with SSHHost(alias, config_file=config) as host:
        answer = search_tree(host, root, queries, index_dir=index_dir)
    elapsed = time.perf_counter() - started
    stats = {key: answer[key] for key in ("files_scanned", "files_parsed", "files_from_index", "elapsed_s")}
    stats["found"] = sum(1 for result in answer["results"] if result["matches"])
    return elapsed, stats


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--delay-ms", type=float, default=25.0, help="one-way delay in ms (default 25)")
    parser.add_argument("--repeat", type=int, default=3, help="runs of (a) and (c) (default 3; (b) runs once)")
    parser.add_argument("--out", default=None, help="write the results as JSON here")
    args = parser.parse_args()
    root = str(sglang_release(VERSION).package_dir)
    results: dict[str, object] = {
        "date": time.strftime("%Y-%m-%d"), "machine": f"{platform.node()} {platform.machine()}, {os.cpu_count()} cores",
        "python": platform.python_version(), "version": VERSION, "delay_ms_each_way": args.delay_ms, "names": NAMES,
    }  # fmt: skip
    with tempfile.TemporaryDirectory(prefix="lookup-bench-") as tmp:
        work = Path(tmp)
        index_dir = str(work / "index")  # empty: (b) is cold
        with delayed_host(args.delay_ms / 1000, work / "sshd") as (config, alias):
            with SSHHost(alias, config_file=config) as host:
                seconds, _ = timed(lambda: host.run("true"))
                search_tree(host, root, [], reads=[{"path": "version.py"}])  # upload the helper: not timed
            results["connect_and_true_s"] = round(seconds, 3)
            cold, cold_stats = batched(config, alias, root, index_dir)
            frame = find_definition(list(NAMES), versions=(), host="local", tree=root, include_source=False)
            ranges = [(r.path, int(r.start_line), int(r.end_line)) for r in frame[frame["found"]].itertuples()]
            ranges = list(dict.fromkeys(ranges))[: len(NAMES)]
            old = [old_way(config, alias, root, ranges) for _ in range(args.repeat)]
            warm_runs = [batched(config, alias, root, index_dir) for _ in range(args.repeat)]
    results.update(
        a_old_way_s=[round(s, 3) for s in old], a_lookups=len(ranges),
        b_cold_s=round(cold, 3), b_stats=cold_stats,
        c_warm_s=[round(s, 3) for s, _ in warm_runs], c_stats=warm_runs[-1][1],
    )  # fmt: skip
    text = json.dumps(results, indent=1, default=str)
    print(text)
    if args.out:
        Path(args.out).write_text(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
