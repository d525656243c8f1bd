"""mobilemem.simulator.vision: facts drawn into pixels survive encoding and are read back."""

from __future__ import annotations

import io
import itertools
import math
import random

import pytest
from PIL import Image, ImageColor, ImageDraw

from mobilemem.simulator.vision import COLOURS, DIGIT_BOX, SEG_THICK_Y, draw_fact, read_fact

FACTS = list(itertools.product(COLOURS, range(10)))


def _reencode(image: Image.Image, fmt: str, **options: object) -> Image.Image:
    buffer = io.BytesIO()
    image.save(buffer, format=fmt, **options)
    reopened = Image.open(io.BytesIO(buffer.getvalue()))
    assert reopened.format == fmt
    return reopened


def test_colours_are_known_and_far_apart() -> None:
    assert len(COLOURS) == 8 and len(set(COLOURS)) == 8
    rgb = [ImageColor.getrgb(c)[:3] for c in COLOURS]
    assert min(math.dist(a, b) for a, b in itertools.combinations(rgb, 2)) >= 150


@pytest.mark.parametrize(("colour", "digit"), FACTS)
def test_round_trip_png_and_jpeg(colour: str, digit: int) -> None:
    image = draw_fact(colour, digit)
    assert image.mode == "RGB" and image.size == (320, 240)
    assert read_fact(image) == (colour, digit)
    assert read_fact(_reencode(image, "PNG")) == (colour, digit)
    assert read_fact(_reencode(image, "JPEG", quality=75)) == (colour, digit)


@pytest.mark.parametrize("size", [(160, 120), (241, 177), (400, 700)])
def test_round_trip_other_sizes_jpeg(size: tuple[int, int]) -> None:
    for colour, digit in FACTS:
        image = draw_fact(colour, digit, size)
        assert image.size == size
        assert read_fact(_reencode(image, "JPEG", quality=75)) == (colour, digit), (colour, digit)


def test_round_trip_large() -> None:
    image = draw_fact("purple", 2, (2048, 2048))
    assert image.size == (2048, 2048)
    assert read_fact(_reencode(image, "JPEG", quality=75)) == ("purple", 2)
    assert read_fact(_reencode(image, "PNG")) == ("purple", 2)


def test_round_trip_mpo_frame_zero() -> None:
    first, second = draw_fact("cyan", 4), draw_fact("red", 7)
    buffer = io.BytesIO()
    first.save(buffer, format="MPO", save_all=True, append_images=[second])
    mpo = Image.open(io.BytesIO(buffer.getvalue()))
    assert mpo.format == "MPO" and mpo.n_frames == 2
    assert read_fact(mpo) == ("cyan", 4)
    mpo.seek(1)
    assert read_fact(mpo) == ("red", 7)


def test_digit_is_drawn_in_the_contrasting_ink() -> None:
    # Light backgrounds get black ink, dark ones white: the centre of segment "a" shows it.
    top = (round((DIGIT_BOX[0] + DIGIT_BOX[2]) / 2 * 320), round((DIGIT_BOX[1] + SEG_THICK_Y / 2) * 240))
    assert draw_fact("yellow", 8).getpixel(top) == (0, 0, 0)
    assert draw_fact("blue", 8).getpixel(top) == (255, 255, 255)
    assert draw_fact("blue", 1).getpixel(top) == ImageColor.getrgb("blue")


def test_distinct_facts_give_distinct_images() -> None:
    images = {draw_fact(c, d).tobytes() for c, d in FACTS}
    assert len(images) == len(FACTS)


@pytest.mark.parametrize("seed", range(5))
def test_random_noise_is_not_a_fact(seed: int) -> None:
    rng = random.Random(seed)
    noise = Image.frombytes("RGB", (320, 240), rng.randbytes(320 * 240 * 3))
    assert read_fact(noise)[1] is None
    assert read_fact(_reencode(noise, "JPEG", quality=75))[1] is None


def test_unknown_segment_pattern_gives_no_digit() -> None:
    image = draw_fact("green", 8)
    # Paint the top segment's centre back to the background: b+c+d+e+f+g is no digit.
    x0, y0, x1, _ = DIGIT_BOX
    box = (round(x0 * 320) + 20, round(y0 * 240) - 2, round(x1 * 320) - 20, round((y0 + SEG_THICK_Y) * 240) + 2)
    ImageDraw.Draw(image).rectangle(box, fill="green")
    assert read_fact(image) == ("green", None)


def test_foreign_background_colour_is_not_named() -> None:
    image = Image.new("RGB", (320, 240), (128, 128, 128))
    assert read_fact(image) == (None, None)


def test_invalid_arguments_are_refused() -> None:
    with pytest.raises(ValueError, match="colour"):
        draw_fact("chartreuse", 1)
    with pytest.raises(ValueError, match="digit"):
        draw_fact("red", 10)
