"""Hostile dataset input (issue 8): the preflight lists every problem as one line and raises
`DatasetError`, never anything else, and never reads outside the dataset folder.

Property-based variants live in `tests/property/test_dataset_hostile.py`.
"""

import io
import json
import os
import re
import shutil
import struct
import subprocess
import sys
import threading
import unicodedata
import zlib
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from conftest import ROOT
from mobilemem.dataset import Dataset, load_dataset
from mobilemem.dataset_checks import MAX_TURN_TEXT_CHARS
from mobilemem.errors import DatasetError
from mobilemem.images import inspect_image

ALLOWED_PREFIXES = ("data.jsonl:", "questions.jsonl:", "image/", "--users:")
HUGE = 4 * 1024 * 1024  # characters: a multi-MB string
DEEP = 100_000  # nesting levels
REF = "image/uid0/camera photos/0_event_1_1.png"  # data.jsonl:1, user 0, session 0_1, turn 3
REF_WHERE = "data.jsonl:1 user 0 session 0_1 turn 3"
REF_FILE = Path("image/uid0/camera_photos/0_event_1_1.png")  # where the archive put it


# ---------------------------------------------------------------- helpers


def _jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def _write_jsonl(path: Path, records: list[dict]) -> None:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records), encoding="utf-8")


def _check_problem_lines(root: Path, problems: list[str]) -> None:
    """Every problem is one printable line naming a file:line, an image path, --users or the folder."""
    assert problems
    for problem in problems:
        assert problem.startswith(ALLOWED_PREFIXES) or problem.startswith(str(root)), problem
        bad = [ch for ch in problem if unicodedata.category(ch) in {"Cc", "Cf", "Cs", "Zl", "Zp"}]
        assert not bad, f"control characters {bad!r} in problem {problem[:200]!r}"


def _problems(root: Path, **kwargs) -> list[str]:
    with pytest.raises(DatasetError) as info:
        load_dataset(root, **kwargs)
    _check_problem_lines(root, info.value.problems)
    return info.value.problems


def _image_turn(records: list[dict], ref: str) -> dict:
    return next(t for u in records for s in u["sessions"] for t in s["dialogue"] if t.get("image_inline") == ref)


def _set_ref(root: Path, ref: str, new: str) -> None:
    users = _jsonl(root / "data.jsonl")
    _image_turn(users, ref)["image_inline"] = new
    _write_jsonl(root / "data.jsonl", users)


def _append_line(path: Path, line: bytes) -> int:
    """Append a raw line; return its line number."""
    data = path.read_bytes()
    path.write_bytes(data + line + b"\n")
    return data.count(b"\n") + 1


def _load_guarded(root: Path, fifos: list[Path], seconds: float = 20.0) -> Dataset | DatasetError:
    """load_dataset in a thread: if it ever opens one of `fifos` (no writer) it blocks, which fails
    the test (and the FIFO is then released so the thread ends)."""
    outcome: list[object] = []

    def run() -> None:
        try:
            outcome.append(load_dataset(root))
        except DatasetError as exc:
            outcome.append(exc)
        except BaseException as exc:  # noqa: BLE001 - reported by the assertion below
            outcome.append(exc)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(seconds)
    if thread.is_alive():
        for fifo in fifos:  # unblock the reader so the thread can finish
            try:
                os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
            except OSError:
                pass
        thread.join(seconds)
        pytest.fail("load_dataset blocked: it opened a FIFO it must never read")
    [result] = outcome
    assert isinstance(result, (Dataset, DatasetError)), f"unexpected {type(result).__name__}: {result}"
    for fifo in fifos:  # no reader holds the FIFO open now either
        with pytest.raises(OSError):
            os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
    return result


# ---------------------------------------------------------------- JSONL lines


