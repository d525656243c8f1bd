"""The commands' argument parser: a usage error is one line on stderr and exit status 1 (2 means
a cleanup error here, DESIGN §8), never argparse's usage block and status 2."""

from __future__ import annotations

import argparse
import sys
from typing import NoReturn


class CommandParser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        print(f"mobilemem: {self.prog.removeprefix('python ')}: {message} (see --help)", file=sys.stderr)
        raise SystemExit(1)
