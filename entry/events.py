"""``python -m entry.events ingress|starter``: run one part of the events subsystem in the foreground.

Settings come from BOSUN_* environment variables (see docs/EVENTS.md). SIGTERM/SIGINT stop it cleanly.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import signal
import sys

from entry.ingress import run_ingress
from entry.starter import Starter
from infra import telemetry
from infra.errors import BosunError
from infra.events.config import load_events_config
from infra.settings import load_settings


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m entry.events",
                                description="bosun events: webhook ingress or starter")
    sub = p.add_subparsers(dest="part", required=True, metavar="PART")
    ing = sub.add_parser("ingress", help="serve POST /webhooks/github, POST /webhooks/linear, GET /healthz")
    ing.add_argument("--host", help="address to listen on (default BOSUN_HOST)")
    ing.add_argument("--port", type=int, help="port to listen on (default BOSUN_INGRESS_PORT, 8787)")
    sub.add_parser("starter", help="consume events and start/signal/cancel TaskWorkflows")
    p.add_argument("--log-level", default="INFO", help="logging level (default INFO)")
    return p


async def _main(args: argparse.Namespace) -> None:
    settings = load_settings()
    cfg = load_events_config(settings)
    tel = telemetry.setup(settings, args.part)  # the webhook's and the start's spans (docs/OBSERVABILITY.md)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    try:
        if args.part == "ingress":
            await run_ingress(settings, args.host, args.port, cfg=cfg, stop=stop)
        else:
            await Starter(settings, cfg).run(stop)
    finally:
        tel.flush()


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    logging.basicConfig(level=args.log_level.upper(), stream=sys.stderr,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    try:
        asyncio.run(_main(args))
    except BosunError as e:
        print(f"bosun events {args.part}: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
