"""Facts that live in pixels: a coloured background with a seven-segment digit.

The sample dataset's images carry their key fact visually, so that the simulator can answer a
visual question only from the pixels it was actually sent. Pure functions, Pillow only.

Geometry (fractions of the image, so any size works, from 160x120 to 2048x2048):

- the digit box spans ``DIGIT_BOX`` = (left, top, right, bottom) as fractions of (W, H, W, H);
- vertical segments are ``SEG_THICK_X`` x W wide, horizontal ones ``SEG_THICK_Y`` x H high;
- segments ``a`` (top), ``g`` (middle, centred on the box's mid-height), ``d`` (bottom) span the
  box's full width; ``f``/``b`` (upper left/right) and ``e``/``c`` (lower left/right) each span
  half the box height, so segments overlap only at the corners, away from every sampling patch;
- ``read_fact`` samples a patch of ``PATCH`` x the segment thickness around each segment's
  centre, and takes the background from a border strip ``BORDER`` x W (or x H) wide.
"""

from __future__ import annotations

import math

from PIL import Image, ImageColor, ImageDraw, ImageStat

COLOURS: tuple[str, ...] = ("red", "blue", "green", "yellow", "cyan", "purple", "pink", "magenta")
"""Background colours; every pair is at least 180 apart in RGB (Euclidean)."""

DIGIT_BOX = (0.36, 0.16, 0.64, 0.84)
SEG_THICK_X = 0.055
SEG_THICK_Y = 0.07
PATCH = 0.4
BORDER = 0.04

_MAX_BORDER_STDDEV = 20.0  # a solid background, even after JPEG, stays far below this
_MAX_COLOUR_DISTANCE = 80.0  # under half the smallest distance between two COLOURS
_MAX_SEGMENT_AMBIGUITY = 0.35  # a patch must sit this close (x bg-ink distance) to bg or ink

_SEGMENTS = "abcdefg"
_DIGITS = ("abcdef", "bc", "abdeg", "abcdg", "bcfg", "acdfg", "acdefg", "abc", "abcdefg", "abcdfg")
_PATTERNS = {tuple(s in on for s in _SEGMENTS): digit for digit, on in enumerate(_DIGITS)}

_RGB = tuple[float, float, float]
_Box = tuple[float, float, float, float]


def _segment_boxes() -> dict[str, _Box]:
    x0, y0, x1, y1 = DIGIT_BOX
    tx, ty = SEG_THICK_X, SEG_THICK_Y
    ym = (y0 + y1) / 2
    return {
        "a": (x0, y0, x1, y0 + ty),
        "b": (x1 - tx, y0, x1, ym),
        "c": (x1 - tx, ym, x1, y1),
        "d": (x0, y1 - ty, x1, y1),
        "e": (x0, ym, x0 + tx, y1),
        "f": (x0, y0, x0 + tx, ym),
        "g": (x0, ym - ty / 2, x1, ym + ty / 2),
    }


def _pixels(box: _Box, size: tuple[int, int]) -> tuple[int, int, int, int]:
    """Fractional box -> integer pixel box (right/bottom exclusive), at least one pixel."""
    w, h = size
    left, top = round(box[0] * w), round(box[1] * h)
    return left, top, max(left + 1, round(box[2] * w)), max(top + 1, round(box[3] * h))


def _luminance(rgb: _RGB) -> float:
    def linear(c: float) -> float:
        c /= 255
        return c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4

    r, g, b = (linear(c) for c in rgb)
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


def _ink(background: _RGB) -> tuple[int, int, int]:
    """Black or white, whichever has the higher WCAG contrast ratio with the background."""
    lum = _luminance(background)
    return (0, 0, 0) if (lum + 0.05) / 0.05 >= 1.05 / (lum + 0.05) else (255, 255, 255)


def draw_fact(colour: str, digit: int, size: tuple[int, int] = (320, 240)) -> Image.Image:
    """An RGB image: solid ``colour`` background, ``digit`` (0-9) as a seven-segment display
    in black or white (the higher-contrast one), drawn with rectangles (no font)."""
    if colour not in COLOURS:
        raise ValueError(f"unknown colour {colour!r}; expected one of {', '.join(COLOURS)}")
    if not 0 <= digit <= 9:
        raise ValueError(f"digit must be 0-9, got {digit}")
    background = ImageColor.getrgb(colour)[:3]
    image = Image.new("RGB", size, background)
    draw = ImageDraw.Draw(image)
    ink = _ink(background)
    for name, box in _segment_boxes().items():
        if name in _DIGITS[digit]:
            left, top, right, bottom = _pixels(box, size)
            draw.rectangle((left, top, right - 1, bottom - 1), fill=ink)
    return image


def _border_stat(image: Image.Image) -> ImageStat.Stat:
    w, h = image.size
    bx, by = max(1, round(BORDER * w)), max(1, round(BORDER * h))
    mask = Image.new("L", image.size, 255)
    if w > 2 * bx and h > 2 * by:
        ImageDraw.Draw(mask).rectangle((bx, by, w - bx - 1, h - by - 1), fill=0)
    return ImageStat.Stat(image, mask)


def _patch_mean(image: Image.Image, box: _Box) -> _RGB:
    cx, cy = (box[0] + box[2]) / 2, (box[1] + box[3]) / 2
    hx, hy = PATCH * (box[2] - box[0]) / 2, PATCH * (box[3] - box[1]) / 2
    mean = ImageStat.Stat(image.crop(_pixels((cx - hx, cy - hy, cx + hx, cy + hy), image.size))).mean
    return mean[0], mean[1], mean[2]


def read_fact(image: Image.Image) -> tuple[str | None, int | None]:
    """Recover ``(colour, digit)`` from pixels; ``None`` for whatever cannot be read reliably.

    The colour is the entry of COLOURS nearest to the median of a border strip; a border that
    is not uniform (not one of our images) gives ``(None, None)``. Each segment is on when the
    mean of a small patch at its centre is nearer the ink than the background; a patch near
    neither, or a pattern that is no digit, gives digit ``None``. Robust to JPEG artefacts.
    """
    rgb = image.convert("RGB")
    border = _border_stat(rgb)
    if max(border.stddev[:3]) > _MAX_BORDER_STDDEV:
        return None, None
    background: _RGB = (border.median[0], border.median[1], border.median[2])
    distance, nearest = min((math.dist(background, ImageColor.getrgb(c)[:3]), c) for c in COLOURS)
    colour = nearest if distance <= _MAX_COLOUR_DISTANCE else None
    ink = _ink(ImageColor.getrgb(colour)[:3] if colour else background)
    contrast = math.dist(background, ink)
    pattern = []
    for name in _SEGMENTS:
        patch = _patch_mean(rgb, _segment_boxes()[name])
        to_ink, to_background = math.dist(patch, ink), math.dist(patch, background)
        if min(to_ink, to_background) > _MAX_SEGMENT_AMBIGUITY * contrast:
            return colour, None
        pattern.append(to_ink < to_background)
    return colour, _PATTERNS.get(tuple(pattern))
