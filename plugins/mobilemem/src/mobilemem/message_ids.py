"""The id each dialogue turn's message carries into ReMe, and the way back from ReMe's saved images.

A turn's message id is `<session_id>-t<turn>`. ReMe 0.4.2.0 saves an ingested image as
`session/images/<session_id>/msg-<hex of the message id, UTF-8>-image-<block index><ext>`, the
extension following the media type sent (so an MPO sent as PNG is saved as `.png`). Both
directions live here, away from ReMe, so that the judge's analysis can map an image the agent
read back to its turn without importing the candidate.
"""

from __future__ import annotations

import re

_ATTACHMENT = re.compile(r"(?:^|/)session/images/[^/]+/msg-(?P<hex>(?:[0-9a-f]{2})+)-image-\d+\.[A-Za-z0-9]+$")


def message_id(session_id: str, turn: int) -> str:
    return f"{session_id}-t{turn}"


def parse_message_id(value: str) -> tuple[str, int] | None:
    """(session id, turn) of a message id made by `message_id`, or None for any other string."""
    session_id, sep, turn = value.rpartition("-t")
    if not sep or not session_id or not turn.isdecimal():
        return None
    return session_id, int(turn)


def attachment_turn(path: str) -> tuple[str, int] | None:
    """(session id, turn) of the message whose image ReMe saved at workspace path `path`, or None
    when `path` is not such an attachment."""
    match = _ATTACHMENT.search(path.replace("\\", "/"))
    if match is None:
        return None
    try:
        return parse_message_id(bytes.fromhex(match["hex"]).decode("utf-8"))
    except UnicodeDecodeError:
        return None
