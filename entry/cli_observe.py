"""The `bosun` commands that look back at runs: trace (the span tree), alerts (error-rate alerts), export (a run's
whole trajectory), keep-rate (how much of bosun's work is still there). Each takes the parsed arguments and the
settings and returns the exit code."""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from infra.alerts import read_alerts
from infra.errors import ConfigError
from infra.export import export as export_run
from infra.export import to_jsonl
from infra.history import collect_run
from infra.objectstore import open_store
from infra.settings import Settings
from infra.spanstore import with_shared
from infra.telemetry import read_spans, telemetry_dir
from infra.temporal import connect
from infra.traceview import render, task_spans
from sandbox.keeprate import keep_rate as compute_keep_rate


async def trace(args: argparse.Namespace, s: Settings) -> int:
    folder = telemetry_dir(s)
    spans = with_shared(s, args.id, task_spans(read_spans(folder), args.id))
    if not spans:
        hint = ("telemetry is off (BOSUN_TELEMETRY=false)" if not s.telemetry
                else f"nothing recorded in {folder} yet; spans reach it a tenth of a second after they end")
        raise ConfigError(f"no spans of run {args.id!r}: {hint}")
    if args.json:
        print(json.dumps(spans, indent=2))
    else:
        print("\n".join(render(spans)))
    return 0


async def alerts(args: argparse.Namespace, s: Settings) -> int:
    since = time.time() - args.hours * 3600
    found = read_alerts(telemetry_dir(s), since)
    if args.json:
        print(json.dumps(found, indent=2))
        return 0
    if not found:
        print(f"no alerts in the last {args.hours:g} hours")
    for a in found:
        when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(a["time"]))
        print(f"{when}  {a['operation']} on {a['model'] or 'any model'}: {a['error_class']} {a['rate']:.0%} "
              f"({a['errors']}/{a['calls']} calls; baseline {a['baseline']:.1%})")
    return 0


async def export(args: argparse.Namespace, s: Settings) -> int:
    client = await connect(s)
    root = await collect_run(client, args.id)
    doc = export_run(root, open_store(s))
    text = to_jsonl(doc) if args.format == "jsonl" else json.dumps(doc, indent=1, default=str) + "\n"
    if args.out:
        out = Path(args.out)
        if out.exists() and out.is_dir():
            raise ConfigError(f"--out {out} is a directory; name a file")
        out.write_text(text, encoding="utf-8")
        agents = len(doc["agents"])
        turns = sum(len(a["turns"]) for a in doc["agents"])
        print(f"exported {args.id}: {agents} agents, {turns} turns -> {out} ({len(text)} bytes); replay it with "
              f"--model scripted:{out}", file=sys.stderr)
    else:
        sys.stdout.write(text)
    return 0


async def keep_rate(args: argparse.Namespace, s: Settings) -> int:
    result = compute_keep_rate(Path(args.repo), args.days, args.branch)
    per_task = result.by_task()
    if args.json:
        print(json.dumps({"branch": result.branch, "days": result.days, "added": result.added,
                          "kept": result.kept, "keep_rate": round(result.rate, 4) if result.rate is not None else None,
                          "tasks": per_task, "commits": [c.__dict__ for c in result.commits]}, indent=2))
        return 0
    if not result.commits:
        print(f"no commits of bosun on {result.branch} (committer bosun@localhost)")
        return 0
    for task, t in sorted(per_task.items()):
        rate = f"{t['keep_rate']:.1%}" if t["keep_rate"] is not None else "-"
        note = " (provisional: not yet measured N days on)" if t["provisional"] else ""
        print(f"{task}: {t['kept']}/{t['added']} lines kept = {rate} over {t['commits']} commits{note}")
    rate = f"{result.rate:.1%}" if result.rate is not None else "-"
    print(f"overall on {result.branch} after {args.days:g} days: {result.kept}/{result.added} lines kept = {rate}")
    return 0
