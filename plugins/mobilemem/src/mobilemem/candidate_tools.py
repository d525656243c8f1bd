"""What a candidate plug-in may use besides the contract (`mobilemem.candidate`), so that it sends what
the built-ins send in the same way: the official multimodal-memory QA template, an image as the model
receives it (after its Image ID), a dialogue turn as one transcript line, one budgeted answer
request with the runner's failure rules (`ask`), and atomic writes into the workspace. The bm25-rag baseline is built from the same parts."""

from __future__ import annotations

import base64
import re
from pathlib import Path, PurePosixPath

from agentscope.message import Base64Source, DataBlock, TextBlock

from mobilemem.baselines.ask import ask
from mobilemem.baselines.transcript import turn_line
from mobilemem.images import image_for_model
from mobilemem.prompts import MULTIMODAL_TEMPLATE, frozen_text
from mobilemem.rundir import read_lines, write_bytes_atomic

__all__ = ["MULTIMODAL_TEMPLATE", "ask", "frozen_text", "image_blocks", "read_lines", "render_multimodal", "turn_line",
           "write_bytes_atomic"]

_PLACEHOLDER = re.compile(r"\[Question\]|\[Retrieved Memories\]|\[Timestamps\]")


def render_multimodal(question: str, memories: str, timestamps: str) -> tuple[str, str]:
    """The official multimodal-memory QA template's text before and after `[Images]`, the other
    placeholders filled in one pass (text inside the question is never substituted again)."""
    values = {"[Question]": question, "[Retrieved Memories]": memories, "[Timestamps]": timestamps}
    text = _PLACEHOLDER.sub(lambda match: values[match.group(0)], frozen_text(MULTIMODAL_TEMPLATE))
    before, _, after = text.partition("[Images]")
    return before, after


def image_blocks(dataset_root: Path, image_id: str, path: str) -> list:
    """`Image ID: <id>` and the image: the file's bytes, not resized (an MPO as the PNG of its first
    picture), saved under the reference's own name (a mojibake archive name is not sent)."""
    name = PurePosixPath(image_id.replace("\\", "/")).name
    picture = image_for_model(dataset_root / path, name)
    return [TextBlock(text=f"Image ID: {image_id}"),
            DataBlock(source=Base64Source(data=base64.b64encode(picture.data).decode("ascii"),
                                          media_type=picture.media_type), name=picture.filename)]
