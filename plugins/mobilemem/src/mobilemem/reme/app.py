"""One ReMe application per user (DESIGN §4): the only place a ReMe `Application` is opened.

ReMe's `benchmark` preset (manual index and digest updates, no background or cron jobs) plus this
plugin, on `users/<uid>/workspace/`, with the run's overrides: the candidate model injected into
every ReMe LLM component, every ReMe retry setting 0, ReMe's deletion of old agent states off, the
preset's context and iteration values, runtime-state injection as configured, and BM25 only (the
embedding components are dropped, so no embedding model is ever configured or called). ReMe's log
goes into the run's log (`mobilemem.reme.log`, sanitized by the run log's filter), never to the
console or a file of its own.
"""

from __future__ import annotations

import logging
import time
from pathlib import Path
from typing import Any

from agentscope.model import ChatModelBase
from loguru import logger as reme_logger
from reme.application import Application
from reme.config.config_parser import resolve_app_config

from mobilemem.candidate import IndexResponse
from mobilemem.records import CandidatePreset
from mobilemem.errors import MobilememError
from mobilemem.reme import PLUGIN_NAME, PRESET

WRAPPER_BACKEND = "mobilemem_agentscope"  # plugin.yaml: ReMe's AgentScope wrapper, runtime state switchable
NO_EMBEDDINGS = ("as_embedding", "embedding_store")
log = logging.getLogger("mobilemem.reme.log")


def app_config(workspace: Path, preset: CandidatePreset) -> dict[str, Any]:
    """ReMe's configuration of one user's application (the plugin's jobs come in through `plugins`)."""
    no_retries = {"max_retries": 0}
    config = resolve_app_config(
        log_config=False, config=PRESET, workspace_dir=str(workspace), plugins=[PLUGIN_NAME],
        log_to_console=False, log_to_file=False, enable_logo=False,
        components={
            "as_llm": {name: no_retries for name in ("default", "bench", "compressor")},
            "file_store": {"default": {"embedding_store": ""}},
            "agent_wrapper": {"bench": {
                # 0: ReMe's first agent of an application would delete agent states older than 10 days,
                # the memory's own among them when it was copied from an earlier run (`--reuse`)
                "backend": WRAPPER_BACKEND, "session_retention_days": 0,
                "inject_runtime_state": preset.inject_runtime_state,
                "model_config": no_retries,
                "react_config": {"max_iters": preset.max_iters, "interruption_raise_cancelled_error": True},
                "context_config": {"trigger_ratio": preset.trigger_ratio, "reserve_ratio": preset.reserve_ratio,
                                   "max_image_num": preset.max_images,
                                   "compression_fallback_to_truncation": False}}}})
    for name in NO_EMBEDDINGS:
        config["components"].pop(name, None)
    return config


def _forward(message: Any) -> None:
    record = message.record
    text = f"{record['name']}:{record['line']} {record['message']}"
    if record["exception"] is not None:
        text += f" ({record['exception'].type.__name__}: {record['exception'].value})"
    log.log(record["level"].no, text)


def _route_reme_log() -> None:
    """ReMe re-initialises its (loguru) logger with every new application, removing every sink:
    add the one that forwards into the run's log again. No values of frames are ever rendered."""
    reme_logger.add(_forward, level="INFO", format="{message}", diagnose=False, backtrace=False, catch=True)


async def open_user_app(workspace: Path, model: ChatModelBase, preset: CandidatePreset) -> Application:
    """A started ReMe application on `workspace` whose every LLM component uses `model`."""
    app = Application(**app_config(workspace, preset))
    _route_reme_log()
    for component in app.context.components.get("as_llm", {}).values():
        component.model = model
    await app.start()
    return app


async def build_index(app: Application) -> IndexResponse:
    """ReMe's `index_update` then `digest_update`, once, after the user's last session."""
    started = time.perf_counter()
    for job in ("index_update", "digest_update"):
        response = await app.run_job(job)
        if not response.success:
            raise MobilememError(f"ReMe's {job} failed: {response.answer}")
    chunks = app.context.components["file_store"]["default"].file_chunks.values()
    return IndexResponse(documents=len({chunk.path for chunk in chunks}), chunks=len(chunks),
                         build_seconds=round(time.perf_counter() - started, 4))
