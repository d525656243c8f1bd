"""Properties of the dataset preflight under hostile input (issue 8).

Invariant everywhere: `load_dataset` returns, or raises `DatasetError` whose every problem is one
printable line starting with `data.jsonl:`, `questions.jsonl:`, `image/`, `--users:` or the folder.
Where the outcome is predictable (a required field broken, a field the runner ignores changed,
NUL or non-UTF-8 bytes in a line), the test also checks which one it is and which line is named.
"""

import io
import json
import os
import shutil
import struct
import unicodedata
import zlib
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from PIL import Image

from mobilemem.dataset import Dataset, load_dataset
from mobilemem.dataset_records import id_problem
from mobilemem.errors import DatasetError
from mobilemem.images import SUPPORTED_FORMATS, ImageProblem, inspect_image

# Slow, large examples on purpose (MB strings, deep nesting); the example budget comes from the
# suite's profile (tests/conftest.py: "ci" under CI=true, "dev" otherwise).
HOSTILE = settings(deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

FILES = ("data.jsonl", "questions.jsonl")
ALLOWED_PREFIXES = ("data.jsonl:", "questions.jsonl:", "image/", "--users:")


# ---------------------------------------------------------------- fixtures and helpers


@pytest.fixture(scope="module")
def scratch(sample_root, tmp_path_factory) -> Path:
    """One copy of the sample per module; every example rewrites both JSONL files before loading."""
    target = tmp_path_factory.mktemp("hostile") / "MobileMem-Omni"
    shutil.copytree(sample_root, target, symlinks=True)
    return target


class _Lines(dict):
    """The sample's lines per file; shown briefly when hypothesis reports a failing example."""

    def __repr__(self) -> str:
        return "<the sample's JSONL lines>"


@pytest.fixture(scope="module")
def originals(sample_root) -> dict[str, list[bytes]]:
    return _Lines({name: (sample_root / name).read_bytes().splitlines() for name in FILES})


@pytest.fixture(scope="module")
def baseline(sample_root) -> Dataset:
    return load_dataset(sample_root)


def _write(root: Path, originals: dict[str, list[bytes]], **replaced: bytes) -> None:
    for name in FILES:
        key = name.split(".")[0]
        (root / name).write_bytes(replaced.get(key, b"\n".join(originals[name]) + b"\n"))


def _outcome(root: Path) -> tuple[Dataset | None, list[str]]:
    """(dataset, []) or (None, problems), checking the problem-line invariant and that an accepted
    dataset's views can be written; anything else escapes."""
    try:
        dataset = load_dataset(root)
    except DatasetError as exc:
        problems = exc.problems
    else:  # what preflight accepts can be written: every view is what job.json, requests and records hold
        for view in [*dataset.users, *dataset.judge_questions.values()]:
            view.model_dump_json().encode("utf-8")
        return dataset, []
    assert problems
    for problem in problems:
        assert problem.startswith(ALLOWED_PREFIXES) or problem.startswith(str(root)), problem[:300]
        bad = [ch for ch in problem if unicodedata.category(ch) in {"Cc", "Cf", "Cs", "Zl", "Zp"}]
        assert not bad, f"control characters {bad!r} in {problem[:300]!r}"
    return None, problems


def _names_line(problems: list[str], name: str, number: int) -> bool:
    return any(p.startswith((f"{name}:{number}:", f"{name}:{number} ")) for p in problems)


# ---------------------------------------------------------------- arbitrary JSON lines

SCALARS = (st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=12))
KEYS = st.sampled_from(["uuid", "language", "sessions", "questions", "dialogue", "session_id", "turn",
                        "content_type", "image_inline", "question_id", "answer"]) | st.text(max_size=6)
JSON = st.recursive(SCALARS, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(KEYS, inner, max_size=4),
                    max_leaves=12)
RAW_FRAGMENTS = st.sampled_from([b"[" * 50_000, b"{" * 3, b"9" * 4400, b"\x00", b"\xff", b"\r", b"\x1b[2J",
                                 b'"\\ud800"', b"NaN", b"-Infinity", b"1e99999", b"\xef\xbb\xbf{}", b"  "])


