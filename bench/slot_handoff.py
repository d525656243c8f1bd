"""The cost of a slot hand-off (issue 25): from one holder's release to the next waiter's entry.

    python bench/slot_handoff.py [--handoffs 20] [--hold 0.3] [--db sqlite|postgres]
                                 [--slot-wait S] [--lease-expiry] [--json FILE]

One limit of one slot and `--handoffs + 1` holders queued on it in one process, each holding it
`--hold` s (a question's answer and judgment, shortened): the gap between a holder leaving its
`async with` and the next one's body starting, for an `asyncio.Semaphore(1)` and for
`lifecycle.limits.GlobalSlots` on a Prefect server in its own process (the embedded server's
settings, on SQLite or on a PostgreSQL of its own), median and p90. A waiter polls the server: it
is answered 423 with a Retry-After derived from the limit's average occupancy, capped by the
server's PREFECT_SERVER_CONCURRENCY_MAXIMUM_CONCURRENCY_SLOT_WAIT_SECONDS (`--slot-wait`; default 30).

`--lease-expiry`: a child process takes the slot and is killed with SIGKILL while holding it; the
time until the server has the slot back (its lease, 60 s, plus up to one loop of the repossessor,
which this server runs) and until a waiter gets it.

The measurements run in a child process that has PREFECT_API_URL in its environment from the start
(Prefect reads its settings at import).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import statistics
import subprocess
import sys
import time
import uuid
from pathlib import Path

from harness import ROOT, Processes

REPOSSESSOR = {"PREFECT_SERVER_SERVICES_REPOSSESSOR_ENABLED": "true"}  # distributed mode needs it
_HOLD_FOREVER = """
import asyncio, sys
from lifecycle.limits import GlobalSlots
async def hold():
    async with GlobalSlots(sys.argv[1]):
        print("held", flush=True)
        await asyncio.Event().wait()
