import hashlib
import io
import random
import struct
import zlib

import numpy as np
import pytest
from PIL import Image

from mobilemem.images import (
    ImageProblem,
    build_index,
    image_for_model,
    inspect_image,
    inspect_images,
    reference_basename,
)
from mobilemem.jpeg_markers import jpeg_structure_problem
from mobilemem.png_data import CHANNELS, filtered_size, png_data_problem


def _save(img: Image.Image, path, fmt: str, **kwargs) -> None:
    buf = io.BytesIO()
    img.save(buf, format=fmt, **kwargs)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(buf.getvalue())


@pytest.fixture
def picture():
    return Image.new("RGB", (64, 48), (200, 30, 30))


def test_png_and_jpeg_in_png_pass_through_byte_for_byte(tmp_path, picture):
    for name, fmt in (("a.png", "PNG"), ("b.png", "JPEG")):
        path = tmp_path / name
        _save(picture, path, fmt)
        assert inspect_image(path).format == fmt
        sent = image_for_model(path)
        assert hashlib.sha256(sent.data).digest() == hashlib.sha256(path.read_bytes()).digest()
        assert sent.media_type == f"image/{fmt.lower()}" and sent.filename == name


def test_mpo_is_sent_as_png_of_its_first_frame(tmp_path, picture):
    path = tmp_path / "pair.jpg"
    _save(picture, path, "MPO", save_all=True, append_images=[Image.new("RGB", (64, 48), (0, 0, 255))])
    assert inspect_image(path).format == "MPO"
    sent = image_for_model(path, "相机 pair.jpg")
    assert sent.media_type == "image/png" and sent.filename == "相机 pair.png"
    decoded = Image.open(io.BytesIO(sent.data))
    assert decoded.format == "PNG" and decoded.size == (64, 48)
    red, green, blue = decoded.convert("RGB").getpixel((10, 10))
    assert red > 150 and blue < 80  # frame 0 (red), not frame 1 (blue)


@pytest.mark.parametrize(
    ("content", "reason"),
    [(b"", "empty"), (b"hello, not an image at all", "not a readable image"), (b"GIF89a" + b"\0" * 3, "not a readable")],
)
def test_bad_bytes_are_problems(tmp_path, content, reason):
    path = tmp_path / "x.png"
    path.write_bytes(content)
    with pytest.raises(ImageProblem, match=reason):
        inspect_image(path)


@pytest.mark.parametrize("fmt", ["PNG", "JPEG"])
def test_truncated_images_are_problems(tmp_path, picture, fmt):
    path = tmp_path / "t.img"
    _save(picture, path, fmt)
    path.write_bytes(path.read_bytes()[:-40])
    with pytest.raises(ImageProblem, match="truncated"):
        inspect_image(path)


def test_decompression_bomb_limit_holds(tmp_path, picture, monkeypatch):
    path = tmp_path / "big.png"
    _save(picture, path, "PNG")
    monkeypatch.setattr(Image, "MAX_IMAGE_PIXELS", 1000)
    with pytest.raises(ImageProblem, match="decompression-bomb"):
        inspect_image(path)


def test_unsupported_format_is_a_problem(tmp_path, picture):
    path = tmp_path / "x.png"
    _save(picture, path, "BMP")
    with pytest.raises(ImageProblem, match="format BMP, which is not supported"):
        inspect_image(path)


@pytest.mark.parametrize("ref", ["image/uid0/..", "image/uid0/", "a\x00b.png", "x/\x07.png"])
def test_references_naming_no_file_are_refused(ref):
    with pytest.raises(ImageProblem):
        reference_basename(ref)


def test_reference_folders_are_never_followed():
    assert reference_basename("image/uid0/../../etc/passwd") == "passwd"
    assert reference_basename("image\\uid0\\camera photos\\a.png") == "a.png"


def test_index_resolves_by_user_and_basename_including_gbk_mojibake(tmp_path, picture):
    root = tmp_path / "ds"
    images = root / "image"
    _save(picture, images / "uid0" / "camera_photos" / "0_event_1.png", "PNG")
    _save(picture, images / "image" / "uid1" / "camera_photos" / "0_event_1.png", "PNG")
    mojibake = "照片一.png".encode("gbk").decode("cp437")
    _save(picture, images / "uid0" / "chat_images" / mojibake, "PNG")
    _save(picture, images / "uid0" / "a" / "twice.png", "PNG")
    _save(picture, images / "uid0" / "b" / "twice.png", "PNG")
    (images / "uid0" / "link.png").symlink_to("/etc/hostname")
    index = build_index(images, root)

    assert index.resolve(0, "image/uid0/camera photos/0_event_1.png").parent.name == "camera_photos"
    assert index.resolve(1, "image/uid1/event/0_event_1.png").parts[-4:-2] == ("image", "uid1")
    assert index.resolve(0, "image/uid0/event/照片一.png").name == mojibake
    with pytest.raises(ImageProblem, match="matches 2 files"):
        index.resolve(0, "twice.png")
    with pytest.raises(ImageProblem, match="matches no file"):
        index.resolve(2, "0_event_1.png")
    with pytest.raises(ImageProblem, match="matches no file"):
        index.resolve(0, "link.png")
    assert [p.name for p in index.escapes] == ["link.png"]


