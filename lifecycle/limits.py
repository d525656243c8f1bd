"""The run's limits (DESIGN §12), one interface for both kinds: `async with limits.query_slots:`.

A single-process run keeps `asyncio.Semaphore`s. A run spread over processes or machines takes
`GlobalSlots`: one slot of a Prefect global concurrency limit per entry, held by a lease the
client renews while the slot is held. The run's question and judgment limits are named after the
run (`create_run_limits`) and deleted at its end (`delete_run_limits`).

The endpoint limit (`config.endpoint_limit`) is a `mobilemem.transport.RequestGate` on the same
kind of slot, around every model request of a role: `mobilemem-endpoint-<endpoint_name>` when the
configuration names it (both roles then share it), else one per base URL (a hash of it: never a
key or any credential in the name). Endpoint limits are shared between evaluations: a run creates
one that is missing, refuses one of another size, and never deletes it.

Every slot is held by a task of its own (`_Lease`), so an entry's acquisition, lease renewal and
release never depend on the task that holds it: a slot taken where a request starts can be given
back where its stream is closed, and a holder that raises or is cancelled gives its slot back on
the way out. A process killed while holding slots gets them back when their lease expires on the
server: `LEASE_S` plus up to one loop of the server's repossessor service (which must be enabled;
bench/README.md states the figure measured).
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from types import TracebackType
from urllib.parse import urlsplit

from prefect.client.orchestration import get_client
from prefect.client.schemas.actions import GlobalConcurrencyLimitCreate
from prefect.concurrency.asyncio import concurrency
from prefect.exceptions import ObjectAlreadyExists, ObjectNotFound

from mobilemem.endpoints import Endpoint
from mobilemem.errors import ConfigError
from mobilemem.records import Config
from lifecycle.dashboard import RunIdentity

log = logging.getLogger(__name__)
LEASE_S = 60.0  # the server's minimum lease; renewed every 45 s while held
ENDPOINT_PREFIX = "mobilemem-endpoint-"


class _Lease:
    """One slot of the limit `name`, taken and held by a task of its own until `give_back`."""

    def __init__(self, name: str, lease_s: float) -> None:
        self._name = name
        self._lease_s = lease_s
        self._held = asyncio.Event()
        self._done = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    async def _hold(self) -> None:
        # a failed renewal leaves the holder running (the limit may be exceeded meanwhile) rather
        # than cancelling a question's work as if the run were interrupted
        async with concurrency(self._name, occupy=1, strict=True, lease_duration=self._lease_s,
                               raise_on_lease_renewal_failure=False):
            self._held.set()
            await self._done.wait()

    async def take(self) -> None:
        """Until the slot is held; a cancelled wait abandons the acquisition (Prefect gives back a
        slot granted meanwhile); a missing limit raises ConcurrencySlotAcquisitionError."""
        self._task = asyncio.get_running_loop().create_task(self._hold(), name=f"slot-{self._name}")
        held = asyncio.ensure_future(self._held.wait())
        try:
            await asyncio.wait((held, self._task), return_when=asyncio.FIRST_COMPLETED)
        except asyncio.CancelledError:
            self._task.cancel()
            raise
        finally:
            held.cancel()
        if not self._held.is_set():
            self._task.result()  # the acquisition's error

    async def give_back(self) -> None:
        """Release the slot and wait until the server has it back (the release survives a
        cancellation of this wait)."""
        self._done.set()
        if self._task is None:
            return
        try:
            await asyncio.shield(self._task)
        except Exception as exc:  # best effort: the lease expires on the server if the release failed
            log.warning("could not release a slot of %s: %s", self._name, exc)

    async def __aenter__(self) -> None:
        await self.take()

    async def __aexit__(self, *exc: object) -> None:
        await self.give_back()


class GlobalSlots:
    """`async with slots:` holds one slot of the Prefect global concurrency limit `name` (which
    must exist). One object serves every task of the process at once: each entry is its own lease,
    kept per task (entries nest), released on exit, on an exception and on cancellation."""

    def __init__(self, name: str, lease_s: float = LEASE_S) -> None:
        self.name = name
        self._lease_s = lease_s
        self._held: dict[asyncio.Task, list[_Lease]] = {}

    async def __aenter__(self) -> None:
        task = asyncio.current_task()
        assert task is not None
        lease = _Lease(self.name, self._lease_s)
        await lease.take()
        self._held.setdefault(task, []).append(lease)

    async def __aexit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                        tb: TracebackType | None) -> None:
        task = asyncio.current_task()
        assert task is not None
        leases = self._held[task]
        lease = leases.pop()
        if not leases:
            del self._held[task]
        await lease.give_back()


Slots = asyncio.Semaphore | GlobalSlots  # what `RunContext.query_slots` / `judge_slots` hold


@dataclass(frozen=True)
class EndpointGate:
    """A `mobilemem.transport.RequestGate`: every request holds one slot of the endpoint limit
    `name` from its start until its body is read or closed."""

    name: str
    lease_s: float = LEASE_S

    def __call__(self) -> AbstractAsyncContextManager[object]:
        return _Lease(self.name, self.lease_s)


@dataclass(frozen=True)
class RunLimits:
    """The names of a run's own limits (deleted at its end)."""

    questions: str  # query_concurrency: answer start to judgment end
    judgments: str  # judge_concurrency

    def slots(self) -> tuple[GlobalSlots, GlobalSlots]:
        """(query_slots, judge_slots) for the run's context."""
        return GlobalSlots(self.questions), GlobalSlots(self.judgments)


