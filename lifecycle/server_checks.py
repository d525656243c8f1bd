"""What an external Prefect server must be and hold for `--workers` (DESIGN §12), checked at
preflight: one line each, before anything is written. Prefect's client loads only for such a run."""

from __future__ import annotations

import os

from mobilemem.errors import ConfigError, describe
from mobilemem.records import RunRequest

USER_DEPLOYMENT = "mobilemem-user/evaluate-user"


def external_server() -> bool:
    """Whether the run goes to an external Prefect server (PREFECT_API_URL in the environment; read
    without loading Prefect), not to the embedded one this process would start."""
    return bool(os.environ.get("PREFECT_API_URL", "").strip())


def check_workers(request: RunRequest) -> None:
    """Preflight of `--workers POOL`: an external Prefect server that has the pool and the user
    deployment on it; each refusal is one line (ConfigError)."""
    if request.simulate:
        raise ConfigError("--workers cannot use --simulate (its simulator lives in this process): start "
                          "`python -m mobilemem.simulator --port P` and set LLM_BASE_URL/LLM_API_KEY on every worker")
    if not external_server():
        raise ConfigError("--workers needs an external Prefect server on PostgreSQL: set PREFECT_API_URL "
                          "(deployments/README.md, \"One evaluation on many machines\")")
    from prefect.client.orchestration import get_client
    from prefect.exceptions import ObjectNotFound

    pool = request.workers
    try:
        with get_client(sync_client=True) as client:
            client.read_work_pool(pool)
            deployment = client.read_deployment_by_name(USER_DEPLOYMENT)
    except ObjectNotFound:
        raise ConfigError(f"--workers {pool}: the Prefect server at {os.environ['PREFECT_API_URL']} has no work pool "
                          f"{pool!r} or no deployment {USER_DEPLOYMENT} (prefect --no-prompt deploy --all, "
                          "deployments/README.md)") from None
    except Exception as exc:  # unreachable, refused, ...
        raise ConfigError(f"--workers {pool}: the Prefect server at {os.environ['PREFECT_API_URL']} did not "
                          f"answer: {describe(exc)}") from None
    if deployment.work_pool_name != pool:
        raise ConfigError(f"--workers {pool}: the deployment {USER_DEPLOYMENT} runs on the work pool "
                          f"{deployment.work_pool_name!r}, not {pool!r}")