# ---------------------------------------------------------------- full decode of well-framed files


def _noisy(fmt: str, **kwargs) -> bytes:
    image = Image.fromarray(np.random.default_rng(1).integers(0, 255, (64, 96, 3), dtype=np.uint8))
    if fmt == "MPO":
        kwargs = {"save_all": True, "append_images": [image.rotate(90)], **kwargs}
    out = io.BytesIO()
    (image.convert("P") if fmt == "GIF" else image).save(out, format=fmt, **kwargs)
    return out.getvalue()


def _middle(data: bytes, fill: bytes | None = None) -> bytes:
    start, end = len(data) * 2 // 5, len(data) * 3 // 5
    return data[:start] + (fill or random.Random(3).randbytes(end - start))[:end - start] + data[end:]


@pytest.mark.parametrize(("fmt", "fill"), [("JPEG", None), ("PNG", None), ("GIF", None), ("MPO", None),
                                           ("WEBP", b"\xff" * 100_000)])  # libwebp decodes random bytes
def test_a_corrupted_middle_with_intact_header_and_trailer_is_a_problem(tmp_path, fmt, fill):
    path = tmp_path / "photo.png"
    path.write_bytes(_middle(_noisy(fmt), fill))
    with pytest.raises(ImageProblem, match=rf"^is a corrupt {fmt} file: photo.png ") as info:
        inspect_image(path)
    assert str(info.value).isprintable()


def _png_with_valid_crcs_but_broken_zlib() -> bytes:
    data = _noisy("PNG")
    start = data.index(b"IDAT") - 4
    length = struct.unpack(">I", data[start:start + 4])[0]
    idat = bytearray(data[start + 8:start + 8 + length])
    idat[len(idat) // 2:len(idat) // 2 + 64] = random.Random(5).randbytes(64)
    chunk = struct.pack(">I", length) + b"IDAT" + idat + struct.pack(">I", zlib.crc32(b"IDAT" + idat))
    return data[:start] + chunk + data[start + 12 + length:]


def _jpeg_with_a_bogus_huffman_table() -> bytes:
    data = bytearray(_noisy("JPEG"))
    dht = data.index(b"\xff\xc4")
    data[dht + 5:dht + 21] = b"\xff" * 16  # the code counts add up to more than 256: libjpeg refuses it
    return bytes(data)


@pytest.mark.parametrize("make", [_png_with_valid_crcs_but_broken_zlib, _jpeg_with_a_bogus_huffman_table])
def test_a_stream_only_a_full_decode_finds_broken_is_a_problem(tmp_path, make):
    path = tmp_path / "x.jpg"
    path.write_bytes(make())
    with pytest.raises(ImageProblem, match=r"is a corrupt (PNG|JPEG) file: x.jpg does not decode \("):
        inspect_image(path)


def _jpeg(**kwargs) -> bytes:
    return _noisy("JPEG", **kwargs)


@pytest.mark.parametrize("data", [
    _jpeg(), _jpeg(progressive=True), _jpeg(optimize=True), _jpeg(quality=100, subsampling=0),
    _jpeg(restart_marker_blocks=1), _jpeg(restart_marker_rows=1, progressive=True), _jpeg(comment=b"x\xff\xd9y"),
    _jpeg(icc_profile=b"\0" * 3000), _jpeg() + b"\0" * 400, _jpeg() + _jpeg(), _noisy("MPO"),
], ids=["baseline", "progressive", "optimized", "444", "restarts", "progressive-restarts", "comment-with-eoi",
        "icc", "zero-padding", "two-jpegs", "mpo"])
def test_the_jpeg_marker_walk_accepts_valid_files(data):
    assert jpeg_structure_problem(data) is None


def test_the_jpeg_marker_walk_names_what_is_broken():
    good = _jpeg(restart_marker_blocks=1)
    first, second = good.index(b"\xff\xd0"), good.index(b"\xff\xd1")
    swapped = bytearray(good)
    swapped[first + 1], swapped[second + 1] = 0xD1, 0xD0
    assert "restart markers out of order" in jpeg_structure_problem(bytes(swapped))
    assert "bytes after its end marker" in jpeg_structure_problem(_jpeg() + b"trailing data, not an image" * 9)
    assert "running past its end" in jpeg_structure_problem(_jpeg()[:300])
    mpo = _noisy("MPO")
    frame_1 = mpo.index(b"\xff\xd8", 2)
    damaged = mpo[:frame_1] + b"\0" * 40 + mpo[frame_1 + 40:]
    assert jpeg_structure_problem(damaged, later_frames=False) is None  # frame 1 is never sent
    assert "bytes after its end marker" in jpeg_structure_problem(damaged)


def test_inspect_images_agrees_with_inspect_image_and_keeps_the_bomb_limit(tmp_path, monkeypatch):
    paths = []
    for i, (fmt, data) in enumerate([("PNG", _noisy("PNG")), ("JPEG", _middle(_noisy("JPEG"))), ("GIF", b"GIF89a")]):
        paths.append(tmp_path / f"{i}.{fmt.lower()}")
        paths[-1].write_bytes(data)
    results = inspect_images(paths)
    assert list(results) == paths
    assert results[paths[0]] == inspect_image(paths[0])
    for path in paths[1:]:
        with pytest.raises(ImageProblem) as info:
            inspect_image(path)
        assert str(results[path]) == str(info.value)
    copies = [tmp_path / f"copy{i}.png" for i in range(8)]
    for copy in copies:
        copy.write_bytes(paths[0].read_bytes())
    monkeypatch.setattr(Image, "MAX_IMAGE_PIXELS", 96 * 64 - 1)  # the warning band: refused, from threads too
    assert all("decompression-bomb" in str(r) for r in inspect_images(copies).values())


def _handmade_png(width: int, height: int, depth: int, colour: int, interlaced: bool, size_change: int = 0) -> bytes:
    """A PNG written by hand (Pillow writes no interlaced PNG): all-zero filtered rows, as many bytes
    as `filtered_size` says plus `size_change`."""
    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    bits = CHANNELS[colour] * depth
    rows = b"\0" * (filtered_size(width, height, bits, interlaced) + size_change)
    ihdr = struct.pack(">IIBBBBB", width, height, depth, colour, 0, 0, int(interlaced))
    palette = chunk(b"PLTE", b"\0\0\0" * 2 ** depth) if colour == 3 else b""
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + palette + chunk(b"IDAT", zlib.compress(rows))
            + chunk(b"IEND", b""))


