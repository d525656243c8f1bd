"""The official MobileMem QA template ("Prompt for Question Answering with Text Memory").

`[Question]` becomes the question text; `[Retrieved Memories]` becomes the instructions for the
three memory tools, since the answer agent gathers its memories itself (DESIGN §4.3). Both are
replaced in one pass, so text inside the question is never substituted again.
"""

from __future__ import annotations

import re

from mobilemem.prompts import prompt

_PLACEHOLDER = re.compile(r"\[Question\]|\[Retrieved Memories\]")


def render(question: str) -> str:
    values = {"[Question]": question, "[Retrieved Memories]": prompt("answer_tools").rstrip("\n")}
    return _PLACEHOLDER.sub(lambda match: values[match.group(0)], prompt("qa_text_memory"))