@HOSTILE
@given(which=st.sampled_from(["data", "questions"]), data=st.data())
def test_arbitrary_lines_never_escape_as_another_exception(scratch, originals, which, data):
    name = f"{which}.jsonl"
    original = st.sampled_from(originals[name])
    hostile = JSON.map(lambda v: json.dumps(v, ensure_ascii=False).encode()) | RAW_FRAGMENTS
    lines = data.draw(st.lists(original | hostile, min_size=1, max_size=6))
    _write(scratch, originals, **{which: b"\n".join(lines) + b"\n"})
    dataset, problems = _outcome(scratch)
    for number, line in enumerate(lines, start=1):
        try:
            is_object = isinstance(json.loads(line.decode("utf-8")), dict)
        except (ValueError, RecursionError):
            is_object = False
        if line.strip() and not is_object:
            assert _names_line(problems, name, number), (number, line[:80], problems)


# ---------------------------------------------------------------- mutated records

USER_REQUIRED = {("uuid",), ("language",), ("sessions",), ("sessions", "*", "session_id"),
                 ("sessions", "*", "event_start_time"), ("sessions", "*", "event_end_time"),
                 ("sessions", "*", "dialogue"), ("sessions", "*", "dialogue", "*", "turn"),
                 ("sessions", "*", "dialogue", "*", "role"), ("sessions", "*", "dialogue", "*", "content_type"),
                 ("sessions", "*", "dialogue", "*", "content"), ("sessions", "*", "dialogue", "*", "image_inline")}
USER_ITEMS = {("sessions", "*"), ("sessions", "*", "dialogue", "*")}  # objects inside a required list
QUESTION_REQUIRED = {("uuid",), ("language",), ("questions",), ("questions", "*", "question_id"),
                     ("questions", "*", "question"), ("questions", "*", "question_type")}
QUESTION_OPTIONAL = {("questions", "*", key) for key in ("question_format", "difficulty", "language")}
TYPES = {"null": st.none(), "bool": st.booleans(), "int": st.integers(), "float": st.floats(allow_nan=False),
         "str": st.text(max_size=10), "list": st.lists(SCALARS, max_size=3),
         "dict": st.dictionaries(st.text(max_size=5), SCALARS, max_size=3)}


def _type(value) -> str:
    if value is None:
        return "null"
    return {bool: "bool", int: "int", float: "float", str: "str", list: "list", dict: "dict"}[type(value)]


def _paths(value, prefix=()):
    children = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    for key, child in children:
        yield (*prefix, key)
        yield from _paths(child, (*prefix, key))


def _expect_failure(which: str, shape: tuple, mutation: str, old, new) -> bool | None:
    """True: the load must fail; False: it must succeed (an ignored field); None: either."""
    numeric = _type(new) in {"int", "float"}
    textual = {"int": False, "float": False, "str": False, "list": None}.get(_type(new), True)
    if which == "data":
        if shape in USER_REQUIRED:
            return True
        if shape in USER_ITEMS:
            return mutation != "delete"
        return False
    if shape in QUESTION_REQUIRED:
        return True
    if shape == ("questions", "*"):
        return mutation != "delete"
    if shape == ("questions", "*", "answer"):  # str | list[str]; numbers are read as text
        return {"replace": textual, "delete": True, "nest_dict": True,
                "nest_list": None if isinstance(old, str) else True}[mutation]
    if shape == ("questions", "*", "answer", "*"):
        return {"replace": not numeric, "delete": False}.get(mutation, True)
    if shape in QUESTION_OPTIONAL:
        return {"replace": new is not None, "delete": False}.get(mutation, True)
    if shape == ("questions", "*", "evidence"):
        return mutation != "delete"
    if shape == ("questions", "*", "evidence", "*"):
        return mutation in {"replace", "nest_list"}
    return False


def _mutate(record, path, mutation, new):
    *parents, last = path
    holder = record
    for key in parents:
        holder = holder[key]
    if mutation == "delete":
        del holder[last]
    else:
        holder[last] = {"replace": new, "nest_list": [holder[last]], "nest_dict": {"v": holder[last]}}[mutation]


