"""Calling a real AgentScope chat model the way the candidate and the judge do (test helper)."""

from agentscope.message import TextBlock, UserMsg
from agentscope.model import ChatModelBase
from agentscope.model._model_response import ChatResponse


async def complete(model: ChatModelBase, text: str, **kwargs) -> ChatResponse:
    """One model call; a streamed reply is consumed to its final accumulated response."""
    result = await model(messages=[UserMsg(name="user", content=[TextBlock(text=text)])], **kwargs)
    if isinstance(result, ChatResponse):
        return result
    last = None
    async for chunk in result:
        last = chunk
    assert last is not None
    return last