@pytest.mark.parametrize(
    ("line", "reason"),
    [
        pytest.param(b"1" * 5000, "not valid JSON", id="huge-int-literal"),
        pytest.param(b'{"uuid": ' + b"9" * 5000 + b', "language": "en", "sessions": []}', "not valid JSON",
                     id="huge-int-in-record"),
        pytest.param(b"[" * DEEP, "nested too deeply", id="deep-open-brackets"),
        pytest.param(b"[" * DEEP + b"]" * DEEP, "nested too deeply", id="deep-closed-brackets"),
        pytest.param(b'{"a":' * DEEP + b"1" + b"}" * DEEP, "nested too deeply", id="deep-objects"),
        pytest.param(b'{"uuid": 5, "language": "en", "sessions": ' + b"[" * DEEP + b"]" * DEEP + b"}",
                     "nested too deeply", id="deep-in-field"),
        pytest.param(b"\x00", "not valid JSON", id="nul"),
        pytest.param(b'{"uuid": 5,\x00 "language": "en", "sessions": []}', "not valid JSON", id="nul-inside"),
        pytest.param(b'{"uuid": 5, "language": "en\x00", "sessions": []}', "not valid JSON", id="nul-in-string"),
        pytest.param(b"\xff\xfe{}", "not UTF-8", id="utf16-bom"),
        pytest.param(b'{"uuid": 5, "language": "\xc3\x28", "sessions": []}', "not UTF-8", id="bad-utf8"),
        pytest.param(b"\xef\xbb\xbf{}", "not valid JSON", id="utf8-bom"),
        pytest.param(b'"' + b"x" * HUGE + b'"', "(record)", id="huge-string-line"),
        pytest.param(b'"' + b"x" * HUGE, "not valid JSON", id="huge-unterminated"),
        pytest.param(b"NaN", "(record)", id="nan"),
        pytest.param(b"null", "(record)", id="null"),
        pytest.param(b"[]", "(record)", id="empty-list"),
        pytest.param(b"\x1b[2J\x07", "not valid JSON", id="terminal-escapes"),
    ],
)
@pytest.mark.parametrize("name", ["data.jsonl", "questions.jsonl"])
def test_a_hostile_line_is_one_problem_at_its_line(sample_copy, name, line, reason):
    number = _append_line(sample_copy / name, line)
    [problem] = _problems(sample_copy)
    assert problem.startswith(f"{name}:{number}: ") and reason in problem, problem
    assert len(problem) < 500  # a huge value is never echoed


def test_crlf_blank_and_whitespace_lines_are_read_like_lf(sample_root, sample_copy):
    for name in ("data.jsonl", "questions.jsonl"):
        lines = (sample_copy / name).read_bytes().splitlines()
        (sample_copy / name).write_bytes(b"\r\n" + b"\r\n  \t\r\n".join(lines) + b"\r\n\r\n\n")
    assert load_dataset(sample_copy).users == load_dataset(sample_root).users
    with (sample_copy / "questions.jsonl").open("ab") as handle:
        handle.write(b"{\r\n")
    [problem] = _problems(sample_copy)
    assert problem.startswith("questions.jsonl:9: not valid JSON"), problem  # physical line numbers


