"""The amount of image data in a PNG file, checked against its header (DESIGN §3, preflight).

Pillow's `load()` accepts a PNG whose zlib stream ends early, cleanly, with every chunk and CRC
valid (say one row of 240): it stops where the stream stops and leaves the other rows black,
without an error, whether or not `ImageFile.LOAD_TRUNCATED_IMAGES` is set. So the IDAT stream is
inflated here and its length compared with what the header's size, colour type, bit depth and
interlacing need. Pure functions on bytes; the chunk CRCs are Pillow's `verify()`.
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Iterator

SIGNATURE = b"\x89PNG\r\n\x1a\n"
CHANNELS = {0: 1, 2: 3, 3: 1, 4: 2, 6: 4}  # by colour type: grey, RGB, palette, grey + alpha, RGBA
# Adam7: (first column, first row, column step, row step) of each of the seven passes
ADAM7 = ((0, 0, 8, 8), (4, 0, 8, 8), (0, 4, 4, 8), (2, 0, 4, 4), (0, 2, 2, 4), (1, 0, 2, 2), (0, 1, 1, 2))
_INFLATE_STEP = 1 << 20  # bytes of pixel data held at once


def png_data_problem(data: bytes) -> str | None:
    """Why the image data (frame 0, the IDAT chunks) of the PNG `data` is not what its header
    promises, or None."""
    chunks = list(_chunks(data))
    if not chunks or chunks[0][0] != b"IHDR" or len(chunks[0][1]) != 13:
        return "has no valid IHDR chunk"
    width, height, depth, colour, _, _, interlace = struct.unpack(">IIBBBBB", chunks[0][1])
    if colour not in CHANNELS:
        return f"has an unknown colour type {colour}"
    expected = filtered_size(width, height, CHANNELS[colour] * depth, interlace == 1)
    idat = [body for kind, body in chunks if kind == b"IDAT"]
    if not idat:
        return "has no image data (no IDAT chunk)"
    try:
        size, ended = _inflated_size(idat, enough=expected)
    except zlib.error as exc:
        return f"has image data that is not a valid zlib stream ({exc})"
    if not ended:
        return f"has image data whose zlib stream is cut off ({size:,} of {expected:,} bytes)"
    if size < expected:
        return (f"has image data that ends early: its zlib stream holds {size:,} of the {expected:,} bytes "
                f"its {width} x {height} pixels need")
    return None


def filtered_size(width: int, height: int, bits_per_pixel: int, interlaced: bool) -> int:
    """Bytes of filtered scanlines (a filter byte, then the row's pixels) that the image needs."""
    passes = ADAM7 if interlaced else ((0, 0, 1, 1),)
    total = 0
    for x0, y0, dx, dy in passes:
        columns, rows = -(-(width - x0) // dx), -(-(height - y0) // dy)
        if columns > 0 and rows > 0:
            total += rows * (1 + (columns * bits_per_pixel + 7) // 8)
    return total


def _chunks(data: bytes) -> Iterator[tuple[bytes, bytes]]:
    """(type, body) of each chunk up to IEND or the first one that runs past the end of `data`."""
    pos = len(SIGNATURE) if data.startswith(SIGNATURE) else len(data)
    while pos + 8 <= len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        if pos + 12 + length > len(data):
            return
        yield kind, data[pos + 8:pos + 8 + length]
        if kind == b"IEND":
            return
        pos += 12 + length


def _inflated_size(parts: list[bytes], *, enough: int) -> tuple[int, bool]:
    """(bytes the zlib stream of `parts` inflates to, read until `enough`; whether it got there or
    to the stream's end rather than running out of data)."""
    inflater = zlib.decompressobj()
    size = 0
    for part in parts:
        pending = part
        while not inflater.eof and size < enough:
            out = inflater.decompress(pending, _INFLATE_STEP)
            size += len(out)
            pending = inflater.unconsumed_tail
            if not pending and len(out) < _INFLATE_STEP:
                break  # this part is consumed and nothing is held back
    return size, inflater.eof or size >= enough
