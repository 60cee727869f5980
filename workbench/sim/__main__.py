"""``python -m workbench.sim [launch_server flags]``: run the simulated SGLang server."""

from __future__ import annotations

import asyncio
import json
import logging
import signal
import sys

from aiohttp import web

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
        config.sglang_version, config.profile.name, config.args["sim_time_scale"], config.spec.label(),
    )
    return asyncio.run(_serve(server, config.args["host"], config.args["port"], log))


async def _serve(server: SimServer, host: str, port: int, log: logging.Logger) -> int:
    runner = web.AppRunner(server.app(), access_log=None, handle_signals=False)
    await runner.setup()
    site = web.TCPSite(runner, host, port)
    try:
        await site.start()
    except OSError as exc:
        log.error("Failed to bind %s:%s: %s (address already in use?)", host, port, exc)
        await runner.cleanup()
        return 1
    log.info("Uvicorn running on http://%s:%s (Press CTRL+C to quit)", host, port)
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