@pytest.mark.parametrize("interlaced", [False, True], ids=["progressive", "adam7"])
@pytest.mark.parametrize(("width", "height"), [(1, 1), (3, 5), (9, 9), (37, 11), (640, 3)])
@pytest.mark.parametrize(("depth", "colour"), [(1, 0), (8, 2), (16, 6), (4, 3), (8, 4)])
def test_png_image_data_is_exactly_what_the_header_needs(tmp_path, width, height, depth, colour, interlaced):
    """Whole data decodes and passes (so `filtered_size` never asks for more than Pillow reads); a
    byte less, or a row less, is refused: Pillow's load() accepts most data that ends at a row's end."""
    path = tmp_path / "x.png"
    path.write_bytes(_handmade_png(width, height, depth, colour, interlaced))
    assert inspect_image(path).format == "PNG"
    assert png_data_problem(path.read_bytes()) is None
    row = 1 + (width * CHANNELS[colour] * depth + 7) // 8
    for short in (1, row):
        path.write_bytes(_handmade_png(width, height, depth, colour, interlaced, size_change=-short))
        with pytest.raises(ImageProblem, match=r"^is a corrupt PNG file: x.png (has image data that ends|does not)"):
            inspect_image(path)


def test_png_filtered_sizes_follow_the_png_specification():
    assert filtered_size(320, 240, 24, False) == 240 * (1 + 960)
    assert filtered_size(10, 1, 1, False) == 1 + 2  # 10 one-bit pixels fill 2 bytes
    # Adam7 on 8 x 8 one-byte pixels: passes of 1x1, 1x1, 2x1, 2x2, 4x2, 4x4, 8x4 pixels
    assert filtered_size(8, 8, 8, True) == (1 + 1) + (1 + 1) + (1 + 2) + 2 * (1 + 2) + 2 * (1 + 4) + 4 * (1 + 4) \
        + 4 * (1 + 8)
    assert filtered_size(1, 1, 8, True) == 2  # only the first pass holds a pixel
    assert png_data_problem(b"\x89PNG\r\n\x1a\n") == "has no valid IHDR chunk"
