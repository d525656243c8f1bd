"""The simulator's HTTP side: an OpenAI-compatible chat-completions server on 127.0.0.1.

Stdlib only (``ThreadingHTTPServer``, HTTP/1.1 keep-alive, chunked server-sent events for
streams). What to answer comes from ``policy``; which requests misbehave from ``faults``; the
log, rules in force and counters are ``state``.
Request headers (and so API keys) are never logged or stored; only the `http_401_echo` fault reads
the Authorization header, to quote it back in its error as some providers do.
"""

from __future__ import annotations

import json
import socket
import struct
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from . import faults as fault_rules
from . import policy
from .faults import FaultRule
from .state import LoggedRequest, Simulator
from .usage_rules import completion_payload, stream_events, wants_usage

MODEL_IDS = ("qwen3.8-max", "mobilemem-judge", "simulator")


class _Server(ThreadingHTTPServer):
    request_queue_size = 256
    daemon_threads = True
    simulator: Simulator

    def __init__(self, address: tuple[str, int]) -> None:
        super().__init__(address, _Handler)
        self.connections: set[socket.socket] = set()

    def process_request(self, request: Any, client_address: Any) -> None:
        self.connections.add(request)
        super().process_request(request, client_address)

    def shutdown_request(self, request: Any) -> None:
        self.connections.discard(request)
        super().shutdown_request(request)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server
    _entry: LoggedRequest | None = None

    def handle(self) -> None:
        try:
            super().handle()
        except (BrokenPipeError, ConnectionResetError):  # a client that gave up while we were busy
            self.close_connection = True

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
        """Silenced: the default access log would be the only place a request line leaks."""

    def do_GET(self) -> None:  # noqa: N802
        self.server.simulator.route("GET", self.path)
        if self.path.split("?")[0].rstrip("/") == "/v1/models":
            data = [{"id": m, "object": "model", "created": 0, "owned_by": "mobilemem-simulator"} for m in MODEL_IDS]
            self._json(200, {"object": "list", "data": data})
        else:
            self._error(404, f"no route for GET {self.path}", "not_found_error")

    def do_POST(self) -> None:  # noqa: N802
        self.server.simulator.route("POST", self.path)
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        if self.path.split("?")[0].rstrip("/") != "/v1/chat/completions":
            return self._error(404, f"no route for POST {self.path}", "not_found_error")
        try:
            body = json.loads(raw)
        except ValueError:
            body = None
        if not isinstance(body, dict):
            return self._error(400, "the request body is not a JSON object", "invalid_request_error")
        self._chat(body, raw.decode("utf-8", "replace"))

    def _chat(self, body: dict, raw_text: str) -> None:
        sim = self.server.simulator
        role, final = policy.classify(body)
        # the canonical dump too, in case a client escaped non-ASCII text in the raw body
        rule = sim.select_fault(role, raw_text, json.dumps(body, ensure_ascii=False))
        self._entry = entry = sim.begin(role, final, body, rule)
        try:
            if sim.on_started is not None:
                sim.on_started(entry)
            sim.pause(sim.latency_s)
            self._answer(entry, body, rule)
        except (BrokenPipeError, ConnectionResetError):  # the client gave up (e.g. its timeout)
            self.close_connection = True
        finally:
            self._settle()

    def _settle(self) -> None:
        """Close the log entry just before the last bytes go out: once a client holds a whole
        response, the log already shows its finish time, usage and in-flight count."""
        entry, self._entry = self._entry, None
        if entry is not None:
            self.server.simulator.end(entry)

    def _answer(self, entry: LoggedRequest, body: dict, rule: FaultRule | None) -> None:
        kind = rule.kind if rule else None
        if kind == "http_401_echo":  # like providers that quote the rejected key: tests the runner's scrubbing
            entry.status = 401
            key = (self.headers.get("Authorization") or "").removeprefix("Bearer ")
            return self._error(401, f"Incorrect API key provided: {key}", "invalid_request_error")
        if kind in ("http_500", "http_429"):
            entry.status = int(kind[5:])
            return self._error(entry.status, f"simulated fault {kind}", "server_error" if kind == "http_500"
                               else "rate_limit_error")
        if rule is not None and kind == "timeout":
            self.server.simulator.pause(rule.delay_s)
        try:
            completion = fault_rules.rewrite(kind, entry.role, body, policy.reply(entry.role, body), rule)
        except Exception as exc:  # a policy bug must reach the client as a 500, not a hang
            entry.status = 500
            return self._error(500, f"simulator policy failed: {type(exc).__name__}: {exc}", "server_error")
        entry.status = 200
        if kind != "malformed":
            entry.reply = {"content": completion.content, "tool_calls": [dict(c) for c in completion.tool_calls],
                           "finish_reason": completion.finish_reason}
        if body.get("stream") is True:
            self._stream(entry, body, completion, kind)
        else:
            self._whole(entry, body, completion, kind)

    def _whole(self, entry: LoggedRequest, body: dict, completion: policy.Completion, kind: str | None) -> None:
        data = json.dumps(completion_payload(entry.id, entry.started, body, completion), ensure_ascii=False).encode()
        if kind == "malformed":
            data = data[: len(data) // 2]
        self._head(200, "application/json", len(data))
        if kind == "reset":
            self.wfile.write(data[: len(data) // 2])
            return self._reset()
        if kind != "malformed":
            entry.usage = completion.usage
        self._settle()
        self.wfile.write(data)

    def _stream(self, entry: LoggedRequest, body: dict, completion: policy.Completion, kind: str | None) -> None:
        events = [json.dumps(e, ensure_ascii=False) for e in stream_events(entry.id, entry.started, body, completion)]
        if kind == "malformed":
            events[1] = events[1][: len(events[1]) // 2]
        self._head(200, "text/event-stream", None)
        frames = [f"data: {event}\n\n".encode() for event in events] + [b"data: [DONE]\n\n"]
        if kind == "malformed":  # one HTTP chunk: a client reads the broken line and the end together
            frames = [b"".join(frames)]
        for n, frame in enumerate(frames):
            if kind == "reset" and n == 2:
                return self._reset()
            if n == max(len(frames) - 2, 0):  # the last event (the usage chunk when asked for)
                entry.usage = completion.usage if kind != "malformed" and wants_usage(body) else None
                self._settle()
            self._write_chunk(frame)
        self._write_chunk(b"")

    def _head(self, status: int, content_type: str, length: int | None) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        if length is None:
            self.send_header("Transfer-Encoding", "chunked")
            self.send_header("Cache-Control", "no-cache")
        else:
            self.send_header("Content-Length", str(length))
        self.end_headers()

    def _write_chunk(self, data: bytes) -> None:
        self.wfile.write(f"{len(data):X}\r\n".encode() + data + b"\r\n")

    def _json(self, status: int, payload: dict) -> None:
        data = json.dumps(payload).encode()
        self._head(status, "application/json", len(data))
        self._settle()
        self.wfile.write(data)

    def _error(self, status: int, message: str, kind: str) -> None:
        self._json(status, {"error": {"message": message, "type": kind, "code": status}})

    def _reset(self) -> None:
        """Abort the connection with a TCP RST (SO_LINGER 0) instead of an orderly close."""
        self.close_connection = True
        self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        self.connection.close()


@contextmanager
def start_simulator(port: int = 0, faults: Sequence[FaultRule] = (), latency_s: float = 0.0, *,
                    host: str = "127.0.0.1", keep_log: bool = True) -> Iterator[Simulator]:
    """Serve the simulator in a background thread; on exit stop it and close every socket.

    `keep_log=False` keeps no request log in memory (for long runs; `on_finished` still sees each).
    """
    server = _Server((host, port))
    simulator = server.simulator = Simulator(server.server_address[:2], faults, latency_s)
    simulator.keep_log = keep_log
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05},
                              name="mobilemem-simulator", daemon=True)
    thread.start()
    try:
        yield simulator
    finally:
        simulator.stop()
        server.shutdown()
        thread.join()
        for connection in list(server.connections):
            try:
                connection.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        server.server_close()
