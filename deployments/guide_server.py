"""The deployment guide's own Prefect server (deployments/README.md), so that nothing the guide does
lands on another server that happens to hold the port.

`port PREFERRED` prints PREFERRED when nothing holds it on 127.0.0.1, otherwise a free port the
kernel picks (and says so on stderr). `url PID PORT` waits until the process PID (the guide's
`prefect server start`) itself listens on 127.0.0.1:PORT and /api/health answers there, then prints
the API URL. If that process exits first (its port was taken after all) or the wait times out, it
prints nothing and exits 1 with one line: the guide assigns the empty result to PREFECT_API_URL,
so its later commands stop (ephemeral mode is off) instead of reaching another server."""

import argparse
import socket
import sys
import time

import httpx
import psutil

HOST = "127.0.0.1"
TIMEOUT_S = 120.0
PAUSE_S = 0.25


class NotTheGuidesServer(Exception):
    """The guide's server is not the one answering on its port; the message is one line."""


def pick_port(preferred: int) -> int:
    if _bindable(preferred):
        return preferred
    with socket.socket() as probe:
        probe.bind((HOST, 0))
        return probe.getsockname()[1]


def _bindable(port: int) -> bool:
    with socket.socket() as probe:
        # as Prefect's own check and uvicorn bind: a port left in TIME_WAIT by a stopped server is free
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((HOST, port))
        except OSError:
            return False
    return True


def own_server_url(pid: int, port: int, timeout_s: float = TIMEOUT_S) -> str:
    """The API URL once process `pid` (or a child of it) listens on the port and the API is healthy."""
    url = f"http://{HOST}:{port}/api"
    deadline = time.monotonic() + timeout_s
    with httpx.Client(timeout=2, trust_env=False) as client:
        while True:
            server = _running(pid)
            if server is None:
                raise NotTheGuidesServer(f"the guide's Prefect server (PID {pid}) exited before it answered "
                                         f"on port {port}: see its log (prefect-server.log)")
            # only its own listening socket proves that the answer below comes from this process
            if _listens(server, port) and _healthy(client, url):
                return url
            if time.monotonic() >= deadline:
                raise NotTheGuidesServer(f"the guide's Prefect server (PID {pid}) did not answer on port "
                                         f"{port} within {timeout_s:.0f} s: see its log (prefect-server.log)")
            try:  # a short pause that ends early when the server exits
                server.wait(timeout=PAUSE_S)
            except psutil.TimeoutExpired:
                pass


def _running(pid: int) -> psutil.Process | None:
    try:
        process = psutil.Process(pid)
        return None if process.status() == psutil.STATUS_ZOMBIE else process
    except psutil.NoSuchProcess:
        return None


def _listens(server: psutil.Process, port: int) -> bool:
    try:
        processes = [server, *server.children(recursive=True)]
        sockets = [c for p in processes for c in p.net_connections(kind="tcp4")]
    except (psutil.NoSuchProcess, psutil.AccessDenied):
        return False
    return any(c.status == psutil.CONN_LISTEN and c.laddr.port == port and c.laddr.ip in (HOST, "0.0.0.0")
               for c in sockets)


def _healthy(client: httpx.Client, url: str) -> bool:
    try:
        response = client.get(f"{url}/health")
    except httpx.HTTPError:
        return False
    return response.status_code == 200 and response.text.strip() == "true"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="guide_server.py", description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("port", help="the preferred port if free, else a free one").add_argument("preferred", type=int)
    url = commands.add_parser("url", help="the API URL once that process's server answers there")
    url.add_argument("pid", type=int)
    url.add_argument("port", type=int)
    args = parser.parse_args(argv)
    if args.command == "port":
        port = pick_port(args.preferred)
        if port != args.preferred:
            print(f"port {args.preferred} is taken: the guide's Prefect server uses port {port}", file=sys.stderr)
        print(port)
        return 0
    try:
        api_url = own_server_url(args.pid, args.port)
    except NotTheGuidesServer as refused:
        print(f"refused: {refused}; PREFECT_API_URL is now empty, so the next commands stop", file=sys.stderr)
        return 1
    print(f"the guide's Prefect server answers: dashboard http://{HOST}:{args.port}", file=sys.stderr)
    print(api_url)
    return 0


if __name__ == "__main__":
    sys.exit(main())