@HOSTILE
@given(which=st.sampled_from(["data", "questions"]), data=st.data())
def test_mutating_any_field_of_a_valid_record(scratch, originals, which, data):
    """Replace a field by a value of another type, delete it or nest it: a required field always
    fails on its own line, a field the runner ignores never matters, and nothing else escapes."""
    name = f"{which}.jsonl"
    index = data.draw(st.integers(0, len(originals[name]) - 1), label="line")
    record = json.loads(originals[name][index])
    path = data.draw(st.sampled_from(list(_paths(record))), label="path")
    mutation = data.draw(st.sampled_from(["replace", "delete", "nest_list", "nest_dict"]), label="mutation")
    old = record
    for key in path:
        old = old[key]
    new = data.draw(st.sampled_from(sorted(set(TYPES) - {_type(old)})).flatmap(TYPES.get), label="new")
    _mutate(record, path, mutation, new)
    lines = list(originals[name])
    lines[index] = json.dumps(record, ensure_ascii=False).encode()
    _write(scratch, originals, **{which: b"\n".join(lines) + b"\n"})

    dataset, problems = _outcome(scratch)
    shape = tuple("*" if isinstance(key, int) else key for key in path)
    expected = _expect_failure(which, shape, mutation, old, new)
    if expected is True:
        assert dataset is None and _names_line(problems, name, index + 1), (shape, mutation, new, problems)
    elif expected is False:
        assert dataset is not None, (shape, mutation, new, problems)


# ---------------------------------------------------------------- bytes, NUL, CRLF and blank lines


@HOSTILE
@given(data=st.data())
def test_crlf_and_blank_lines_change_nothing_but_physical_line_numbers(scratch, originals, baseline, data):
    written, physical = {}, {}
    for name in FILES:
        out, numbers = [], []
        for line in originals[name]:
            blanks = data.draw(st.lists(st.sampled_from([b"", b" ", b"\t", b"\r", b" \r", b"\x0c"]), max_size=2))
            for blank in blanks:
                out.append(blank + data.draw(st.sampled_from([b"\n", b"\r\n"])))
            numbers.append(len(out) + 1)
            out.append(line + data.draw(st.sampled_from([b"\n", b"\r\n"])))
        written[name], physical[name] = out, numbers
    _write(scratch, originals, **{n.split(".")[0]: b"".join(lines) for n, lines in written.items()})
    dataset, problems = _outcome(scratch)
    assert dataset is not None, problems
    assert dataset.users == baseline.users and dataset.judge_questions == baseline.judge_questions

    name = data.draw(st.sampled_from(FILES))
    which = data.draw(st.integers(0, len(physical[name]) - 1))
    lines = written[name]
    position = physical[name][which] - 1
    lines[position] = lines[position].rstrip(b"\r\n") + b"}" + lines[position][-1:]  # trailing garbage
    (scratch / name).write_bytes(b"".join(lines))
    _, problems = _outcome(scratch)
    assert f"{name}:{physical[name][which]}: not valid JSON" in "\n".join(problems), problems


@HOSTILE
@given(data=st.data())
def test_bytes_inserted_into_a_line(scratch, originals, data):
    """NUL or bytes that are not UTF-8 anywhere in a record line are reported at that line."""
    name = data.draw(st.sampled_from(FILES))
    lines = list(originals[name])
    index = data.draw(st.integers(0, len(lines) - 1))
    junk = data.draw(st.binary(min_size=1, max_size=8).filter(lambda b: b"\n" not in b)
                     | st.sampled_from([b"\x00", b"\xff", b"\xc3", b"\xed\xa0\x80", b"\r", b"\x1b"]))
    at = data.draw(st.integers(0, len(lines[index])))
    lines[index] = lines[index][:at] + junk + lines[index][at:]
    _write(scratch, originals, **{name.split(".")[0]: b"\n".join(lines) + b"\n"})
    _, problems = _outcome(scratch)
    try:
        lines[index].decode("utf-8")
        broken = b"\x00" in lines[index]
    except UnicodeDecodeError:
        broken = True
    if broken:
        assert _names_line(problems, name, index + 1), problems


# ---------------------------------------------------------------- references and file names

