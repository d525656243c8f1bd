"""Data a benchmark generates once per set of parameters, kept under `bench/.cache/<parameters>/`
(git-ignored) and reused by later runs; a folder without its `.complete` marker is made again."""

from __future__ import annotations

import shutil
import tempfile
import time
from collections.abc import Callable
from pathlib import Path


def ensure_cached(target: Path, make: Callable[[Path], None], description: str) -> tuple[Path, float]:
    """`target`, made first when missing (by `make` in a temporary folder beside it, marked complete
    with `description`, then renamed into place), and the seconds making it took."""
    if (target / ".complete").is_file():
        return target, 0.0
    target.parent.mkdir(parents=True, exist_ok=True)
    partial, started = Path(tempfile.mkdtemp(prefix=f".{target.name}.", dir=target.parent)), time.monotonic()
    try:
        make(partial)
        (partial / ".complete").write_text(description + "\n")
        partial.chmod(0o755)  # mkdtemp made it private
        if target.exists():  # left incomplete by an interrupted attempt
            shutil.rmtree(target)
        partial.rename(target)
    finally:
        shutil.rmtree(partial, ignore_errors=True)
    return target, time.monotonic() - started