asyncio.run(hold())
"""


async def handoff_gaps(slots, count: int, hold_s: float) -> list[float]:
    """Seconds from each holder's release to the next holder's entry, on a limit of one slot."""
    left: list[float] = []
    entered: list[float] = []

    async def holder() -> None:
        async with slots:
            entered.append(time.perf_counter())
            await asyncio.sleep(hold_s)
            left.append(time.perf_counter())

    await asyncio.gather(*(holder() for _ in range(count + 1)))
    return [entry - release for release, entry in zip(left, entered[1:])]


async def lease_expiry(name: str, env: dict[str, str]) -> dict[str, float]:
    """A child takes the slot and is killed -9: seconds until the server has it back (its
    active_slots, read every 0.25 s) and until a waiter here holds it."""
    from prefect.client.orchestration import get_client

    from lifecycle.limits import GlobalSlots

    child = subprocess.Popen([sys.executable, "-c", _HOLD_FOREVER, name], cwd=ROOT, env=env, stdout=subprocess.PIPE,
                             start_new_session=True, text=True)
    try:
        line = await asyncio.to_thread(child.stdout.readline)
        if line.strip() != "held":
            raise SystemExit(f"the holding child said {line!r} (exit {child.poll()})")
        os.killpg(child.pid, signal.SIGKILL)
        killed = time.perf_counter()
    finally:
        if child.poll() is None:
            os.killpg(child.pid, signal.SIGKILL)
        child.wait()

    async def entry() -> float:
        async with GlobalSlots(name):
            return time.perf_counter() - killed

    waiter = asyncio.create_task(entry())
    async with get_client() as client:
        while (await client.read_global_concurrency_limit_by_name(name)).active_slots and not waiter.done():
            await asyncio.sleep(0.25)
    reclaimed = time.perf_counter() - killed
    return {"reclaimed_s": reclaimed, "waiter_entered_s": await waiter}


async def measure(args: argparse.Namespace, env: dict[str, str]) -> dict:
    from prefect.client.orchestration import get_client

    from lifecycle.limits import GlobalSlots, ensure_limit

    name = f"bench-handoff-{uuid.uuid4().hex[:8]}"
    await ensure_limit(name, 1)
    try:
        semaphore = await handoff_gaps(asyncio.Semaphore(1), args.handoffs, args.hold)
        global_slots = await handoff_gaps(GlobalSlots(name), args.handoffs, args.hold)
        expiry = await lease_expiry(name, env) if args.lease_expiry else None
    finally:
        async with get_client() as client:
            await client.delete_global_concurrency_limit_by_name(name)
    return {"semaphore_s": semaphore, "global_slots_s": global_slots, "lease_expiry": expiry}


def quantiles(gaps: list[float]) -> dict[str, float]:
    ordered = sorted(gaps)
    return {"median_ms": 1000 * statistics.median(ordered),
            "p90_ms": 1000 * ordered[min(len(ordered) - 1, round(0.9 * (len(ordered) - 1)))],
            "max_ms": 1000 * ordered[-1], "count": len(ordered)}


def report(figures: dict) -> str:
    lines = [f"slot hand-off, one slot, {figures['handoffs']} hand-offs after {figures['hold_s']:g} s holds, "
             f"Prefect server on {figures['db']} (slot wait cap {figures['slot_wait']}):"]
    for kind in ("semaphore", "global_slots"):
        q = figures[kind]
        lines.append(f"  {kind:13} median {q['median_ms']:9.2f} ms   p90 {q['p90_ms']:9.2f} ms   "
                     f"max {q['max_ms']:9.2f} ms")
    if expiry := figures["lease_expiry"]:
        lines.append(f"  killed holder: slot back on the server after {expiry['reclaimed_s']:.1f} s, "
                     f"a waiter in after {expiry['waiter_entered_s']:.1f} s (lease 60 s + the repossessor's loop)")
    return "\n".join(lines)


def _child(args: argparse.Namespace) -> int:
    raw = asyncio.run(measure(args, dict(os.environ)))
    print(json.dumps(raw))
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--handoffs", type=int, default=20)
    parser.add_argument("--hold", type=float, default=0.3, help="seconds each holder keeps the slot")
    parser.add_argument("--db", choices=("sqlite", "postgres"), default="sqlite")
    parser.add_argument("--slot-wait", type=float, help="the server's maximum Retry-After for a slot (default 30)")
    parser.add_argument("--lease-expiry", action="store_true", help="also measure a killed holder (about 75 s)")
    parser.add_argument("--json", type=Path, help="also write the figures here")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        return _child(args)
    settings = {**REPOSSESSOR}
    if args.slot_wait is not None:
        settings["PREFECT_SERVER_CONCURRENCY_MAXIMUM_CONCURRENCY_SLOT_WAIT_SECONDS"] = f"{args.slot_wait:g}"
    processes = Processes()
    try:
        url = processes.postgres()[0] if args.db == "postgres" else None
        _, api = processes.prefect_server(url, settings)
        env = {**os.environ, "PREFECT_API_URL": api, "PREFECT_HOME": str(processes.home / "client"),
               "PREFECT_LOGGING_LEVEL": "WARNING",
               "PYTHONPATH": os.pathsep.join([str(ROOT), str(ROOT / "plugins" / "mobilemem" / "src"),
                                              str(ROOT / "plugins" / "mobilemem-judge" / "src")])}
        command = [sys.executable, __file__, "--child", "--handoffs", str(args.handoffs), "--hold", str(args.hold),
                   *(["--lease-expiry"] if args.lease_expiry else [])]
        done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=1800)
    finally:
        processes.close()
    if done.returncode != 0:
        raise SystemExit(f"the measuring process failed:\n{done.stderr[-3000:]}")
    raw = json.loads(done.stdout.strip().splitlines()[-1])
    figures = {"db": args.db, "handoffs": args.handoffs, "hold_s": args.hold,
               "slot_wait": f"{args.slot_wait:g} s" if args.slot_wait is not None else "30 s (default)",
               "semaphore": quantiles(raw["semaphore_s"]), "global_slots": quantiles(raw["global_slots_s"]),
               "lease_expiry": raw["lease_expiry"]}
    print(report(figures))
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
