"""The plan of a run: everything that can refuse it, checked before any model request or file write,
without Prefect, ReMe or the model client (a refused start, and `plan`, load none of them; opening the
run on Prefect is `lifecycle.run_setup`'s).

`preflight` refuses to start (ConfigError / DatasetError) or returns the `Plan`, and claims the run
directory last; `configured`, `selected` and `revision_status` are its configuration and dataset steps
(`plan` runs them alone). The command line hands its plan over to the flow it starts (`hand_over`, `planned`).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import mobilemem_judge
from mobilemem import dataset_manifest
from mobilemem.candidates import plugin
from mobilemem.config import load_config
from mobilemem.records import Config, RevisionStatus, RunFile, RunRequest
from mobilemem.dataset import Dataset, load_dataset
from mobilemem.dataset_identity import DatasetIdentity, first_difference
from mobilemem.endpoints import Endpoint
from mobilemem.errors import ConfigError
from mobilemem.reuse import EarlierRun
from mobilemem.rundir import RunDir
from mobilemem.run_reader import DamagedFile, NotARunDirectory, RunReader
from lifecycle.server_checks import check_workers, external_server

_PREFLIGHTED: dict[RunRequest, Plan] = {}  # per request, until the flow takes it (`planned`)


@dataclass(frozen=True)
class Plan:
    request: RunRequest
    config: Config
    dataset: Dataset
    run: RunDir
    simulate: bool
    candidate: Endpoint | None  # None when simulated: the simulator's address is known only later
    judge: Endpoint | None
    reuse: list[EarlierRun]
    rejudge: bool = False  # reuse every memory and answer, judge again, ask the candidate nothing
    revision_status: RevisionStatus = "declared"  # "verified": the folder matched its mobilemem-manifest.json


def _earlier_runs(paths: list[Path], output: Path, run: RunDir, label: str) -> list[EarlierRun]:
    """Each `--reuse` run opened (run.json read and validated), or a one-line refusal: no run
    directory, a damaged run.json, or an --output (or its run directory) inside or equal to it:
    an earlier run is never written to."""
    earlier = []
    for path in paths:
        source = EarlierRun.open(Path(path), label)
        home = source.run.root.resolve()
        for target in (Path(output), run.root):
            resolved = target.resolve()
            if resolved == home or home in resolved.parents:
                raise ConfigError(f"{label} {path}: --output {output} would write inside that run ({resolved}): "
                                  f"an earlier run is never changed, choose an --output outside it")
        earlier.append(source)
    return earlier


def _rejudged_plan(earlier: Path) -> RunFile:
    try:
        return RunReader.open(earlier).plan
    except (NotARunDirectory, DamagedFile) as exc:
        raise ConfigError(f"rejudge {earlier}: {exc}") from None


def _refuse_another_dataset(earlier: Path, plan: RunFile, dataset: Dataset) -> None:
    """A rejudge compares labels: on another dataset (a gold answer or one image edited, say) a flip
    would be the data's, not the judge's."""
    difference = first_difference(DatasetIdentity.of_run(plan, str(earlier)), dataset.identity(), users=plan.users)
    if difference is not None:
        raise ConfigError(f"rejudge {earlier}: {difference}")


def overrides(request: RunRequest) -> dict[str, Any]:
    """The flags of the request that override the configuration (defaults < --config < flags)."""
    return {"model": request.model, "user_concurrency": request.user_concurrency,
            "query_concurrency": request.query_concurrency,
            "judge": {"model": request.judge_model} if request.judge_model else None,
            "candidate": {"kind": request.candidate} if request.candidate else None,
            "endpoint_limit": request.endpoint_limit, "endpoint_name": request.endpoint_key}


def configured(request: RunRequest) -> tuple[Config, RunFile | None]:
    """The request's effective configuration (defaults < --config < flags; a rejudge run's base is the
    earlier run's) and, for a rejudge run, the earlier run's plan."""
    earlier_plan = _rejudged_plan(request.rejudge) if request.rejudge is not None else None
    base = earlier_plan.config.model_dump(mode="json") if earlier_plan else None
    config = load_config(request.config, overrides(request), base=base)
    plugin(config.candidate.kind)  # installed and loading, or refused in one line
    return config, earlier_plan


def selected(request: RunRequest, config: Config) -> Dataset:
    """The dataset's preflight, of the users and questions the request selects."""
    return load_dataset(request.dataset, users=request.users, limit_questions=request.limit_questions,
                        max_session_images=config.candidate.max_images, image_cache=config.image_cache)


def revision_status(dataset: Dataset, config: Config) -> RevisionStatus:
    """Declared, or verified against the folder's manifest of file hashes; a mismatch refuses (one line)."""
    return dataset_manifest.verify(dataset, use_cache=config.image_cache)


def _refuse_embedded_limits(config: Config) -> None:
    """An endpoint limit is shared between evaluations: the embedded server is this run's alone."""
    if config.endpoint_limit is not None and not external_server():
        raise ConfigError("--endpoint-limit (endpoint_limit) needs an external Prefect server that every "
                          "evaluation sharing the endpoint uses: set PREFECT_API_URL (deployments/README.md)")


def _check_server(request: RunRequest, config: Config, endpoints: list[Endpoint]) -> None:
    """What the external Prefect server must hold for `--workers` and `--endpoint-limit` (Prefect's
    client is loaded only then)."""
    if request.workers is not None:
        check_workers(request)
    if config.endpoint_limit is not None:
        from lifecycle.limits import refuse_other_endpoint_limits

        refuse_other_endpoint_limits(endpoints, config)


def preflight(request: RunRequest) -> Plan:
    """Everything that can refuse the run, checked before any model request or file write. For a
    `rejudge` run, the earlier run's effective configuration is the base, and it is the one reused."""
    if request.output is None:
        raise ConfigError("a run needs --output")
    rejudge = request.rejudge
    config, earlier_plan = configured(request)
    _refuse_embedded_limits(config)
    reuse = [rejudge] if rejudge is not None else list(request.reuse)
    candidate = judge = None
    if not request.simulate:
        candidate, judge = Endpoint.from_env("candidate", config), Endpoint.from_env("judge", config)
    mobilemem_judge.judge_settings(config.judge, judge or Endpoint.simulated("judge", config, "http://x"))
    _check_server(request, config, [e for e in (candidate, judge) if e is not None])
    run = RunDir.for_output(request.output, config.model, config.candidate.kind)
    if run.root.exists() and not run.claim_file.is_file():
        raise ConfigError(f"{run.root} already exists: choose another --output or remove it")
    earlier = _earlier_runs(reuse, request.output, run, "rejudge" if rejudge is not None else "--reuse")
    loaded = selected(request, config)
    status = revision_status(loaded, config)
    if earlier_plan is not None:
        _refuse_another_dataset(rejudge, earlier_plan, loaded)
    run.claim()  # last: a refused start leaves nothing behind
    return Plan(request, config, loaded, run, request.simulate, candidate, judge, earlier, rejudge is not None,
                status)


def hand_over(plan: Plan) -> None:
    """The command line's plan, for the flow it starts in this process: preflight runs once."""
    _PREFLIGHTED[plan.request] = plan


def handed_over(request: RunRequest) -> Plan | None:
    """The plan the command line handed over for this request, left for the flow to take."""
    return _PREFLIGHTED.get(request)


def planned(request: RunRequest) -> Plan:
    """The plan the command line handed over for this request, else (a deployment run) preflight's."""
    plan = _PREFLIGHTED.pop(request, None)
    return plan if plan is not None else preflight(request)
