"""What deployments/distributed.sh asks Python for: free ports, the Prefect server's settings, and the
waits for its server and its workers.

`ports N` prints N free TCP ports on 127.0.0.1. `settings` prints the server's settings as `export`
lines (SERVER_SETTINGS). `server PID PORT` waits until process PID listens on PORT and its API is
healthy, then prints the API URL. `workers API POOL PID=NAME...` waits until every named worker of
the pool is ONLINE on the server. A wait that fails (a process exited, the time ran out) prints one
line on stderr and exits 1."""

import argparse
import shlex
import socket
import sys
import time
from pathlib import Path

import httpx
import psutil

import guide_server

SERVER_TIMEOUT_S = 180.0
WORKERS_TIMEOUT_S = 120.0
PAUSE_S = 0.25


def server_settings() -> dict[str, str]:
    """The embedded server's tuned list, with the services a server that runs deployments and global
    concurrency limits needs turned back on (deployments/README.md, "One evaluation on many machines"):
    the repossessor returns the slots of a killed holder when its lease expires, cancellation cleanup
    cancels the user runs of a cancelled parent, the foreman marks silent workers offline, late runs
    and the cleanup reconciler keep the workers' bookkeeping. The slot wait caps the Retry-After a
    waiter on a full limit is told (30 s by default: a freed slot would sit idle that long)."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the checkout's cli/
    from cli.console import EMBEDDED_SERVER_SETTINGS

    settings = dict(EMBEDDED_SERVER_SETTINGS)
    for service in ("REPOSSESSOR", "CANCELLATION_CLEANUP", "FOREMAN", "LATE_RUNS", "CLEANUP_RECONCILER"):
        settings[f"PREFECT_SERVER_SERVICES_{service}_ENABLED"] = "true"
    settings.update({
        "PREFECT_SERVER_CONCURRENCY_LEASE_STORAGE": "prefect.server.concurrency.lease_storage.memory",
        "PREFECT_SERVER_CONCURRENCY_MAXIMUM_CONCURRENCY_SLOT_WAIT_SECONDS": "0.2",
        # `prefect deployment run --watch` prints the run's log lines as they come
        "PREFECT_SERVER_LOGS_STREAM_OUT_ENABLED": "true",
        "PREFECT_SERVER_LOGS_STREAM_PUBLISHING_ENABLED": "true",
    })
    return settings


def free_ports(count: int) -> list[int]:
    sockets = []
    try:
        for _ in range(count):  # all held at once, so they differ
            sock = socket.socket()
            sock.bind((guide_server.HOST, 0))
            sockets.append(sock)
        return [sock.getsockname()[1] for sock in sockets]
    finally:
        for sock in sockets:
            sock.close()


def wait_for_workers(api: str, pool: str, workers: dict[int, str], timeout_s: float = WORKERS_TIMEOUT_S) -> None:
    """Returns once every worker (PID → name) is ONLINE in the pool; raises RuntimeError in one line
    when one of the processes exits first or the time runs out."""
    deadline = time.monotonic() + timeout_s
    with httpx.Client(timeout=10, trust_env=False) as client:
        while True:
            for pid, name in workers.items():
                if not _alive(pid):
                    raise RuntimeError(f"worker {name} (PID {pid}) exited before it came online")
            online = _online(client, api, pool)
            if online >= set(workers.values()):
                return
            if time.monotonic() >= deadline:
                missing = ", ".join(sorted(set(workers.values()) - online))
                raise RuntimeError(f"workers not online in pool {pool} within {timeout_s:.0f} s: {missing}")
            time.sleep(PAUSE_S)


def _online(client: httpx.Client, api: str, pool: str) -> set[str]:
    try:
        response = client.post(f"{api}/work_pools/{pool}/workers/filter", json={})
    except httpx.HTTPError:
        return set()
    if response.status_code != 200:
        return set()
    return {worker["name"] for worker in response.json() if worker.get("status") == "ONLINE"}


def _alive(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def _parse_workers(pairs: list[str]) -> dict[int, str]:
    workers = {}
    for pair in pairs:
        pid, _, name = pair.partition("=")
        workers[int(pid)] = name
    return workers


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="distributed_probe.py", description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("ports").add_argument("count", type=int)
    commands.add_parser("settings")
    server = commands.add_parser("server")
    server.add_argument("pid", type=int)
    server.add_argument("port", type=int)
    workers = commands.add_parser("workers")
    workers.add_argument("api")
    workers.add_argument("pool")
    workers.add_argument("workers", nargs="+", metavar="PID=NAME")
    args = parser.parse_args(argv)
    try:
        if args.command == "ports":
            print(" ".join(map(str, free_ports(args.count))))
        elif args.command == "settings":
            print("\n".join(f"export {name}={shlex.quote(value)}" for name, value in server_settings().items()))
        elif args.command == "server":
            print(guide_server.own_server_url(args.pid, args.port, SERVER_TIMEOUT_S))
        else:
            wait_for_workers(args.api, args.pool, _parse_workers(args.workers))
    except (guide_server.NotTheGuidesServer, RuntimeError) as failed:
        message = str(failed).replace("the guide's Prefect server", "the Prefect server")
        print(message.replace(": see its log (prefect-server.log)", ""), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
