import hashlib
import io

import pytest
from PIL import Image

from mobilemem.images import ImageProblem, build_index, image_for_model, inspect_image, reference_basename


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
