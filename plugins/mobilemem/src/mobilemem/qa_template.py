"""The official MobileMem QA template ("Prompt for Question Answering with Text Memory").

`[Question]` becomes the question text; `[Retrieved Memories]` becomes `memories` (for the ReMe
answer agent: the instructions for its memory tools, since it gathers its memories itself,
DESIGN §4.3). Both are replaced in one pass, so text inside the question is never substituted again.
"""

from __future__ import annotations

import re

from mobilemem.prompts import frozen_text

_PLACEHOLDER = re.compile(r"\[Question\]|\[Retrieved Memories\]")


def render(question: str, memories: str) -> str:
    values = {"[Question]": question, "[Retrieved Memories]": memories}
    return _PLACEHOLDER.sub(lambda match: values[match.group(0)], frozen_text("prompts/qa_text_memory.txt"))