REF_TOKENS = st.sampled_from(["/", "\\", ".", "..", "%2e", "%2f", "%5c", ":", "~", " ", "C:", "file://", "uid1",
                              "uid0", "image", "etc", "passwd", "\x00", "\x1b", "\n", "\x7f", "\u202e", "é", "照"])
BASENAMES = ["0_event_1_1.png", "0_event_2_1.jpg", "1_event_1_2.png", "data.jsonl", "image.zip", "camera_photos"]


@HOSTILE
@given(prefix=st.lists(REF_TOKENS, max_size=8).map("".join), suffix=st.sampled_from(["", *BASENAMES]))
def test_a_reference_resolves_by_basename_inside_its_users_folder_or_is_refused(scratch, originals, prefix,
                                                                                 suffix):
    reference = prefix + suffix
    user = json.loads(originals["data.jsonl"][0])
    turn = user["sessions"][0]["dialogue"][2]
    assert turn["content_type"] == "image"
    turn["image_inline"] = reference
    lines = [json.dumps(user, ensure_ascii=False).encode(), *originals["data.jsonl"][1:]]
    _write(scratch, originals, data=b"\n".join(lines) + b"\n")

    dataset, problems = _outcome(scratch)
    basename = reference.replace("\\", "/").rsplit("/", 1)[-1]
    user_files = {p.name for p in (scratch / "image" / "uid0").rglob("*") if p.is_file()}
    if any(ord(ch) < 32 for ch in reference) or basename not in user_files:
        assert problems == [p for p in problems if p.startswith("data.jsonl:1 user 0 session 0_1 turn 3: ")]
        assert len(problems) == 1, problems
    else:
        session = next(s for s in dataset.users[0].sessions if s.session_id == "0_1")
        image = next(t.image for t in session.turns if t.turn == 3)
        assert image.image_id == reference
        assert image.path.startswith("image/uid0/") and Path(image.path).name == basename


NAMES = (st.binary(min_size=1, max_size=16).filter(lambda b: b"/" not in b and b"\0" not in b and b not in {b".", b".."})
         | st.sampled_from([b"0_event_1_1.png", b"0_event_3_2.png", b"\xe2\x80\xae.png", b"a\nb", b"\x1b[2J"]))


@HOSTILE
@given(folder=NAMES, names=st.lists(NAMES, max_size=4, unique=True), link=st.booleans())
def test_hostile_file_names_never_crash_the_walk(scratch, originals, folder, names, link):
    _write(scratch, originals)
    junk = os.path.join(os.fsencode(scratch / "image" / "uid0"), b"junk", folder)
    os.makedirs(junk)
    try:
        for name in names:
            target = os.path.join(junk, name)
            if link:
                os.symlink(b"/etc/hostname", target)
            else:
                with open(target, "wb") as handle:
                    handle.write(b"not an image")
        dataset, problems = _outcome(scratch)
        referenced = {"0_event_1_1.png", "0_event_3_2.png"}
        clash = {os.fsdecode(n) for n in names} & referenced
        if link:
            assert len([p for p in problems if "symbolic link pointing outside" in p]) == len(names)
        if clash and not link:
            assert sum("matches 2 files" in p for p in problems) == len(clash), problems
        if not names or (not link and not clash):
            assert dataset is not None, problems
    finally:
        shutil.rmtree(os.path.join(os.fsencode(scratch / "image" / "uid0"), b"junk"))


# ---------------------------------------------------------------- image bytes


def _encoded(fmt: str, **kwargs) -> bytes:
    out = io.BytesIO()
    Image.new("RGB", (24, 16), (200, 40, 90)).save(out, format=fmt, **kwargs)
    return out.getvalue()


IMAGE_SEEDS = [_encoded(fmt) for fmt in ("PNG", "JPEG", "GIF", "WEBP", "BMP", "TIFF", "ICO", "DDS", "JPEG2000",
                                         "PPM", "TGA", "PCX")]


@HOSTILE
@given(seed=st.sampled_from(IMAGE_SEEDS), edits=st.lists(st.tuples(st.integers(0, 200), st.integers(0, 255)),
                                                          max_size=6), cut=st.integers(0, 400))
