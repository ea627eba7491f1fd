"""``bosun cluster up | status | down``: the command over LocalCluster (entry/cluster.py)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from entry.cluster import LocalCluster
from infra.cliargs import CommandParser, Page, add_command
from infra.errors import BosunError
from infra.settings import load_settings

CLUSTER_PAGE = Page(
    description="A bosun cluster on this machine, to try one or to test: 3 NATS JetStream nodes, one Temporal "
                "frontend and N worker hosts (each its own data dir and worker id) under one folder (--dir, default "
                "BOSUN_DATA_DIR/cluster). Each host's settings go to DIR/hosts/hN/host.env: `. DIR/hosts/h1/host.env` "
                "points any bosun command at the cluster. Processes are not supervised: one that dies stays down "
                "until `bosun cluster up`. Needs nats-server and the temporal CLI (and nginx for --tls): `make "
                "bootstrap` installs them.",
    exit_codes={0: "done (status: every process is healthy)", 1: "status: some process is down or not healthy yet",
                2: "bad input (--hosts out of range, a cluster of another shape running), or a process did not start "
                   "or become healthy (the message names its log)",
                3: "status: no cluster in that folder, or none of its processes runs"},
    examples=("bosun cluster up", "bosun cluster up --hosts 2 --tls", "bosun cluster status --json"))


UP_DOWN = {0: "done", 2: CLUSTER_PAGE.exit_codes[2]}


def parser() -> argparse.ArgumentParser:
    p = CommandParser(prog="bosun cluster", page=CLUSTER_PAGE)
    sub = p.add_subparsers(dest="action", required=True, metavar="ACTION")
    pages = {"up": dict(help="start what is not running and wait until healthy (idempotent)",
                        description="Start what is not running (the NATS nodes, Temporal, with --tls nginx, then the "
                                    "worker hosts) and wait until every part is healthy, then print each process and, "
                                    "per host, the file of its settings. Running it again starts what is down, on the "
                                    "same ports (kept in DIR/cluster.json); a failed start stops what it started.",
                        exit_codes={0: "the cluster is up and healthy", 2: CLUSTER_PAGE.exit_codes[2]},
                        examples=("bosun cluster up", "bosun cluster up --hosts 2 --tls",
                                  "bosun cluster up --dir /tmp/bosun-cluster --hosts 0 --json")),
             "down": dict(help="stop every process the cluster started (the data stays)",
                          description="Stop every process the cluster started (pid, start time and command line "
                                      "checked: nothing else is touched). Its data stays in the folder: `bosun cluster "
                                      "up` starts it again.",
                          exit_codes={0: "stopped (or no cluster there)", 2: "a setting is wrong"},
                          examples=("bosun cluster down", "bosun cluster down --dir /tmp/bosun-cluster")),
             "status": dict(help="each process with its pid, address and health",
                            description="Each process of the cluster with its pid, address and health, per host the "
                                        "file of its settings; Temporal's address and Web UI, the NATS URLs.",
                            exit_codes={0: "every process is healthy", 1: CLUSTER_PAGE.exit_codes[1],
                                        2: "a setting is wrong", 3: CLUSTER_PAGE.exit_codes[3]},
                            examples=("bosun cluster status", "bosun cluster status --json"))}
    for action, page in pages.items():
        a = add_command(sub, action, **page)
        a.add_argument("--dir", type=Path, help="the cluster's folder (default: BOSUN_DATA_DIR/cluster)")
        if action == "up":
            a.add_argument("--hosts", type=int, default=None, help="worker hosts (default 3, or the running cluster's)")
            a.add_argument("--tls", action="store_true", help="Temporal behind nginx (TLS, client certificates, an "
                                                              "API key) and NATS with TLS and a password")
        a.add_argument("--json", action="store_true", help="print the status as JSON")
    return p


def _print_status(st: dict, out=print) -> None:
    out(f"bosun cluster in {st['folder']}: {st['hosts']} hosts{', TLS' if st['tls'] else ''}; Temporal "
        f"{st['temporal']} (Web UI {st['temporal_ui']}); NATS {','.join(st['nats'])}")
    for name, p in st["processes"].items():
        health = "healthy" if p["healthy"] else ("DOWN" if p["pid"] is None else "starting")
        env = f"  env: {p['env_file']}" if "env_file" in p else ""
        out(f"  {name:<9} {health:<8} pid {p['pid'] or '-':<8} {p['address']}{env}")


def cluster_main(argv: list[str]) -> int:
    args = parser().parse_args(argv)
    try:
        folder = args.dir or load_settings().data_dir / "cluster"
        if args.action == "up":
            saved = LocalCluster.saved_shape(folder)
            hosts = args.hosts if args.hosts is not None else (saved[0] if saved else 3)
            cluster = LocalCluster(folder, hosts=hosts, tls=args.tls).up()
            st = cluster.status()
            if args.json:
                print(json.dumps(st, indent=2))
            else:
                _print_status(st)
                if "h1" in st["processes"]:
                    print(f"Point any bosun command at the cluster with a host's settings, e.g.:\n"
                          f"  . {st['processes']['h1']['env_file']} && bosun run --repo PATH \"TASK\"")
            return 0
        saved = LocalCluster.saved_shape(folder)
        if saved is None:
            print(f"no bosun cluster in {folder}" if not args.json else json.dumps({"folder": str(folder),
                                                                                     "running": False}))
            return 0 if args.action == "down" else 3
        cluster = LocalCluster(folder, hosts=saved[0], tls=saved[1])
        if args.action == "down":
            stopped = cluster.down()
            print(f"bosun cluster stopped ({', '.join(stopped) or 'nothing was running'}); its data stays in {folder}")
            return 0
        st = cluster.status()
        if args.json:
            print(json.dumps(st, indent=2))
        else:
            _print_status(st)
        if not st["running"]:
            return 3
        return 0 if all(p["healthy"] for p in st["processes"].values()) else 1
    except BosunError as e:
        print(f"bosun cluster: {e}", file=sys.stderr)
        return 2
