"""The simulator's policy for a baseline's one request (role ``qa``): an official MobileMem QA
template with no tools. The answer comes from the pixels received: the image is the one the
question's ordinal ("the first photo ...") picks among the Image IDs of the first retrieved
memory (the best hit), found by the ``Image ID: <id>`` text just before it. With no image
received (no-memory), it cannot tell."""

from __future__ import annotations

import re

from .pixels import answer_about
from .usage_rules import content_parts, messages_of, tool_names

TEMPLATE_SENTENCE = "Please answer the question based on the following memories:"
IMAGES_SENTENCE = "The following images are retrieved as potentially relevant visual memories."
_IMAGE_ID = re.compile(r"Image ID: (.+)$", re.MULTILINE)


def _first_user_parts(body: dict) -> list[dict]:
    first = next((m for m in messages_of(body) if m.get("role") == "user"), {})
    return content_parts(first.get("content"))


def asks(body: dict) -> bool:
    texts = [p.get("text") or "" for p in _first_user_parts(body) if p.get("type") == "text"]
    return not tool_names(body) and any(TEMPLATE_SENTENCE in t for t in texts)


def _labelled_images(parts: list[dict]) -> dict[str, str]:
    """Image ID -> data: URI, for every image part right after an ``Image ID: ...`` text part."""
    found, label = {}, None
    for part in parts:
        if part.get("type") == "text":
            match = _IMAGE_ID.fullmatch((part.get("text") or "").strip())
            label = match.group(1) if match else None
        elif part.get("type") == "image_url" and label is not None:
            image = part.get("image_url")
            found.setdefault(label, image.get("url") if isinstance(image, dict) else image)
            label = None
    return found


def answer(body: dict, question: str, ordinal: int) -> str:
    parts = _first_user_parts(body)
    text = "\n".join(p.get("text") or "" for p in parts if p.get("type") == "text")
    memories = text.split(TEMPLATE_SENTENCE, 1)[-1].split(IMAGES_SENTENCE, 1)[0].strip()
    best = memories.split("\n\n", 1)[0]
    wanted = list(dict.fromkeys(_IMAGE_ID.findall(best)))
    images = _labelled_images(parts)
    if not wanted or not images:
        return answer_about(question, None)
    return answer_about(question, images.get(wanted[min(ordinal, len(wanted) - 1)]))
