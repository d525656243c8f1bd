"""The marker structure of a JPEG file, checked without decoding it (DESIGN §3, preflight).

Pillow decodes JPEG with libjpeg and drops its "corrupt JPEG data" warnings: garbage inside the
entropy-coded data often decodes to wrong pixels without an error. Garbage almost always holds a
0xFF byte that starts no valid marker, or a segment whose length does not land on the next
marker, and that is what this walk finds. (Data that is structurally valid, such as a run of zero
bytes, cannot be told from an image this way.) Pure functions on bytes.
"""

from __future__ import annotations

import re

_SCAN_END = re.compile(rb"\xff[^\x00\xd0-\xd7\xff]")  # the marker after a scan (not stuffing, RST or fill)
_RESTART = re.compile(rb"\xff[\xd0-\xd7]")
_PADDING = re.compile(rb"(?:\x00|\xff(?!\xd8))*")  # zero or 0xFF bytes after an EOI


def jpeg_structure_problem(data: bytes, *, later_frames: bool = True) -> str | None:
    """Why `data` is not a well-formed JPEG, or None. After the EOI come at most 16 bytes, padding,
    or another JPEG, walked the same way; without `later_frames` (an MPO, whose later pictures
    are never sent) the walk ends at the first EOI."""
    pos = 0
    while True:
        end = _jpeg_end(data, pos + 2)
        if isinstance(end, str):
            return end
        if len(data) - end <= 16 or not later_frames:  # 16: as much as the trailer check tolerates
            return None
        following = _PADDING.match(data, end).end()  # type: ignore[union-attr]
        if following == len(data):
            return None
        if not data.startswith(b"\xff\xd8", following):
            return f"has {len(data) - end} bytes after its end marker at byte {end - 2}"
        pos = following


def _jpeg_end(data: bytes, pos: int) -> int | str:
    """The offset after one JPEG's EOI, walking from just after its SOI, or the problem: every
    segment's length must land on the next marker, every scan's entropy-coded data end at a
    marker (restart markers in order)."""
    while True:
        while data.startswith(b"\xff\xff", pos):
            pos += 1  # fill bytes before a marker
        if pos + 1 >= len(data) or data[pos] != 0xFF:
            return f"has no marker where one must be (byte {pos})"
        code = data[pos + 1]
        if code == 0xD9:
            return pos + 2
        if code == 0x01 or 0xD0 <= code <= 0xD7:
            pos += 2
            continue
        if code < 0xC0 or code == 0xD8:
            return f"has an invalid marker 0xFF{code:02X} at byte {pos}"
        length = int.from_bytes(data[pos + 2:pos + 4], "big")
        if length < 2 or pos + 2 + length > len(data):
            return f"has a segment 0xFF{code:02X} at byte {pos} running past its end"
        pos += 2 + length
        if code == 0xDA:
            scan_end = _SCAN_END.search(data, pos)
            if scan_end is None:
                return f"has a scan at byte {pos} that never ends"
            restarts = [m.group()[1] for m in _RESTART.finditer(data, pos, scan_end.start())]
            if any(rst != 0xD0 + i % 8 for i, rst in enumerate(restarts)):
                return f"has restart markers out of order in the scan at byte {pos}"
            pos = scan_end.start()
