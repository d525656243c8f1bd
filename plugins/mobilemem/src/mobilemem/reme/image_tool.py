"""The answer agent's `read_image` tool: ReMe's `read_image` job, its result as an image block.

ReMe turns a job into a tool whose result is text only (`TextBlock(str(answer))`), which would
hand the model base64 text instead of a picture. This tool calls the same job and returns the
image ReMe read as an AgentScope `DataBlock`. It opens only images saved under
`image_folder` (`session/images/`): ReMe's own path resolution keeps every path inside the workspace, and this
narrower scope keeps the agent out of the workspace's indexes and trajectories.
"""

from __future__ import annotations

from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING

from agentscope.message import Base64Source, DataBlock, TextBlock, ToolResultState
from agentscope.tool import FunctionTool, ToolChunk

if TYPE_CHECKING:
    from reme.components.job.base_job import BaseJob

def _error(text: str) -> ToolChunk:
    return ToolChunk(content=[TextBlock(text=text)], state=ToolResultState.ERROR)


def image_tool(job: BaseJob, workspace: Path, image_folder: PurePosixPath) -> FunctionTool:
    images = (workspace / image_folder).resolve()

    async def read_image(path: str) -> ToolChunk:
        response = await job(path=path)
        if not response.success:
            return _error(str(response.answer))
        metadata = response.metadata
        target = Path(str(metadata.get("path", "")))
        if not target.is_relative_to(images):
            return _error(f"read_image opens only images saved under {image_folder}/: {path!r} is not one")
        if metadata.get("oversized") or metadata.get("non_image_warning") or not metadata.get("mime"):
            return _error(f"{path!r} cannot be shown as an image: {response.answer[:300]}")
        relative = target.relative_to(workspace.resolve()).as_posix()
        return ToolChunk(content=[TextBlock(text=f"Image {relative}:"),
                                  DataBlock(source=Base64Source(data=response.answer, media_type=metadata["mime"]),
                                            name=target.name)],
                         state=ToolResultState.SUCCESS)

    return FunctionTool(func=read_image, name=job.name, description=job.description, input_schema=job.parameters,
                        is_concurrency_safe=False)
