"""The verified-image cache (mobilemem.image_cache) and the decoding threads (mobilemem.images).

Files written by a test are seconds old at most, which the cache never records (`SETTLE_NS`: a
second write in the same timestamp tick would go unseen); the tests that need a record set it to 0
and, before changing a recorded file, wait until the file system's clock has moved on."""

import io
import json
import os
import shutil

import numpy as np
import pytest
from PIL import Image

from mobilemem import image_cache
from mobilemem.dataset import load_dataset
from mobilemem.image_cache import cache_dir, cache_file, verify_images
from mobilemem.images import ImageInfo, ImageProblem, inspect_image, inspect_images
from mobilemem.records import ImageCacheFile
from mobilemem.rundir import read_record, write_record


def _picture(fmt: str, seed: int = 1) -> bytes:
    image = Image.fromarray(np.random.default_rng(seed).integers(0, 255, (48, 64, 3), dtype=np.uint8))
    kwargs = {"save_all": True, "append_images": [image.rotate(90)]} if fmt == "MPO" else {}
    out = io.BytesIO()
    (image.convert("P") if fmt == "GIF" else image).save(out, format=fmt, **kwargs)
    return out.getvalue()


@pytest.fixture
def cache(tmp_path, monkeypatch):
    folder = tmp_path / "cache"
    monkeypatch.setenv("MOBILEMEM_CACHE_DIR", str(folder))
    return folder


@pytest.fixture
def settled(monkeypatch):
    monkeypatch.setattr(image_cache, "SETTLE_NS", 0)  # these files are recorded however recent


def _dataset(tmp_path, files: dict[str, bytes]):
    root = tmp_path / "data"
    for name, data in files.items():
        (root / "image" / "uid0" / name).parent.mkdir(parents=True, exist_ok=True)
        (root / "image" / "uid0" / name).write_bytes(data)
    return root, [root / "image" / "uid0" / name for name in files]


def _clock_moves_past(path, after_ns: int) -> None:
    """Wait until a write in `path`'s folder gets a ctime later than `after_ns` (a timestamp tick)."""
    probe = path.with_name(".probe")
    for _ in range(1_000_000):
        probe.write_bytes(b"")
        if os.lstat(probe).st_ctime_ns > after_ns:
            probe.unlink()
            return
    raise AssertionError("the file system's clock did not move")


def test_an_unchanged_file_is_taken_from_the_cache_unread(tmp_path, cache, settled):
    root, paths = _dataset(tmp_path, {"a.jpg": _picture("JPEG"), "b.png": _picture("PNG")})
    first = verify_images(paths, root)
    assert (first.from_cache, first.decoded) == (0, 2)
    again = verify_images(paths, root)
    assert (again.from_cache, again.decoded) == (2, 0)
    assert again.results == first.results == {p: inspect_image(p) for p in paths}
    # the cache is trusted as it is: a recorded verdict comes back without the file being read
    recorded = read_record(cache_file(root), ImageCacheFile)
    forged = {**recorded.images, "image/uid0/a.jpg": recorded.images["image/uid0/a.jpg"].model_copy(
        update={"sha256": "0" * 64})}
    write_record(cache_file(root), recorded.model_copy(update={"images": forged}))
    assert verify_images(paths, root).results[paths[0]].sha256 == "0" * 64
    assert verify_images(paths[:1], root, use_cache=False).results[paths[0]].sha256 == first.results[paths[0]].sha256
    refreshed = verify_images(paths, root)  # the full check rewrote its image's entry and kept the other
    assert (refreshed.from_cache, refreshed.results) == (2, first.results)


def test_a_file_rewritten_with_its_size_and_mtime_restored_is_checked_again(tmp_path, cache, settled):
    root, [path] = _dataset(tmp_path, {"a.jpg": _picture("JPEG")})
    verify_images([path], root)
    before = os.lstat(path)
    _clock_moves_past(path, before.st_ctime_ns)
    path.write_bytes(b"\xff\xd8" + b"\0" * (before.st_size - 2))  # garbage of the same size
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))  # as cp -p, rsync -t, touch -r leave it
    assert os.lstat(path).st_size == before.st_size and os.lstat(path).st_mtime_ns == before.st_mtime_ns
    checked = verify_images([path], root)
    assert (checked.from_cache, checked.decoded) == (0, 1)
    assert isinstance(checked.results[path], ImageProblem)
    assert "image/uid0/a.jpg" not in read_record(cache_file(root), ImageCacheFile).images  # the success is gone


def test_a_touched_file_is_checked_again(tmp_path, cache, settled):
    root, [path] = _dataset(tmp_path, {"a.png": _picture("PNG")})
    verify_images([path], root)
    stat = os.lstat(path)
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000_000))
    assert verify_images([path], root).decoded == 1


def test_a_file_changed_moments_ago_is_not_recorded(tmp_path, cache):
    root, [path] = _dataset(tmp_path, {"a.png": _picture("PNG")})
    assert isinstance(verify_images([path], root).results[path], ImageInfo)
    assert verify_images([path], root).decoded == 1  # a second write within its timestamp tick would go unseen
    assert not cache_file(root).exists()


