"""The commands' arguments: a usage error is one line on stderr and exit status 1 (2 means a cleanup
error here, DESIGN §8), never argparse's usage block and status 2; the argument types they share; and
the one-line refusal of a command that reads a run directory."""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import NoReturn

from mobilemem.rundir import RunDir


class CommandParser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        print(f"mobilemem: {self.prog.removeprefix('python ')}: {message} (see --help)", file=sys.stderr)
        raise SystemExit(1)


def user_ids(text: str) -> list[int]:
    try:
        return [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"--users takes comma-separated integer user ids, got {text!r}") from None


def positive(text: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number >= 1, got {text!r}")
    return int(text)


def endpoint_key(text: str) -> str:
    if not re.fullmatch(r"[A-Za-z0-9_-]{1,64}", text):
        raise argparse.ArgumentTypeError(f"--endpoint-key takes 1-64 letters, digits, '_' or '-', got {text!r}")
    return text


def run_dir_argument(argv: Sequence[str], command: str, description: str) -> Path | None:
    """The RUN_DIR of `python flows/mobilemem.py COMMAND RUN_DIR`, or None (said in one line) when
    it holds no run.json."""
    parser = CommandParser(prog=f"python flows/mobilemem.py {command}", description=description)
    parser.add_argument("run_dir", type=Path)
    run_dir = parser.parse_args(argv).run_dir
    if not RunDir(run_dir).is_run():
        print(f"mobilemem: {run_dir} is not a run directory (no run.json)", file=sys.stderr)
        return None
    return run_dir


def refuse(command: str, exc: Exception, target: Path) -> int:
    """Say in one line why COMMAND stopped (a damaged input names its file; a failed write names the
    folder it could not write into) and return its exit status, 1."""
    why = f"cannot write into {target}: {exc.strerror or exc}" if isinstance(exc, OSError) else str(exc)
    print(f"mobilemem: {command}: {why}", file=sys.stderr)
    return 1
