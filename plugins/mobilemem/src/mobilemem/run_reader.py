"""The one reader of run directories written earlier (`--reuse`, `rejudge`, `compare`, `summarize`,
`report`, `plan`): a run directory is input from strangers, copied, synced and edited by hand.

- Nothing under the run's root is followed through a symbolic link: every component between the
  root and the file is checked with `lstat`, and the file itself is opened with `O_NOFOLLOW`. The
  root is the one path the user named and may itself be a link.
- Every record is validated by its pydantic model; a file that is a link, unreadable, not valid
  JSON or not valid for its model is a `DamagedFile`, whose message is one line naming the file.
- A missing optional file is `None`; a damaged one is never silently read as missing: `maybe`
  raises, `tolerant` returns None and keeps the one-line message in `damaged` (the path relative
  to the root, so that a copied run reports the same) for the caller to report (the analysis
  commands) or to redo the item (reuse).
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO, TypeVar

from pydantic import BaseModel, ValidationError

from mobilemem.errors import MobilememError
from mobilemem.records import RunFile
from mobilemem.rundir import RunDir

R = TypeVar("R", bound=BaseModel)
LINK = "is a symbolic link: not followed"
MAX_RECORD_BYTES = 1 << 30  # no record of a run comes near it; a bigger file is not one of ours
# O_NONBLOCK: a FIFO planted in a run must not block its reader (no effect on a regular file's reads)
READ_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)


class NotARunDirectory(MobilememError):
    """The path names no run directory (missing, not a folder, or without run.json)."""


class DamagedFile(MobilememError):
    """A file of a run directory that cannot be trusted; the message names it, in one line."""

    def __init__(self, path: Path, why: str) -> None:
        self.path, self.why = path, why
        super().__init__(f"{path}: {why}")


def validation_summary(exc: ValidationError, model: type[BaseModel]) -> str:
    """One line of a pydantic error: a truncated or edited file named by what is wrong first."""
    first = exc.errors()[0]
    if first["type"] == "json_invalid":
        return f"not valid JSON (truncated or edited): {first['msg']}"
    where = ".".join(str(part) for part in first["loc"]) or "the record"
    return f"not a valid {model.__name__} ({where}: {first['msg']})"


@dataclass
class RunReader:
    """One run directory, read without trust. `open` reads and validates its run.json."""

    run: RunDir
    damaged: list[str] = field(default_factory=list)  # what `tolerant` and the walks skipped, one line each
    # (root-relative)
    plan: RunFile = field(init=False)

    @classmethod
    def open(cls, path: Path) -> RunReader:
        """Raises NotARunDirectory or DamagedFile (run.json), each one line."""
        root = Path(path)
        if not root.is_dir():
            raise NotARunDirectory(f"{root} is not a run directory (no such folder)")
        run = RunDir(root)
        try:
            lstat = os.lstat(run.run)
        except FileNotFoundError:
            raise NotARunDirectory(f"{root} is not a run directory (no run.json)") from None
        except OSError as exc:
            raise DamagedFile(run.run, f"cannot be read: {exc.strerror or exc}") from None
        if stat.S_ISLNK(lstat.st_mode):
            raise DamagedFile(run.run, LINK)
        reader = cls(run)
        reader.plan = reader.read(run.run, RunFile)
        return reader

    @property
    def root(self) -> Path:
        return self.run.root

    def confined(self, path: Path) -> Path:
        """`path` if every component from the root down to it is not a link; FileNotFoundError if
        a component is missing."""
        try:
            relative = Path(path).relative_to(self.root)
        except ValueError:
            raise DamagedFile(path, f"is outside the run directory {self.root}") from None
        current = self.root
        for part in relative.parts:
            if part in ("", ".", ".."):
                raise DamagedFile(path, "is not a plain path inside the run directory")
            current = current / part
            if stat.S_ISLNK(os.lstat(current).st_mode):
                raise DamagedFile(current, LINK)
        return current

    def open_file(self, path: Path) -> BinaryIO | None:
        """A regular file under the root, open for reading (no link followed on the way or at the
        end), or None when it does not exist. The caller closes it."""
        try:
            target = self.confined(path)
            fd = os.open(target, READ_FLAGS)
        except FileNotFoundError:
            return None
        except OSError as exc:
            why = LINK if exc.errno == errno.ELOOP else f"cannot be read: {exc.strerror or exc}"
            raise DamagedFile(path, why) from None
        handle = os.fdopen(fd, "rb")
        if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
            handle.close()
            raise DamagedFile(path, "is not a regular file")
        return handle

    def bytes_of(self, path: Path) -> bytes | None:
        """The bytes of a regular file under the root, or None when it does not exist."""
        handle = self.open_file(path)
        if handle is None:
            return None
        with handle:
            size = os.fstat(handle.fileno()).st_size
            if size > MAX_RECORD_BYTES:
                raise DamagedFile(path, f"is {size} bytes: too large to be a record")
            try:
                return handle.read()
            except OSError as exc:
                raise DamagedFile(path, f"cannot be read: {exc.strerror or exc}") from None

    def maybe(self, path: Path, model: type[R]) -> R | None:
        """The validated record, None when the file does not exist; DamagedFile otherwise."""
        data = self.bytes_of(path)
        if data is None:
            return None
        try:
            return model.model_validate_json(data)
        except ValidationError as exc:
            raise DamagedFile(path, validation_summary(exc, model)) from None

    def read(self, path: Path, model: type[R]) -> R:
        """The validated record; a missing file is DamagedFile too (the caller needs it)."""
        record = self.maybe(path, model)
        if record is None:
            raise DamagedFile(path, "is missing")
        return record

    def tolerant(self, path: Path, model: type[R]) -> R | None:
        """The validated record, or None when it is missing or damaged (the damage is kept in
        `damaged`, once per file)."""
        try:
            return self.maybe(path, model)
        except DamagedFile as exc:
            self.note(exc)
            return None

    def note(self, damage: DamagedFile) -> None:
        """Keep one line of damage (once per file), its path relative to the root."""
        try:
            where = damage.path.relative_to(self.root).as_posix()
        except ValueError:
            where = str(damage.path)
        line = f"{where}: {damage.why}"
        if line not in self.damaged:
            self.damaged.append(line)

    def lines(self, path: Path, model: type[R], tolerant: bool = False) -> list[R]:
        """Every line of a JSONL file, validated; [] when it does not exist. A damaged line is a
        DamagedFile naming the file and the line, or with `tolerant`, left out and kept in `damaged`
        (a damaged file as a whole too)."""
        try:
            data = self.bytes_of(path)
        except DamagedFile as exc:
            if not tolerant:
                raise
            self.note(exc)
            return []
        records = []
        for number, line in enumerate((data or b"").splitlines(), start=1):
            if not line.strip():
                continue
            try:
                records.append(model.model_validate_json(line))
            except ValidationError as exc:
                damage = DamagedFile(path, f"line {number}: {validation_summary(exc, model)}")
                if not tolerant:
                    raise damage from None
                self.note(damage)
        return records

    def files(self, folder: Path, suffix: str = "") -> Iterator[Path]:
        """The regular files directly in `folder` (sorted; none when it does not exist); a link in
        it is skipped and kept in `damaged`."""
        try:
            self.confined(folder)
            entries = sorted(os.scandir(folder), key=lambda e: e.name)
        except (FileNotFoundError, NotADirectoryError):
            return
        except DamagedFile as exc:
            self.note(exc)
            return
        for entry in entries:
            if not entry.name.endswith(suffix):
                continue
            if entry.is_symlink():
                self.note(DamagedFile(Path(entry.path), LINK))
            elif entry.is_file(follow_symlinks=False):
                yield Path(entry.path)

    def tree(self, folder: Path) -> Iterator[Path]:
        """Every regular file under `folder`, recursively and sorted; links (to files or folders)
        are skipped and kept in `damaged`, never followed."""
        try:
            self.confined(folder)
        except FileNotFoundError:
            return
        except DamagedFile as exc:
            self.note(exc)
            return
        for parent, folders, names in os.walk(folder):
            base = Path(parent)
            for name in sorted(folders):
                if (base / name).is_symlink():
                    self.note(DamagedFile(base / name, LINK))
                    folders.remove(name)
            folders.sort()
            for name in sorted(names):
                path = base / name
                if path.is_symlink():
                    self.note(DamagedFile(path, LINK))
                elif path.is_file():
                    yield path