def test_huge_strings_are_kept_or_refused_briefly(sample_copy):
    users = _jsonl(sample_copy / "data.jsonl")
    text_turn = next(t for t in users[0]["sessions"][0]["dialogue"] if t["content_type"] == "text")
    text_turn["content"] = "long " * (MAX_TURN_TEXT_CHARS // 5)  # the longest turn accepted
    users[0]["Basic_Profile"]["note"] = "n" * HUGE  # generator-side field: ignored
    _write_jsonl(sample_copy / "data.jsonl", users)
    dataset = load_dataset(sample_copy)
    assert max(len(t.text or "") for s in dataset.users[0].sessions for t in s.turns) == MAX_TURN_TEXT_CHARS

    text_turn["content"] = "long " * (HUGE // 5)
    users[0]["sessions"][1]["session_id"] = "s" * HUGE
    users[0]["sessions"][1]["event_end_time"] = "2024-01-01 " * (HUGE // 11)
    _image_turn(users, REF)["image_inline"] = "image/uid0/" + "p" * HUGE + ".png"
    _write_jsonl(sample_copy / "data.jsonl", users)
    problems = _problems(sample_copy)
    assert len(problems) == 4, problems
    assert all(len(p) < 1000 for p in problems), [p[:200] for p in problems]
    assert sum("MAX_TURN_TEXT_CHARS" in p for p in problems) == 1


def test_huge_user_id_is_refused(sample_copy):
    """A user id becomes a folder name of the run: one that no file system accepts is a preflight error."""
    users = _jsonl(sample_copy / "data.jsonl")
    questions = _jsonl(sample_copy / "questions.jsonl")
    users[2]["uuid"] = questions[2]["uuid"] = 10**300
    _write_jsonl(sample_copy / "data.jsonl", users)
    _write_jsonl(sample_copy / "questions.jsonl", questions)
    problems = _problems(sample_copy)
    assert [p.split(": ")[0:2] for p in problems] == [["data.jsonl:3 user " + str(10**300), "uuid"],
                                                        ["questions.jsonl:3 user " + str(10**300), "uuid"]]


@pytest.mark.parametrize("value", [None, 1, "0_1", [], True])
def test_a_session_that_is_not_an_object_is_reported_as_such(sample_copy, value):
    users = _jsonl(sample_copy / "data.jsonl")
    users[0]["sessions"][0] = value
    _write_jsonl(sample_copy / "data.jsonl", users)
    [problem] = _problems(sample_copy)
    assert problem.startswith("data.jsonl:1 user 0 session #1: sessions[0]: Input should be a valid dictionary"), problem


def test_sessions_of_an_invalid_user_line_are_still_checked(sample_copy):
    users = _jsonl(sample_copy / "data.jsonl")
    users[0]["language"] = "fr"
    del users[0]["sessions"][1]["event_start_time"]
    users[0]["sessions"][2]["dialogue"][0]["role"] = 3
    _write_jsonl(sample_copy / "data.jsonl", users)
    problems = _problems(sample_copy)
    assert problems == [
        "data.jsonl:1 user 0: language: Input should be 'en' or 'Chinese' (got 'fr')",
        "data.jsonl:1 user 0 session 0_2: sessions[1].event_start_time: field required",
        "data.jsonl:1 user 0 session 0_3 turn 1: sessions[2].dialogue[0].role: Input should be 'user' or "
        "'assistant' (got 3)",
    ]


@pytest.mark.parametrize("suffix", ["\n", "\r", "\t", " ", "\x00"])
def test_ids_with_a_trailing_control_character_are_refused(sample_copy, suffix):
    """Ids become file names: `0_1\\n` must not slip through a `$` that matches before a newline."""
    users = _jsonl(sample_copy / "data.jsonl")
    users[0]["sessions"][0]["session_id"] += suffix
    _write_jsonl(sample_copy / "data.jsonl", users)
    questions = _jsonl(sample_copy / "questions.jsonl")
    questions[1]["questions"][0]["question_id"] += suffix
    _write_jsonl(sample_copy / "questions.jsonl", questions)
    problems = _problems(sample_copy)
    assert [p.split(": ")[0:2] for p in problems] == [
        ["data.jsonl:1 user 0 session #1", "sessions[0].session_id"],
        ["questions.jsonl:2 user 1 question #1", "questions[0].question_id"],
    ]


def test_invalid_ids_never_break_the_one_line_per_problem_rule(sample_copy):
    users = _jsonl(sample_copy / "data.jsonl")
    users[0]["sessions"][0]["session_id"] = "a\nb\x1b[31m"
    users[0]["sessions"][0]["dialogue"][0]["role"] = "robot\nroot"
    _write_jsonl(sample_copy / "data.jsonl", users)
    questions = _jsonl(sample_copy / "questions.jsonl")
    questions[0]["questions"][0]["question_id"] = "q\r\n1"
    questions[0]["questions"][0]["question"] = 7
    _write_jsonl(sample_copy / "questions.jsonl", questions)
    problems = _problems(sample_copy)  # checks one printable line each
    assert len(problems) == 4, problems


# ---------------------------------------------------------------- images


def _encoded(fmt: str, size: tuple[int, int] = (32, 24), **kwargs) -> bytes:
    out = io.BytesIO()
    Image.new("RGB", size, (10, 200, 30)).save(out, format=fmt, **kwargs)
    return out.getvalue()


def _png_chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))


def _png_declaring(width: int, height: int) -> bytes:
    """A tiny PNG whose header (with valid CRCs) declares `width` x `height` pixels."""
    ihdr = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (b"\x89PNG\r\n\x1a\n" + _png_chunk(b"IHDR", ihdr) + _png_chunk(b"IDAT", zlib.compress(b""))
            + _png_chunk(b"IEND", b""))


def _gif_bomb() -> bytes:
    data = bytearray(_encoded("GIF"))
    data[6:10] = b"\xff\xff\xff\xff"  # logical screen 65535 x 65535
    return bytes(data)


def _jpeg_bomb() -> bytes:
    data = bytearray(_encoded("JPEG"))
    sof = data.find(b"\xff\xc0")
    data[sof + 5:sof + 9] = b"\xff\xff\xff\xff"  # frame 65535 x 65535
    return bytes(data)


def _dds_unknown_pixel_format() -> bytes:
    data = bytearray(_encoded("DDS"))
    data[80:84] = b"\0\0\0\0"  # pixel format flags: Pillow raises NotImplementedError
    return bytes(data)


def _jp2_huge_box() -> bytes:
    """A JPEG 2000 header whose jp2h box declares 2**60 bytes: Pillow raises MemoryError."""
    return (b"\x00\x00\x00\x0cjP  \r\n\x87\n" + b"\x00\x00\x00\x14ftypjp2 \x00\x00\x00\x00jp2 "
            + struct.pack(">I", 1) + b"jp2h" + struct.pack(">Q", 2**60) + b"\0" * 64)


BAD_IMAGES = {
    "zero-bytes": (lambda: b"", "is empty"),
    "text": (lambda: b"hello, I am not an image\n", "is not a readable image"),
    "html": (lambda: b"<!doctype html><html><body>hi</body></html>", "is not a readable image"),
    "zip": (lambda: (ROOT / "examples" / "sample" / "image.zip").read_bytes()[:4096], "is not a readable image"),
    "png-magic-only": (lambda: b"\x89PNG\r\n\x1a\n", "is not a readable image"),
    "truncated-png": (lambda: _encoded("PNG")[:-30], "truncated PNG"),
    "truncated-jpeg": (lambda: _encoded("JPEG")[:-2], "truncated JPEG"),
    "truncated-gif": (lambda: _encoded("GIF")[:-1], "truncated GIF"),
    "truncated-webp": (lambda: _encoded("WEBP")[:-20], "truncated WEBP|not a readable image"),
    "png-bomb": (lambda: _png_declaring(100_000, 100_000), "decompression-bomb"),
    "png-bomb-warning-band": (lambda: _png_declaring(10_000, 10_000), "decompression-bomb"),
    "gif-bomb": (_gif_bomb, "decompression-bomb"),
    "jpeg-bomb": (_jpeg_bomb, "decompression-bomb"),
    "bmp": (lambda: _encoded("BMP"), "has format BMP, which is not supported"),
    "tiff": (lambda: _encoded("TIFF"), "has format TIFF, which is not supported"),
    "ico": (lambda: _encoded("ICO"), "has format ICO, which is not supported"),
    "dds-not-implemented": (_dds_unknown_pixel_format, "has format DDS, which is not supported"),
    "jp2-memory-error": (_jp2_huge_box, "which is not supported"),
}


def test_every_bad_image_is_listed_once_and_refused(sample_copy):
    users = _jsonl(sample_copy / "data.jsonl")
    turns = [(u["uuid"], s["session_id"], t) for u in users for s in u["sessions"] for t in s["dialogue"]
             if t["content_type"] == "image" and "_event_" in t["image_inline"]]
    assert len(turns) >= len(BAD_IMAGES)
    expected = {}
    for (uid, sid, turn), (kind, (make, reason)) in zip(turns, BAD_IMAGES.items()):
        name = Path(turn["image_inline"]).name
        [path] = (sample_copy / "image" / f"uid{uid}").rglob(name)
        path.write_bytes(make())
        expected[kind] = (f"user {uid} session {sid} turn {turn['turn']}: image {turn['image_inline']!r} ", reason)
    problems = _problems(sample_copy)
    for kind, (where, reason) in expected.items():
        hits = [p for p in problems if where in p]
        assert len(hits) == 1 and re.search(reason, hits[0]), (kind, hits)
    assert len(problems) == len(BAD_IMAGES)


def _png_parts(data: bytes) -> list[tuple[bytes, bytes]]:
    """(type, body) of every chunk of a PNG file."""
    parts, pos = [], 8
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        parts.append((kind, data[pos + 8:pos + 8 + length]))
        pos += 12 + length
    return parts


def _noisy_png(**kwargs) -> bytes:
    """A 320 x 240 PNG by Pillow, noisy enough that its zlib stream spans several IDAT chunks."""
    pixels = np.random.default_rng(1).integers(0, 255, (240, 320, 3), dtype=np.uint8)
    out = io.BytesIO()
    Image.fromarray(pixels).save(out, format="PNG", **kwargs)
    return out.getvalue()


def _png_rebuilt(data: bytes, idat: bytes | None = None, keep=lambda kind, i: True) -> bytes:
    """`data` with its IDAT chunks replaced by one holding `idat` (if given), or only the chunks
    `keep` keeps; every chunk is written with a correct CRC."""
    parts = _png_parts(data)
    if idat is not None:
        first = next(i for i, (kind, _) in enumerate(parts) if kind == b"IDAT")
        parts = [p for p in parts[:first] if p[0] != b"IDAT"] + [(b"IDAT", idat)] + [
            p for p in parts[first:] if p[0] != b"IDAT"]
    return b"\x89PNG\r\n\x1a\n" + b"".join(_png_chunk(kind, body) for i, (kind, body) in enumerate(parts)
                                           if keep(kind, i))


def _png_stream(data: bytes) -> bytes:
    return b"".join(body for kind, body in _png_parts(data) if kind == b"IDAT")


def _png_ending_early(trailing: int = 0) -> bytes:
    """A complete zlib stream that holds only the first of 240 filtered rows (then `trailing` bytes
    of the original stream): the exact "zlib stream ends early" case, which Pillow's load()
    accepts, leaving the other 239 rows black."""
    data = _noisy_png()
    stream = _png_stream(data)
    return _png_rebuilt(data, idat=zlib.compress(zlib.decompress(stream)[:1 + 320 * 3]) + stream[:trailing])


def _png_stream_cut_in_half() -> bytes:
    data = _noisy_png()
    stream = _png_stream(data)
    return _png_rebuilt(data, idat=stream[:len(stream) // 2])


def _png_last_idat_dropped() -> bytes:
    data = _noisy_png()
    last = max(i for i, (kind, _) in enumerate(_png_parts(data)) if kind == b"IDAT")
    return _png_rebuilt(data, keep=lambda kind, i: i != last)


PNG_TRUNCATIONS = {
    "zlib-stream-ends-early": (_png_ending_early, "is a corrupt PNG file: [^ ]+ has image data that ends early: "
                                                  "its zlib stream holds 961 of the 230,640 bytes its 320 x 240 "
                                                  "pixels need$"),
    "zlib-stream-ends-early-then-bytes": (lambda: _png_ending_early(trailing=5000), "has image data that ends early"),
    "zlib-stream-cut": (_png_stream_cut_in_half, "does not decode \\(OSError: image file is truncated"),
    "last-idat-chunk-dropped": (_png_last_idat_dropped, "does not decode \\(OSError: image file is truncated"),
    "no-idat-chunk": (lambda: _png_rebuilt(_noisy_png(), keep=lambda kind, i: kind != b"IDAT"),
                      "is a corrupt PNG file"),
    "cut-inside-idat": (lambda: _noisy_png()[:len(_noisy_png()) // 2], "truncated PNG file"),
    "no-iend": (lambda: _noisy_png()[:-12], "truncated PNG file"),
}


def test_truncated_pngs_are_refused_one_line_each(sample_copy):
    """Every way a PNG can end early; those rebuilt keep a valid chunk structure with correct CRCs."""
    with Image.open(io.BytesIO(_png_ending_early())) as img:
        img.load()  # Pillow itself raises nothing here: the check is the runner's
    users = _jsonl(sample_copy / "data.jsonl")
    turns = [(u["uuid"], s["session_id"], t) for u in users for s in u["sessions"] for t in s["dialogue"]
             if t["content_type"] == "image"]
    expected = {}
    for (uid, sid, turn), (kind, (make, reason)) in zip(turns, PNG_TRUNCATIONS.items()):
        [path] = (sample_copy / "image" / f"uid{uid}").rglob(Path(turn["image_inline"]).name)
        path.write_bytes(make())
        expected[kind] = (f"user {uid} session {sid} turn {turn['turn']}: image {turn['image_inline']!r} ", reason)
    problems = _problems(sample_copy)
    assert len(problems) == len(PNG_TRUNCATIONS), problems
    for kind, (where, reason) in expected.items():
        [hit] = [p for p in problems if where in p]
        assert re.search(reason, hit), (kind, hit)


def test_pngs_as_pillow_writes_them_are_accepted(tmp_path):
    images = {"rgb": _noisy_png(), "optimized": _noisy_png(optimize=True), "fast": _noisy_png(compress_level=1)}
    for mode in ("1", "L", "P", "LA", "RGBA", "I;16"):
        out = io.BytesIO()
        Image.new(mode, (37, 11)).save(out, format="PNG")
        images[mode] = out.getvalue()
    for name, data in images.items():
        (tmp_path / f"{name}.png").write_bytes(data)
        assert inspect_image(tmp_path / f"{name}.png").format == "PNG", name


def test_lowered_bomb_limit_refuses_every_image_once(sample_root, monkeypatch):
    monkeypatch.setattr(Image, "MAX_IMAGE_PIXELS", 100)
    problems = _problems(sample_root)
    image_turns = [t for u in _jsonl(sample_root / "data.jsonl") for s in u["sessions"] for t in s["dialogue"]
                   if t["content_type"] == "image"]
    assert len(problems) == len(image_turns)
    assert all("exceeds Pillow's decompression-bomb limit" in p for p in problems)


# ---------------------------------------------------------------- links and special files


@pytest.fixture
def outside(tmp_path) -> Path:
    """A folder beside the dataset (outside it) holding a FIFO and a valid copy of the referenced image."""
    folder = tmp_path / "outside"
    folder.mkdir()
    os.mkfifo(folder / "fifo")
    return folder


def _link_instead_of_reference(dataset: Path, target: Path | str) -> Path:
    link = dataset / REF_FILE
    link.unlink()
    link.symlink_to(target)
    return link


@pytest.mark.parametrize("target", ["fifo", "copy", "relative", "broken", "dev-zero"])
def test_link_out_named_like_a_reference_is_listed_and_never_opened(sample_copy, outside, target):
    shutil.copy(sample_copy / REF_FILE, outside / "copy.png")
    destination = {"fifo": outside / "fifo", "copy": outside / "copy.png", "relative": "../../../../outside/fifo",
                   "broken": outside / "missing.png", "dev-zero": Path("/dev/zero")}[target]
    _link_instead_of_reference(sample_copy, destination)
    result = _load_guarded(sample_copy, [outside / "fifo"])
    assert isinstance(result, DatasetError)
    _check_problem_lines(sample_copy, result.problems)
    assert result.problems == [
        f"{REF_FILE.as_posix()}: is a symbolic link pointing outside the dataset",
        f"{REF_WHERE}: image {REF!r} matches no file under uid0/ in image/",
    ]


def test_links_to_outside_folders_are_listed_and_not_walked(sample_copy, outside):
    (outside / "uid0").mkdir()
    shutil.move(sample_copy / REF_FILE, outside / "uid0" / REF_FILE.name)  # a valid image, only out there
    (sample_copy / "image" / "uid0" / "etc").symlink_to("/etc")
    (sample_copy / "image" / "uid0" / "more").symlink_to(outside / "uid0")
    (sample_copy / "image" / "uid7").symlink_to(outside)
    problems = _problems(sample_copy)
    assert sorted(problems[:3]) == [  # the order within one folder is the file system's
        "image/uid0/etc: is a symbolic link pointing outside the dataset",
        "image/uid0/more: is a symbolic link pointing outside the dataset",
        "image/uid7: is a symbolic link pointing outside the dataset",
    ]
    assert problems[3:] == [f"{REF_WHERE}: image {REF!r} matches no file under uid0/ in image/"]


def test_fifo_and_inner_links_named_like_references_are_refused_without_reading(sample_copy):
    fifo = sample_copy / "fifo"
    os.mkfifo(fifo)
    _link_instead_of_reference(sample_copy, "../../../fifo")  # a link that stays inside the dataset
    second = sample_copy / "image" / "uid0" / "camera_photos" / "0_event_1_2.png"
    second.unlink()
    os.mkfifo(second)  # the file itself is a FIFO
    result = _load_guarded(sample_copy, [fifo, second])
    assert isinstance(result, DatasetError)
    _check_problem_lines(sample_copy, result.problems)
    assert result.problems == [
        f"{REF_WHERE}: image {REF!r} is not a regular file",
        "data.jsonl:1 user 0 session 0_1 turn 5: image 'image/uid0/camera photos/0_event_1_2.png' is not a "
        "regular file",
    ]


def test_link_loops_do_not_crash_the_walk(sample_copy):
    folder = sample_copy / "image" / "uid0" / "camera_photos"
    (folder / "a.png").symlink_to("b.png")
    (folder / "b.png").symlink_to("a.png")
    (folder / "self").symlink_to("self")
    (folder / "up").symlink_to("..")
    assert len(load_dataset(sample_copy).users) == 3  # nothing referenced: walked, not followed

    _link_instead_of_reference(sample_copy, REF_FILE.name)  # the referenced name links to itself
    assert _problems(sample_copy) == [f"{REF_WHERE}: image {REF!r} is not a regular file"]


# ---------------------------------------------------------------- references and file names


@pytest.mark.parametrize(
    "ref",
    [
        "image/uid0/../../../../etc/passwd",
        "/etc/passwd",
        "/etc/",
        "image/uid0/%2e%2e/%2e%2e/%2e%2e/etc/passwd",
        "%2e%2e%2f%2e%2e%2fdata.jsonl",
        "..\\..\\..\\data.jsonl",
        "C:\\Windows\\win.ini",
        "file:///etc/hostname",
        "image/uid0/a\x00b.png",
        "image/uid0/\x1b[2Jx.png",
        "image/uid0/x\ny.png",
        "image/uid0/..",
        "image/uid0/.",
        "..",
        "",
        "image/uid1/camera photos/1_event_1_2.png",  # another user's file
        "../data.jsonl",
        "image.zip",
        "uid0",
        "camera_photos",
        "image/uid0/" + "\u202e" + "gnp.1_1_tneve_0",
    ],
)
def test_hostile_references_are_refused_with_one_line(sample_copy, ref):
    _set_ref(sample_copy, REF, ref)
    [problem] = _problems(sample_copy)
    assert problem.startswith(f"{REF_WHERE}: "), problem


@pytest.mark.parametrize(
    "ref",
    [
        "../../../../etc/0_event_1_1.png",
        "/abs/where/ever/0_event_1_1.png",
        "C:\\photos\\0_event_1_1.png",
        "%2e%2e/%2e%2e/0_event_1_1.png",
        "image/uid1/camera photos/0_event_1_1.png",  # another user's folder name: still uid0's file
        "0_event_1_1.png",
    ],
)
def test_references_resolve_only_by_basename_inside_the_users_folder(sample_copy, ref):
    _set_ref(sample_copy, REF, ref)
    dataset = load_dataset(sample_copy)
    session = next(s for s in dataset.users[0].sessions if s.session_id == "0_1")
    image = next(t.image for t in session.turns if t.turn == 3)
    assert image.image_id == ref and image.path == REF_FILE.as_posix()


def test_hostile_file_names_in_the_extracted_folder_do_not_crash_the_walk(sample_copy):
    folder = os.fsencode(sample_copy / "image" / "uid0" / "camera_photos")
    for name in (b"ctl\x01\x1b[31m.png", b"new\nline.png", b"back\\slash.png", b"\xff\xfe-not-utf8.png",
                 b"%2e%2e", b"...", b" ", b"\xe2\x80\xae.png"):
        with open(os.path.join(folder, name), "wb") as handle:
            handle.write(b"junk")
    os.mkdir(os.path.join(folder, b"dir\n\xff"))
    assert len(load_dataset(sample_copy).users) == 3

    # the same names, now in the way of a reference: the problem stays one printable line
    twin = os.path.join(folder, b"dir\n\xff", os.fsencode(REF_FILE.name))
    shutil.copy(sample_copy / REF_FILE, os.fsdecode(twin))
    os.symlink(b"/etc/passwd", os.path.join(folder, b"link\n\x1b[2J"))
    problems = _problems(sample_copy)
    assert len(problems) == 2, problems
    assert problems[0].startswith("image/uid0/camera_photos/") and "symbolic link pointing outside" in problems[0]
    assert problems[1].startswith(f"{REF_WHERE}: image {REF!r} matches 2 files: ")


def test_only_ascii_uid_folders_are_user_folders(sample_copy):
    """`uid٠` (an Arabic-Indic zero) is not user 0's folder: its files must not make uid0's ambiguous."""
    lookalike = sample_copy / "image" / "uid\u0660" / "camera_photos"
    lookalike.mkdir(parents=True)
    shutil.copy(sample_copy / REF_FILE, lookalike / REF_FILE.name)
    assert len(load_dataset(sample_copy).users) == 3


# ---------------------------------------------------------------- the command line


def test_cli_lists_every_problem_of_a_hostile_dataset_without_traceback(sample_copy, tmp_path):
    data = sample_copy / "data.jsonl"
    _append_line(data, b"9" * 5000)  # line 4
    _append_line(data, b"[" * DEEP)  # line 5
    _append_line(data, b'{"uuid": 9,\x00}')  # line 6
    _link_instead_of_reference(sample_copy, REF_FILE.name)  # a loop
    (sample_copy / "image" / "uid1" / "etc").symlink_to("/etc")
    dds = next((sample_copy / "image" / "uid2").rglob("2_event_1_1.png"))
    dds.write_bytes(_dds_unknown_pixel_format())
    result = subprocess.run([sys.executable, "flows/mobilemem.py", "--dataset", str(sample_copy), "--output",
                             str(tmp_path / "out"), "--simulate"], cwd=ROOT, capture_output=True, text=True,
                            timeout=120)
    assert result.returncode == 1
    assert "Traceback" not in result.stderr + result.stdout
    header, *lines = result.stderr.splitlines()
    assert header == f"mobilemem: refused to start: the dataset cannot be evaluated: {len(lines)} problems"
    _check_problem_lines(sample_copy, lines)
    expected = [
        "data.jsonl:4: not valid JSON",
        "data.jsonl:5: JSON nested too deeply",
        "data.jsonl:6: not valid JSON",
        "image/uid1/etc: is a symbolic link pointing outside the dataset",
        f"{REF_WHERE}: image {REF!r} is not a regular file",
        "data.jsonl:3 user 2 session 2_1 turn 3: image 'image/uid2/camera photos/2_event_1_1.png' has format DDS",
    ]
    assert len(lines) == len(expected)
    for fragment, line in zip(expected, lines):
        assert line.startswith(fragment), (fragment, line)
    assert not (tmp_path / "out").exists()
