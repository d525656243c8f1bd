"""A test-only OpenAI-compatible endpoint that dies or freezes in its first streamed reply, as its own
process, and the client that calls it, as another one.

    python tests/dying_endpoint.py serve --signal KILL|STOP --at first_event|end
    python tests/dying_endpoint.py ask BASE_URL --requests N --timeout S

`serve` prints `listening BASE_URL`, answers like the simulator (its pure policy, streamed in HTTP
chunks on a keep-alive connection) and, in the first reply, sends itself the signal at the chosen
point: `first_event`, after the reply's first event (the client is reading the body); `end`, after
the whole body, `[DONE]` and the closing chunk (the client is finishing the reply and the openai SDK
drains what follows `[DONE]`). SIGKILL is an endpoint that died, SIGSTOP one that froze with its
connections open; the process signals itself, so the moment is exact.

`ask` makes N chat requests in a row through the runner's chat model (`build_chat_model`: AgentScope,
the openai SDK, the recording transport) with a read timeout of S seconds, and prints one JSON line
per request: the failure category of its observed request (null when it succeeded), its wall time
and the CPU time the process used meanwhile. It runs in a process of its own so that a caller can
bound it: a loop that never awaits stops the event loop, and with it every timeout inside.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import sys
import threading
import time
from http.server import ThreadingHTTPServer

from mobilemem.simulator import policy
from quiet_handler import QuietHandler
from mobilemem.simulator.usage_rules import stream_events

SIGNALS = {"KILL": signal.SIGKILL, "STOP": signal.SIGSTOP}
POINTS = ("first_event", "end")


class _Handler(QuietHandler):

    def do_POST(self) -> None:  # noqa: N802
        if self.server.signalled.is_set():  # type: ignore[attr-defined]
            self._halt()
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)))
        role, _ = policy.classify(body)
        events = stream_events(1, time.time(), body, policy.reply(role, body))
        frames = [f"data: {json.dumps(e)}\n\n".encode() for e in events] + [b"data: [DONE]\n\n"]
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        self._chunk(frames[0])
        if self.server.at == "first_event":  # type: ignore[attr-defined]
            self._signal()
        for frame in frames[1:]:
            self._chunk(frame)
        self._chunk(b"")
        self._signal()

    def _chunk(self, data: bytes) -> None:
        self.wfile.write(f"{len(data):X}\r\n".encode() + data + b"\r\n")
        self.wfile.flush()

    def _signal(self) -> None:
        if not self.server.signalled.is_set():  # type: ignore[attr-defined]
            self.server.signalled.set()  # type: ignore[attr-defined]
            os.kill(os.getpid(), self.server.signum)  # type: ignore[attr-defined]
        self._halt()

    def _halt(self) -> None:
        """Send nothing more: the signal reaches every thread of the process a moment later."""
        threading.Event().wait()


def serve(signum: int, at: str) -> None:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    server.daemon_threads = True
    server.signum, server.at, server.signalled = signum, at, threading.Event()  # type: ignore[attr-defined]
    host, port = server.server_address[:2]
    print(f"listening http://{host}:{port}/v1", flush=True)
    server.serve_forever()


async def ask(base_url: str, requests: int, timeout_s: float) -> None:
    # imported here: the endpoint starts in a fraction of the time without AgentScope
    from mobilemem import usage
    from mobilemem.config import load_config
    from mobilemem.models import Endpoint, build_chat_model, close_chat_model
    from model_calls import complete  # beside this file

    config = load_config()
    preset = config.candidate.model_copy(update={"request_timeout_s": timeout_s})
    model = build_chat_model(Endpoint.simulated("candidate", config, base_url), preset)
    try:
        for _ in range(requests):
            wall, cpu = time.monotonic(), time.process_time()
            with usage.scope() as scope:
                try:
                    await complete(model, "what colour was the umbrella?")
                except Exception:  # noqa: BLE001 - the observed request says what failed
                    pass
            print(json.dumps({"failure": usage.failure_category(scope.requests), "requests": len(scope.requests),
                              "wall_s": time.monotonic() - wall, "cpu_s": time.process_time() - cpu}), flush=True)
    finally:
        await close_chat_model(model)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    served = commands.add_parser("serve")
    served.add_argument("--signal", choices=sorted(SIGNALS), required=True)
    served.add_argument("--at", choices=POINTS, required=True)
    asked = commands.add_parser("ask")
    asked.add_argument("base_url")
    asked.add_argument("--requests", type=int, default=1)
    asked.add_argument("--timeout", type=float, required=True)
    args = parser.parse_args(argv)
    if args.command == "serve":
        serve(SIGNALS[args.signal], args.at)
    else:
        asyncio.run(ask(args.base_url, args.requests, args.timeout))


if __name__ == "__main__":
    sys.exit(main())