def run_limit_names(identity: RunIdentity) -> RunLimits:
    return RunLimits(questions=identity.key("questions"), judgments=identity.key("judgments"))


def run_limits(identity: RunIdentity, config: Config) -> tuple[GlobalSlots, GlobalSlots]:
    """(query_slots, judge_slots) of a process that runs some of the run's questions, on the limits
    the run's parent created (`create_run_limits`: their sizes are its `config`'s)."""
    return run_limit_names(identity).slots()


async def ensure_limit(name: str, size: int) -> None:
    """The global concurrency limit `name` of `size` slots, created if missing; one of another size
    is refused (ConfigError, one line)."""
    async with get_client() as client:
        try:
            await client.create_global_concurrency_limit(GlobalConcurrencyLimitCreate(name=name, limit=size))
            return
        except ObjectAlreadyExists:
            pass
        existing = await client.read_global_concurrency_limit_by_name(name)
    _refuse_another_size(name, existing.limit, size)


def _refuse_another_size(name: str, existing: int, size: int) -> None:
    if existing != size:
        raise ConfigError(f"the Prefect concurrency limit {name} exists with {existing} slots, "
                          f"this run asks for {size}: delete it or ask for {existing}")


def refuse_other_endpoint_limits(endpoints: list[Endpoint], config: Config) -> None:
    """Preflight (before anything is written): an endpoint limit that exists with another size."""
    if config.endpoint_limit is None:
        return
    with get_client(sync_client=True) as client:
        for name in sorted({endpoint_limit_name(e, config) for e in endpoints}):
            try:
                existing = client.read_global_concurrency_limit_by_name(name)
            except ObjectNotFound:
                continue
            _refuse_another_size(name, existing.limit, config.endpoint_limit)


async def create_run_limits(identity: RunIdentity, config: Config) -> RunLimits:
    """The run's question limit (query_concurrency) and judgment limit (judge_concurrency)."""
    names = run_limit_names(identity)
    await ensure_limit(names.questions, config.query_concurrency)
    await ensure_limit(names.judgments, config.judge_concurrency)
    return names


async def delete_run_limits(names: RunLimits) -> None:
    """Delete the run's own limits (one already gone is fine)."""
    async with get_client() as client:
        for name in (names.questions, names.judgments):
            try:
                await client.delete_global_concurrency_limit_by_name(name)
            except ObjectNotFound:
                pass


def endpoint_limit_name(endpoint: Endpoint, config: Config) -> str:
    """`mobilemem-endpoint-<endpoint_name>`, else from a hash of the endpoint's base URL (scheme
    and host lower-cased, no trailing slash: equal base URLs share one limit)."""
    if config.endpoint_name:
        return f"{ENDPOINT_PREFIX}{config.endpoint_name}"
    parts = urlsplit(endpoint.base_url.strip())
    normal = parts._replace(scheme=parts.scheme.lower(), netloc=parts.netloc.lower(),
                            path=parts.path.rstrip("/")).geturl()
    return f"{ENDPOINT_PREFIX}{hashlib.sha256(normal.encode()).hexdigest()[:16]}"


async def endpoint_gate(endpoint: Endpoint, config: Config) -> EndpointGate | None:
    """The gate of the endpoint's limit (created if missing, never deleted: other evaluations may
    share it), or None when no `endpoint_limit` is set."""
    if config.endpoint_limit is None:
        return None
    name = endpoint_limit_name(endpoint, config)
    await ensure_limit(name, config.endpoint_limit)
    return EndpointGate(name)
