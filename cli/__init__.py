"""The command line of mobilemem-bench, one module per command, each `main(argv) -> int`:

    python flows/mobilemem.py [run] --dataset PATH --output PATH [options]   (cli.run)
    python flows/mobilemem.py summarize RUN_DIR                        (cli.summarize)
    python flows/mobilemem.py plan --dataset PATH [options]            (cli.plan)
    python flows/mobilemem.py rejudge EARLIER_RUN --output PATH        (cli.rejudge)
    python flows/mobilemem.py report RUN_DIR                           (cli.report)
    python flows/mobilemem.py compare RUN_A RUN_B [--out DIR]          (cli.compare)

`run` is the default: without a command name the arguments are the run's. `--help` lists the
commands (`COMMANDS`, one line each), then the run's flags. `python -m cli` and
`python -m flows.mobilemem` are the same. A command is imported only when it is
the one asked for, and none loads Prefect, ReMe or the model client before a run has passed its
preflight (`cli.run_flow` is the first module that does; tests/test_startup_imports.py). Exit
codes: cli.exit_codes; the console and signals of a run: cli.console, cli.signals.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from importlib import import_module

COMMANDS = {  # name -> its one line in `--help`
    "run": "--dataset PATH --output PATH: evaluate the candidate (the default command: `run` may be left out)",
    "summarize": "RUN_DIR: recompute summary.json and results.jsonl from the run's other files",
    "plan": "--dataset PATH: preflight, then the requests, tokens and (with prices) cost of a run; sends nothing",
    "rejudge": "EARLIER_RUN --output PATH: a new run judging an earlier run's answers again",
    "report": "RUN_DIR: write report.html again",
    "compare": "RUN_A RUN_B [--out DIR]: compare two runs of one dataset, question by question",
}


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] and argv[0] in COMMANDS:
        return import_module(f"cli.{argv[0]}").main(argv[1:])
    return import_module("cli.run").main(argv)
