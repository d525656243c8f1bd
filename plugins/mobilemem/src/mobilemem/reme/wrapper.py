"""ReMe's AgentScope agent wrapper with runtime-state injection under the runner's control.

ReMe builds a fresh AgentScope `Agent` per reply but never passes an `InjectionConfig`, so every
request carries the wall-clock time, which contradicts the session date ReMe's own auto_memory
prompt calls "Today" and makes two runs send different requests. This subclass changes nothing
else: after ReMe has built the agent, `inject_runtime_state` (default off) is applied to it.
"""

from __future__ import annotations

from typing import Any

from reme.components.agent_wrapper.as_agent_wrapper import AsAgentWrapper


class BenchAgentWrapper(AsAgentWrapper):
    def __init__(self, inject_runtime_state: bool = False, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.inject_runtime_state = bool(inject_runtime_state)
        # ReMe's auto_memory accepts images only from a wrapper whose backend is "agentscope";
        # this is that wrapper, registered under the plugin's own backend name.
        self.backend = "agentscope"

    async def _build_agent(self, inputs: Any, **kwargs: Any):
        agent, inputs = await super()._build_agent(inputs, **kwargs)
        agent.injection_config = agent.injection_config.model_copy(
            update={"inject_runtime_state": self.inject_runtime_state})
        return agent, inputs