def test_a_problem_is_never_cached(tmp_path, cache, settled):
    good = _picture("JPEG")
    root, paths = _dataset(tmp_path, {"cut.jpg": good[: len(good) // 2], "fine.jpg": good})
    for _ in range(2):
        checked = verify_images(paths, root)
        assert isinstance(checked.results[paths[0]], ImageProblem)
    assert checked.decoded == 1  # the truncated file, checked again each time
    assert list(read_record(cache_file(root), ImageCacheFile).images) == ["image/uid0/fine.jpg"]


@pytest.mark.parametrize("damage", ["garbage", "truncated", "foreign", "newer", "wrong_types", "symlink"])
def test_a_damaged_or_foreign_cache_file_is_ignored(tmp_path, cache, settled, damage):
    root, paths = _dataset(tmp_path, {"a.jpg": _picture("JPEG"), "b.gif": _picture("GIF")})
    truth = verify_images(paths, root).results
    file = cache_file(root)
    recorded = json.loads(file.read_text())
    target = tmp_path / "elsewhere.json"
    if damage == "symlink":
        target.write_text(file.read_text())
        file.unlink()
        file.symlink_to(target)
    else:
        text = {"garbage": "\0\xff not json", "truncated": file.read_text()[:-40],
                "foreign": json.dumps({**recorded, "dataset_root": str(tmp_path / "other")}),
                "newer": json.dumps({**recorded, "schema_version": 99}),
                "wrong_types": json.dumps({**recorded, "images": {k: {**v, "width": "64"}
                                                                  for k, v in recorded["images"].items()}})}[damage]
        file.write_text(text, encoding="utf-8", errors="surrogateescape")
    checked = verify_images(paths, root)
    assert (checked.from_cache, checked.decoded) == (0, 2)
    assert checked.results == truth
    assert not file.is_symlink() and read_record(file, ImageCacheFile).dataset_root == str(root.resolve())
    if damage == "symlink":
        assert json.loads(target.read_text()) == recorded  # replaced, never written through


def test_a_name_that_is_not_utf8_is_checked_but_not_recorded(tmp_path, cache, settled):
    root, [path] = _dataset(tmp_path, {os.fsdecode(b"\xff.png"): _picture("PNG")})
    assert isinstance(verify_images([path], root).results[path], ImageInfo)
    assert verify_images([path], root).decoded == 1


def test_the_cache_folder_follows_the_environment(tmp_path, monkeypatch):
    monkeypatch.delenv("MOBILEMEM_CACHE_DIR", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    assert cache_dir() == tmp_path / "home" / ".cache" / "mobilemem"
    monkeypatch.setenv("XDG_CACHE_HOME", "relative/is/ignored")
    assert cache_dir() == tmp_path / "home" / ".cache" / "mobilemem"
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cache_dir() == tmp_path / "xdg" / "mobilemem"
    monkeypatch.setenv("MOBILEMEM_CACHE_DIR", str(tmp_path / "own"))
    assert cache_dir() == tmp_path / "own"
    assert cache_file(tmp_path / "a") != cache_file(tmp_path / "b")
    assert cache_file(tmp_path / "a").parent == tmp_path / "own"


def test_the_threads_give_what_one_check_at_a_time_gives(tmp_path, monkeypatch):
    files = {f"{fmt}.img": _picture(fmt) for fmt in ("JPEG", "PNG", "GIF", "WEBP", "MPO")}
    jpeg = files["JPEG.img"]
    files |= {"cut.jpg": jpeg[:-300], "empty.png": b"", "text.png": b"hello", "bmp.png": _bmp(),
              "middle.jpg": jpeg[:400] + b"\xff\x00\x13" * 50 + jpeg[550:], "name\x1b[31m.png": b"\x89PNG\r\n\x1a\n"}
    _, paths = _dataset(tmp_path, files)
    (tmp_path / "link.png").symlink_to(paths[0])
    paths += [tmp_path / "link.png", tmp_path / "missing.png", tmp_path]
    one_by_one = {p: _checked(p) for p in paths}
    pooled = inspect_images(paths, threads=4)
    assert list(pooled) == paths
    assert {p: _shown(r) for p, r in pooled.items()} == {p: _shown(r) for p, r in one_by_one.items()}
    assert sum(isinstance(r, ImageInfo) for r in pooled.values()) == 5
    monkeypatch.setattr(Image, "MAX_IMAGE_PIXELS", 48 * 64 - 1)  # the warning band: refused from threads too
    assert all("decompression-bomb" in str(r) for r in inspect_images(paths[:5], threads=4).values())


def test_load_dataset_takes_the_cache_unless_told_not_to(sample_copy, cache, settled):
    dataset = load_dataset(sample_copy)
    recorded = read_record(cache_file(sample_copy), ImageCacheFile)
    forged = {key: entry.model_copy(update={"sha256": "0" * 64}) for key, entry in recorded.images.items()}
    assert forged.keys() == dataset.image_sha256.keys()
    write_record(cache_file(sample_copy), recorded.model_copy(update={"images": forged}))
    assert set(load_dataset(sample_copy).image_sha256.values()) == {"0" * 64}
    assert load_dataset(sample_copy, image_cache=False).image_sha256 == dataset.image_sha256
    shutil.rmtree(cache)
    assert load_dataset(sample_copy).image_sha256 == dataset.image_sha256


def _bmp() -> bytes:
    out = io.BytesIO()
    Image.new("RGB", (4, 4)).save(out, format="BMP")
    return out.getvalue()


def _checked(path):
    try:
        return inspect_image(path)
    except ImageProblem as exc:
        return exc


def _shown(result):
    return result if isinstance(result, ImageInfo) else ("problem", str(result))