def test_inspecting_corrupted_image_bytes_only_raises_image_problem(tmp_path_factory, seed, edits, cut):
    data = bytearray(seed)
    for position, value in edits:
        if position < len(data):
            data[position] = value
    path = tmp_path_factory.getbasetemp() / "corrupted.png"
    path.write_bytes(bytes(data[:max(0, len(data) - cut)] if cut < len(data) else data))
    assume(path.stat().st_size > 0)
    try:
        info = inspect_image(path)
    except ImageProblem as exc:
        assert str(exc).isprintable()
    else:
        assert info.format in SUPPORTED_FORMATS


def _png_chunk(kind: bytes, body: bytes) -> bytes:
    return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))


PNG_HEADER = struct.pack(">IIBBBBB", 24, 16, 8, 2, 0, 0, 0)  # 24 x 16 RGB, 8 bits, not interlaced
ROW = 1 + 24 * 3  # a filter byte, then 24 RGB pixels
PNG_ROWS = bytes(np.random.default_rng(3).integers(0, 5, 16 * ROW, dtype=np.uint8))  # filter bytes 0-4 are valid


@HOSTILE
@given(rows=st.integers(0, 15), extra=st.integers(0, ROW - 1) | st.just(0), cut_stream=st.booleans(),
       level=st.integers(0, 9))
