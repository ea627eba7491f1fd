"""Which tool calls of one model turn may run at the same time (pure; used by the workflow)."""

from __future__ import annotations

from collections.abc import Sequence

ANY_FILE = "*"


def plan_batches(write_keys: Sequence[str | None]) -> list[list[int]]:
    """Split a turn's calls (in order) into batches that can each run concurrently.

    ``write_keys[i]`` is None for a read-only call, the path for a call that writes one file, or ``"*"`` for a
    call that may write anything (a command). Reads batch with reads; writes batch with writes to other files;
    a ``"*"`` call runs alone. Order between batches is the model's order, so a read after a write sees it.
    """
    batches: list[list[int]] = []
    current: list[int] = []
    kind: str | None = None  # "read" or "write" for the current batch
    keys: set[str] = set()
    for i, key in enumerate(write_keys):
        if key is None:
            fits = kind in (None, "read")
        else:
            fits = kind in (None, "write") and key != ANY_FILE and key not in keys and ANY_FILE not in keys
        if not fits and current:
            batches.append(current)
            current, kind, keys = [], None, set()
        current.append(i)
        kind = "read" if key is None else "write"
        if key is not None:
            keys.add(key)
    if current:
        batches.append(current)
    return batches
