"""Copying out of an earlier run (`--reuse`) into this one: only regular files inside the earlier
run, opened through `RunReader` (no link followed on the way or at the end). A hard link is made
only where asked (files nothing rewrites in place) and kept only when it is the very file that was
opened, checked by device and inode; anything else is a copy of the bytes read."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TypeVar

from pydantic import BaseModel, ValidationError

from mobilemem.memory_manifest import digest
from mobilemem.run_reader import MAX_RECORD_BYTES, DamagedFile, RunReader, validation_summary
from mobilemem.rundir import write_bytes_atomic

R = TypeVar("R", bound=BaseModel)


def _linked(source: Path, target: Path, opened: os.stat_result) -> bool:
    """A hard link of `source` at `target`, kept only when it is the very file that was opened."""
    try:
        os.link(source, target, follow_symlinks=False)
    except OSError:  # another file system, or no hard links: a copy
        return False
    placed = os.lstat(target)
    if (placed.st_dev, placed.st_ino) == (opened.st_dev, opened.st_ino):
        return True
    target.unlink()
    return False


def copy_file(reader: RunReader, source: Path, target: Path, link: bool, size: int | None = None) -> str:
    """Copy one regular file of the earlier run; the sha256 of what landed at `target`. DamagedFile
    when it is missing, a link, not a regular file, or not of `size` bytes."""
    handle = reader.open_file(source)
    if handle is None:
        raise DamagedFile(source, "is missing")
    with handle:
        opened = os.fstat(handle.fileno())
        if size is not None and opened.st_size != size:
            raise DamagedFile(source, f"is {opened.st_size} bytes, its manifest says {size}")
        target.parent.mkdir(parents=True, exist_ok=True)
        if link and _linked(source, target, opened):
            return digest(handle)[1]
        with open(target, "xb") as sink:
            return digest(handle, sink)[1]


def copy_record(reader: RunReader, source: Path, target: Path, model: type[R]) -> R:
    """Copy one record of the earlier run, validated as it is copied (a hard link of the very bytes
    validated, else a copy of them); DamagedFile when it is missing or damaged."""
    handle = reader.open_file(source)
    if handle is None:
        raise DamagedFile(source, "is missing")
    with handle:
        data = handle.read(MAX_RECORD_BYTES + 1)
        try:
            record = model.model_validate_json(data)
        except ValidationError as exc:
            raise DamagedFile(source, validation_summary(exc, model)) from None
        target.parent.mkdir(parents=True, exist_ok=True)
        if not _linked(source, target, os.fstat(handle.fileno())):
            write_bytes_atomic(target, data)
    return record
