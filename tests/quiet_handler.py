"""The base of the test endpoints' HTTP handlers (real servers on 127.0.0.1): keep-alive, and no
access log on the test's stderr."""

from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class QuietHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: ThreadingHTTPServer

    def log_message(self, format: str, *args) -> None:  # noqa: A002
        pass