def test_a_png_holding_part_of_its_image_data_is_refused(tmp_path_factory, rows, extra, cut_stream, level):
    """Any prefix of the filtered rows as a complete zlib stream, or the whole stream cut off, in
    chunks with correct CRCs: refused (Pillow's load() accepts a stream ending at a row's end)."""
    kept = rows * ROW + extra
    whole = zlib.compress(PNG_ROWS, level)
    stream = whole[:kept * len(whole) // len(PNG_ROWS)] if cut_stream else zlib.compress(PNG_ROWS[:kept], level)
    path = tmp_path_factory.getbasetemp() / "partial.png"
    path.write_bytes(b"\x89PNG\r\n\x1a\n" + _png_chunk(b"IHDR", PNG_HEADER) + _png_chunk(b"IDAT", stream)
                     + _png_chunk(b"IEND", b""))
    with pytest.raises(ImageProblem, match="^is a corrupt PNG file: partial.png "):
        inspect_image(path)
    path.write_bytes(b"\x89PNG\r\n\x1a\n" + _png_chunk(b"IHDR", PNG_HEADER) + _png_chunk(b"IDAT", whole)
                     + _png_chunk(b"IEND", b""))
    assert inspect_image(path).format == "PNG"  # the whole of it is a valid picture


# ---------------------------------------------------------------- ids are file names ReMe accepts

DEVICE_LIKE = st.tuples(st.sampled_from(["CON", "prn", "Aux", "nul", "COM1", "com9", "LPT1", "lpt9", "COM0", "LPT10",
                                         "CONX", "NULL"]),
                        st.sampled_from(["", ".", ".x", ".x.y", "_1", "-1", "..", " "])).map("".join)
ID_LIKE = st.text(alphabet=st.sampled_from(list("az09AZ_.-") + [" ", "<", ">", ":", '"', "/", "\\", "|", "?", "*",
                                                                  "\x00", "\n", "\t", "\x7f", "é", "\u3000"]),
                  min_size=0, max_size=12)


@HOSTILE
@given(value=st.from_regex(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,127}", fullmatch=True) | DEVICE_LIKE | ID_LIKE)
def test_every_id_the_preflight_accepts_is_a_file_name_reme_accepts(value):
    """Session ids name ReMe's files (`dialog/<id>.jsonl`, `images/<id>/`): ReMe refuses names with
    `validate_filename_component` mid-run, so preflight's rule must be at least as strict."""
    from reme.steps.file_io import validate_filename_component

    if id_problem(value) is None:
        assert validate_filename_component(value, kind="session_id") is None, value
        assert len(value) <= 128 and value.isascii() and value.isprintable()


# ---------------------------------------------------------------- text that cannot be encoded as UTF-8

LONE_SURROGATES = st.integers(0xD800, 0xDFFF).map(chr)
NOT_UTF8 = "cannot be encoded as UTF-8: a lone surrogate \\u"
USER_TEXT = {("sessions", "*", key) for key in ("session_id", "event_start_time", "event_end_time")}
USER_LITERALS = {("language",), ("sessions", "*", "dialogue", "*", "role"),
                 ("sessions", "*", "dialogue", "*", "content_type")}
QUESTION_TEXT = {("questions", "*", key) for key in ("question_id", "question", "answer", "question_type",
                                                     "question_format", "difficulty", "language")}


def _strings(value):
    """The path of every string value inside `value`."""
    return [path for path in _paths(value) if isinstance(_at(value, path), str)]


def _at(value, path):
    for key in path:
        value = value[key]
    return value


def _expected_naming(record: dict, path: tuple) -> str | None:
    """What the one problem line must contain, or None when the field is ignored (nothing is refused)."""
    shape = tuple("*" if isinstance(key, int) else key for key in path)
    if shape[:1] == ("questions",):
        i = path[1]
        if shape[:3] == ("questions", "*", "evidence") and len(path) > 4:
            return f"questions[{i}].evidence[{path[3]}]: {_field_path(path[4:])} {NOT_UTF8}"
        if shape == ("questions", "*", "answer", "*"):
            return f"questions[{i}].answer: [{path[3]}] {NOT_UTF8}"
        return f"questions[{i}].{path[2]}: {NOT_UTF8}" if shape in QUESTION_TEXT else None
    if shape in USER_TEXT:
        return f"sessions[{path[1]}].{path[2]}: {NOT_UTF8}"
    if shape in USER_LITERALS:
        return _field_path(path) + ": Input should be"
    if shape[-1:] in {("content",), ("image_inline",)} and shape[:3] == ("sessions", "*", "dialogue"):
        session, turn = record["sessions"][path[1]], record["sessions"][path[1]]["dialogue"][path[3]]
        field = "content" if path[-1] == "content" else "image reference"
        return f"session {session['session_id']} turn {turn['turn']}: {field} "
    return None


def _field_path(path: tuple) -> str:
    return "".join(f"[{key}]" if isinstance(key, int) else (f".{key}" if i else key) for i, key in enumerate(path))


@HOSTILE
@given(which=st.sampled_from(["data", "questions"]), surrogate=LONE_SURROGATES, data=st.data())
def test_a_lone_surrogate_in_any_text_field_is_one_problem_naming_it(scratch, originals, which, surrogate, data):
    """A lone surrogate (legal JSON, e.g. a cut emoji) anywhere in a text the runner reads is refused
    in exactly one line naming the file, line and field; in a field the runner ignores it changes
    nothing. Whatever preflight accepts can be written (`_outcome`)."""
    name = f"{which}.jsonl"
    index = data.draw(st.integers(0, len(originals[name]) - 1), label="line")
    record = json.loads(originals[name][index])
    path = data.draw(st.sampled_from(_strings(record)), label="path")
    *parents, last = path
    holder = _at(record, parents)
    in_key = isinstance(last, str) and data.draw(st.booleans(), label="in the key")
    text = last if in_key else holder[last]
    at = data.draw(st.integers(0, len(text)), label="at")
    changed = text[:at] + surrogate + text[at:]
    naming = _expected_naming(record, tuple(path))
    if in_key:
        holder[changed] = holder.pop(last)
        evidence = path[0] == "questions" and len(path) > 4 and path[2] == "evidence"
        if naming is not None and not evidence:
            assume(False)  # a renamed field of a record is a missing field: covered by the mutation test
        naming = f"questions[{path[1]}].evidence[{path[3]}]: key " if evidence else None
    else:
        holder[last] = changed
    lines = list(originals[name])
    lines[index] = json.dumps(record).encode()  # ensure_ascii: the surrogate is written as its escape
    _write(scratch, originals, **{which: b"\n".join(lines) + b"\n"})

    dataset, problems = _outcome(scratch)
    if naming is None:
        assert dataset is not None, (path, problems)
        return
    assert len(problems) == 1 and _names_line(problems, name, index + 1), (path, problems)
    assert naming in problems[0], (path, naming, problems)
