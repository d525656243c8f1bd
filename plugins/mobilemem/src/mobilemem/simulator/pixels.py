"""The simulator's eyes: the colour and digit drawn on an image it received (`vision.read_fact`),
as the short answer a question about them wants. A question about a picture it never received
cannot be answered: that is what makes the no-memory baseline score near 0."""

from __future__ import annotations

import base64
import binascii
import io
import re

CANNOT_TELL = "I cannot tell from the image."


def answer_about(question: str, url: str | None) -> str:
    """The answer to `question` from the image at data: URI `url` (None: no image received)."""
    colour, digit = read_data_uri(url) if url else (None, None)
    question = question.lower()
    wants_colour = bool(re.search(r"colou?r|颜色", question))
    wants_digit = bool(re.search(r"digit|number|数字", question))
    if wants_colour and not wants_digit:
        return f"The colour is {colour}." if colour else CANNOT_TELL
    if wants_digit and not wants_colour:
        return f"The digit is {digit}." if digit is not None else CANNOT_TELL
    if colour is None or digit is None:
        return CANNOT_TELL
    return f"The colour is {colour} and the digit is {digit}."


def read_data_uri(url: str) -> tuple[str | None, int | None]:
    from PIL import Image, UnidentifiedImageError  # noqa: PLC0415  (keeps `import mobilemem.simulator` light)

    from .vision import read_fact  # noqa: PLC0415

    header, _, data = url.partition(",")
    if not header.startswith("data:") or ";base64" not in header:
        return None, None
    try:
        with Image.open(io.BytesIO(base64.b64decode(data, validate=True))) as image:
            return read_fact(image)
    except (binascii.Error, UnidentifiedImageError, OSError, ValueError):
        return None, None
