"""``python -m mobilemem.simulator --port 8765 [--host 127.0.0.1] [--latency 0.2] [--log FILE]``.

Serves until SIGINT or SIGTERM (exit status 0 on either). ``--log`` appends one JSON line per
finished chat request: ids, role, fault, status, times and usage, never bodies or headers.
"""

from __future__ import annotations

import argparse
import json
import signal
import threading
from pathlib import Path

from .server import LoggedRequest, start_simulator


def _log_writer(path: Path):
    lock = threading.Lock()

    def write(entry: LoggedRequest) -> None:
        line = {"id": entry.id, "role": entry.role, "final": entry.final, "fault": entry.fault,
                "status": entry.status, "started": entry.started, "finished": entry.finished,
                "usage": entry.usage}
        with lock, path.open("a", encoding="utf-8") as out:
            out.write(json.dumps(line) + "\n")

    return write


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m mobilemem.simulator", description=__doc__.split("\n")[0])
    parser.add_argument("--port", type=int, default=8765, help="port to listen on (0 = any free port)")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--latency", type=float, default=0.0, help="seconds every request waits before replying")
    parser.add_argument("--log", type=Path, help="append one JSON line per finished request to this file")
    args = parser.parse_args(argv)
    stop = threading.Event()
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, lambda *_: stop.set())
    with start_simulator(args.port, latency_s=args.latency, host=args.host, keep_log=False) as sim:
        if args.log is not None:
            sim.on_finished = _log_writer(args.log)
        print(f"simulator listening on {sim.base_url}", flush=True)
        while not stop.wait(0.2):
            pass
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
