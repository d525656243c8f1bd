"""A memory's manifest (issue 22): what a user's memory is, file by file, when it completes, so that
`--reuse` checks an earlier run's files against it instead of trusting them.

The manifest lists every regular file under `users/<uid>/workspace/` (recursively),
`sessions/*.json` and `index-response.json`, each with its path under `users/<uid>/`, its size and
its sha256, sorted by path; `tasks/index.py` puts it into memory_usage.json, the file written last.

What comes into the workspace after that is not the memory: the answer agents' states
(`mem_session/agentscope/<uuid>.jsonl`, one per answer, named by its answer-response.json's
`trajectory_path`). ReMe writes its index state (`metadata/`) again when the application closes,
byte for byte the same: its search and read steps change none of it.
"""

from __future__ import annotations

import hashlib
import os
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

from mobilemem.records import ManifestEntry
from mobilemem.run_reader import READ_FLAGS
from mobilemem.rundir import UserDir

CHUNK = 1 << 20


def digest(handle: BinaryIO, sink: BinaryIO | None = None) -> tuple[int, str]:
    """(size, sha256) of everything read from `handle`, written to `sink` on the way when given."""
    sha, size = hashlib.sha256(), 0
    while chunk := handle.read(CHUNK):
        sha.update(chunk)
        size += len(chunk)
        if sink is not None:
            sink.write(chunk)
    return size, sha.hexdigest()


def _regular(path: Path) -> bool:
    try:
        return stat.S_ISREG(os.lstat(path).st_mode)
    except FileNotFoundError:
        return False


def memory_files(user: UserDir) -> Iterator[Path]:
    """The regular files of the user's memory in this run's own directory. Nothing here makes a
    link; one found is no part of the memory (never entered, never listed, so never copied)."""
    for parent, _, names in os.walk(user.workspace):  # a linked folder is listed, never entered
        yield from (path for name in names if _regular(path := Path(parent) / name))
    if user.sessions.is_dir():
        yield from (p for p in user.sessions.iterdir() if p.suffix == ".json" and _regular(p))
    if _regular(user.index_response):
        yield user.index_response


def build(user: UserDir) -> list[ManifestEntry]:
    entries = []
    for path in memory_files(user):
        with open(os.open(path, READ_FLAGS), "rb") as handle:
            size, sha256 = digest(handle)
        entries.append(ManifestEntry(path=path.relative_to(user.root).as_posix(), size=size, sha256=sha256))
    return sorted(entries, key=lambda entry: entry.path)
