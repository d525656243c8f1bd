"""Damaging copies of real run directories (issue 22): copy, snapshot, truncate, flip, link, and run
a command where the run folder is read-only even for root."""

import hashlib
import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

from conftest import ROOT

SENTINEL = "SENTINEL-outside-the-run-7f3a"


def copy_run(root: Path, target: Path) -> Path:
    """A private copy of a run directory (links kept as links)."""
    shutil.copytree(root, target, symlinks=True)
    return target


def snapshot(root: Path) -> dict[str, tuple]:
    """Every entry under `root`, never following a link: (kind, mode, content hash or link target)."""
    entries = {}
    for parent, folders, files in os.walk(root):
        for name in folders + files:
            path = Path(parent) / name
            info = os.lstat(path)
            if stat.S_ISLNK(info.st_mode):
                entries[str(path.relative_to(root))] = ("link", os.readlink(path))
            elif stat.S_ISREG(info.st_mode):
                entries[str(path.relative_to(root))] = ("file", stat.S_IMODE(info.st_mode),
                                                        hashlib.sha256(path.read_bytes()).hexdigest())
            else:
                entries[str(path.relative_to(root))] = ("dir", stat.S_IMODE(info.st_mode))
    return entries


def truncate(path: Path, keep: float = 0.5) -> None:
    data = path.read_bytes()
    path.write_bytes(data[: int(len(data) * keep)])


def flip_byte(path: Path, offset: int) -> None:
    data = bytearray(path.read_bytes())
    data[offset % len(data)] ^= 0xFF
    path.write_bytes(bytes(data))


def link_outside(path: Path, outside: Path, content: bytes) -> None:
    """Replace `path` (a file or folder) by a link to `outside`, which holds the sentinel content."""
    if path.is_dir() and not path.is_symlink():
        shutil.copytree(path, outside)
        shutil.rmtree(path)
        (outside / "sentinel.txt").write_text(SENTINEL)
    else:
        outside.parent.mkdir(parents=True, exist_ok=True)
        outside.write_bytes(content)
        path.unlink()
    path.symlink_to(outside, target_is_directory=outside.is_dir())


def cli(*args: str, env: dict | None = None, read_only: Path | None = None) -> subprocess.CompletedProcess:
    """`python flows/mobilemem.py ARGS` in its own process; with `read_only`, that folder is mounted
    read-only for the process (a private mount namespace: chmod does not stop root), or made
    read-only by mode when not root."""
    command = [sys.executable, str(ROOT / "flows" / "mobilemem.py"), *args]
    if read_only is not None and os.geteuid() == 0:
        script = 'mount --bind "$0" "$0" && mount -o remount,ro,bind "$0" && exec "$@"'
        command = ["unshare", "-m", "sh", "-c", script, str(read_only), *command]
    elif read_only is not None:
        for parent, folders, _ in os.walk(read_only):
            for name in [".", *folders]:
                os.chmod(Path(parent) / name, 0o555)
    try:
        return subprocess.run(command, capture_output=True, text=True, env=env or dict(os.environ), timeout=300)
    finally:
        if read_only is not None and os.geteuid() != 0:
            for parent, folders, _ in os.walk(read_only):
                for name in [".", *folders]:
                    os.chmod(Path(parent) / name, 0o755)


def no_traceback(result: subprocess.CompletedProcess) -> None:
    assert "Traceback" not in result.stderr and "Traceback" not in result.stdout, result.stderr[-3000:]
