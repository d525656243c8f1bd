"""Prefect's own settings that the runner chooses reach the flows the way Prefect reads them (a
settings context, not environment variables set after Prefect was imported), and a user's own
value wins."""

import asyncio

from prefect import flow
from prefect.settings import PREFECT_CLIENT_MAX_RETRIES, PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS, \
    temporary_settings

from cli import console


@flow
async def _probe() -> tuple[int, int]:
    return PREFECT_CLIENT_MAX_RETRIES.value(), PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS.value()


def test_the_runners_prefect_defaults_are_what_a_flow_reads():
    assert asyncio.run(_probe()) == (5, 20)  # Prefect's own defaults
    with console.prefect_settings():
        assert asyncio.run(_probe()) == (console.PREFECT_DEFAULTS[PREFECT_CLIENT_MAX_RETRIES],
                                         console.PREFECT_DEFAULTS[PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS])


def test_a_users_own_prefect_setting_wins():
    with temporary_settings(updates={PREFECT_CLIENT_MAX_RETRIES: 3}), console.prefect_settings():
        assert asyncio.run(_probe())[0] == 3
