"""``bosun search`` subcommands.

``bosun search files --repo DIR (--query TEXT | --query-file FILE) [--k N] [--json]`` prints the best
files for a task, best first: with ``--json`` a JSON list of ``{"path": str, "score": float}``,
otherwise one ``score  path`` line each.

``bosun search map --repo DIR [--query TEXT | --query-file FILE] [--tokens N]`` prints the repo map.

:func:`search_main` takes the arguments after ``search`` and returns the exit code: 0 on success,
2 on bad input (one line on stderr).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from agents.search.index import DEFAULT_CACHE, build_index
from agents.search.ranker import rank_files
from agents.search.repomap import render_repo_map
from infra.cliargs import Page, Parser, UsageError, add_command

CODES = {0: "printed", 2: "bad input: no such repository directory, no or an empty query, both --query and "
                         "--query-file, a query file that cannot be read, --k or --tokens below 1"}
SEARCH_PAGE = Page(
    description="Find the code relevant to a task, as agents do: the repository's files ranked for a task or issue "
                "text (tree-sitter symbols, BM25 with identifier splitting, stack-trace, path and identifier "
                "signals), or its repo map. Symbols are cached in --cache-dir; each file is parsed in a helper "
                "process bounded in CPU time and memory (a file past the bounds is ranked by its text, and stderr "
                "names it). Needs no stack.",
    exit_codes={**CODES, 2: "no or an unknown subcommand, or bad input (see each subcommand)"},
    examples=('bosun search files --repo . --query "HttpClient retries on timeout" --json',
              'bosun search map --repo . --query "settings from the environment"'))


def parser() -> argparse.ArgumentParser:
    ap = Parser(prog="bosun search", page=SEARCH_PAGE)
    sub = ap.add_subparsers(dest="command", required=True, parser_class=Parser, metavar="COMMAND")
    files = add_command(sub, "files", help="rank the repository's files for a task",
                        description="Rank the repository's files for a task or issue text, best first: with --json "
                                    "a JSON list of {path, score}, otherwise one `score  path` line each.",
                        exit_codes=CODES,
                        examples=('bosun search files --repo . --query "HttpClient retries on timeout" --k 5 --json',
                                  "bosun search files --repo ~/src/calc --query-file issue.txt",
                                  "git log -1 --format=%B | bosun search files --repo . --query-file -"))
    files.add_argument("--k", type=int, default=10, help="how many files (default 10)")
    files.add_argument("--json", action="store_true", help="print a JSON list of {path, score}")
    repomap = add_command(sub, "map", help="print a repo map ranked for a task",
                          description="Print the repository's map (files with their main symbols' signatures), the "
                                      "files most relevant to the task first, within a token budget; without a "
                                      "query, ranked by the symbols' references alone.",
                          exit_codes=CODES,
                          examples=('bosun search map --repo . --query "settings from the environment"',
                                    "bosun search map --repo ~/src/calc --tokens 4096"))
    repomap.add_argument("--tokens", type=int, default=1024, help="token budget (default 1024)")
    for p in (files, repomap):
        p.add_argument("--repo", required=True, help="repository directory")
        p.add_argument("--query", help="task text")
        p.add_argument("--query-file", help="file holding the task text ('-' for stdin)")
        p.add_argument("--cache-dir", default=str(DEFAULT_CACHE), help="symbol cache directory")
    return ap


def _read_query(args: argparse.Namespace, required: bool) -> str:
    if args.query is not None and args.query_file is not None:
        raise UsageError("give either --query or --query-file, not both")
    if args.query is not None:
        text = args.query
    elif args.query_file is not None:
        try:
            text = sys.stdin.read() if args.query_file == "-" else Path(args.query_file).read_text(errors="replace")
        except OSError as exc:
            raise UsageError(f"cannot read query file {args.query_file}: {exc.strerror or exc}") from exc
    elif required:
        raise UsageError("one of --query or --query-file is required")
    else:
        text = ""
    if required and not text.strip():
        raise UsageError("the query is empty")
    return text


def search_main(argv: list[str]) -> int:
    """Run ``bosun search`` with ``argv`` (the words after ``search``); returns the exit code."""
    try:
        args = parser().parse_args(argv)
        repo = Path(args.repo)
        if not repo.is_dir():
            raise UsageError(f"repository directory not found: {args.repo}")
        query = _read_query(args, required=args.command == "files")
        if args.command == "files" and args.k < 1:
            raise UsageError(f"--k must be at least 1, got {args.k}")
        if args.command == "map" and args.tokens < 1:
            raise UsageError(f"--tokens must be at least 1, got {args.tokens}")
    except UsageError as exc:
        print(f"bosun search: {exc}", file=sys.stderr)
        return 2


    index = build_index(repo, cache_dir=Path(args.cache_dir))
    for path, why in index.skipped:  # bounded like an agent's workspace: such a file is ranked by its text
        print(f"bosun search: {path}: not parsed ({why})", file=sys.stderr)
    if args.command == "map":
        sys.stdout.write(render_repo_map(index, query, args.tokens))
        return 0
    results = rank_files(index, query, args.k)
    if args.json:
        print(json.dumps([{"path": p, "score": s} for p, s in results]))
    else:
        for path, score in results:
            print(f"{score:8.3f}  {path}")
    return 0


def main() -> None:
    """Console entry for ``python -m entry.cli_search files ...``."""
    raise SystemExit(search_main(sys.argv[1:]))


if __name__ == "__main__":
    main()
