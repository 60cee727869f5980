"""``python -m workbench.sim [launch_server flags]``: run the simulated SGLang server."""

from __future__ import annotations

import asyncio
import json
import logging
import signal
import sys
from typing import Any

from aiohttp import web

from workbench.sim import _rendezvous as _rdv
from workbench.errors import WorkbenchError
from workbench.sim._server import SimServer
from workbench.sim._server_args import parse_server_args


def main(argv: list[str] | None = None) -> int:
    """Parse flags, serve until SIGTERM/SIGINT. Returns the exit status."""
    logging.basicConfig(
        level=logging.INFO, format="[%(asctime)s] %(message)s", datefmt="%Y-%m-%d %H:%M:%S", stream=sys.stdout
    )
    log = logging.getLogger("sglang.sim")
    try:
        config = parse_server_args(sys.argv[1:] if argv is None else argv)
        server = SimServer(config)
    except WorkbenchError as exc:
        log.error("%s", exc)
        return 2
    log.info("server_args=%s", json.dumps(config.args, sort_keys=True))
    log.info(
        "SIMULATED SGLang %s server (workbench sim engine, profile %s, time scale %s): %s",
        config.sglang_version,
        config.profile.name,
        config.args["sim_time_scale"],
        config.spec.label(),
    )
    args = config.args
    if args["nnodes"] > 1 and args["node_rank"] > 0:
        return asyncio.run(_serve_rank(args, log))
    return asyncio.run(_serve(server, args["host"], args["port"], log, args))


async def _form_group(args: dict[str, Any], log: logging.Logger) -> _rdv.Group | None:
    """Rank 0 of a multi-node server: wait for every other rank (None for a one-node server)."""
    if args["nnodes"] == 1:
        return None
    return await _rdv.host_group(args["dist_init_addr"], args["nnodes"], timeout_s=args["sim_dist_timeout"], log=log)


async def _serve(server: SimServer, host: str, port: int, log: logging.Logger, args: dict[str, Any]) -> int:
    try:
        group = await _form_group(args, log)
    except _rdv.RendezvousError as exc:
        log.error("%s", exc)
        return 1
    except OSError as exc:
        log.error("Failed to bind the --dist-init-addr port: %s (address already in use?)", exc)
        return 1
    watching = asyncio.ensure_future(group.watch(log)) if group is not None else None
    try:
        return await _serve_http(server.app(), host, port, log)
    finally:
        if watching is not None:
            watching.cancel()
        if group is not None:
            await group.close()


async def _serve_rank(args: dict[str, Any], log: logging.Logger) -> int:
    """A rank > 0: join rank 0, then serve SGLang's dummy health server until rank 0 goes away or SIGTERM."""
    rank, nnodes, addr = args["node_rank"], args["nnodes"], args["dist_init_addr"]
    try:
        reader, writer = await _rdv.join_group(addr, rank, nnodes, timeout_s=args["sim_dist_timeout"], log=log)
    except _rdv.RendezvousError as exc:
        log.error("%s", exc)
        return 1
    log.info("SIMULATED: rank %d of %d joined its group at %s; serving the dummy health check only", rank, nnodes, addr)
    gone = asyncio.ensure_future(reader.read())  # b"" when rank 0's connection closes
    served = asyncio.ensure_future(_serve_http(_health_app(), args["host"], args["port"], log, ready_line=False))
    done, _ = await asyncio.wait({gone, served}, return_when=asyncio.FIRST_COMPLETED)
    if served in done:
        gone.cancel()
        writer.close()
        return served.result()
    host, port = _rdv.split_addr(addr)
    log.error(
        "RuntimeError: Connection closed by peer [%s]:%d (SIMULATED: rank 0 went away; rank %d exits with its group)",
        host,
        port,
        rank,
    )
    served.cancel()
    return 1


def _health_app() -> web.Application:
    """SGLang's ``launch_dummy_health_check_server`` (0.5.9 ``srt/utils/common.py``): 200 on three paths."""

    async def ok(_: web.Request) -> web.Response:
        return web.Response(status=200)

    app = web.Application()
    for path in ("/ping", "/health", "/health_generate"):
        app.router.add_get(path, ok)
    return app


#: Seconds the simulated server gives open requests after SIGTERM/SIGINT before it closes them.
SHUTDOWN_TIMEOUT_S = 1.0


async def _serve_http(
    app: web.Application, host: str, port: int, log: logging.Logger, *, ready_line: bool = True
) -> int:
    # SIGTERM ends the server within about a second, streams in flight cut as a killed server cuts them: aiohttp's
    # default waits up to 60 s for open handlers, and a stop that waits on its own load generator's streams (a
    # cancelled fleet unit, a Ctrl-C'd sweep) then outlasted the 5 s the workbench promises (docs/FLEET.md).
    runner = web.AppRunner(app, access_log=None, handle_signals=False, shutdown_timeout=SHUTDOWN_TIMEOUT_S)
    await runner.setup()
    site = web.TCPSite(runner, host, port)
    try:
        await site.start()
    except OSError as exc:
        log.error("Failed to bind %s:%s: %s (address already in use?)", host, port, exc)
        await runner.cleanup()
        return 1
    log.info("Uvicorn running on http://%s:%s (Press CTRL+C to quit)", host, port)
    if ready_line:
        log.info("The server is fired up and ready to roll!")
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    await stop.wait()
    log.info("Shutting down")
    await runner.cleanup()
    return 0


if __name__ == "__main__":
    sys.exit(main())
