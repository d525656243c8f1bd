"""The dataset revision is declared unless verified (`mobilemem.dataset_manifest`): `plan
--write-manifest` writes mobilemem-manifest.json, and a run's preflight then verifies the folder
against it; any difference is one line naming the file, before anything is written."""

import hashlib
import json
from pathlib import Path

import pytest

from mobilemem import dataset_manifest, image_cache
from mobilemem.dataset import DATASET_REVISION
from mobilemem.records import RunRequest
from lifecycle import run_plan, run_setup
from cli import main

PIXEL_FILE = "image/uid0/camera_photos/0_event_1_1.png"


def _refusal(root, tmp_path, capsys) -> str:
    """The run's one-line refusal; nothing was written into the output."""
    assert main(["--dataset", str(root), "--output", str(tmp_path / "out"), "--simulate"]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and not (tmp_path / "out").exists()
    return err.removeprefix("mobilemem: refused to start: ").removesuffix("\n")


@pytest.fixture
def manifested(sample_copy, capsys):
    assert main(["plan", "--dataset", str(sample_copy), "--simulate", "--write-manifest"]) == 0
    out = capsys.readouterr().out
    assert "nothing written but the image cache and mobilemem-manifest.json" in out
    assert f"dataset revision {DATASET_REVISION}: verified (mobilemem-manifest.json written now: 27 files" in out
    return sample_copy


def test_the_manifest_lists_every_release_file_with_its_size_and_hash(manifested):
    written = json.loads((manifested / "mobilemem-manifest.json").read_text())
    expected = sorted(["data.jsonl", "questions.jsonl", "image.zip",
                       *(p.relative_to(manifested).as_posix() for p in (manifested / "image").rglob("*") if p.is_file())])
    assert [f["path"] for f in written["files"]] == expected and len(expected) == 27  # 24 images
    for entry in written["files"]:
        data = (manifested / entry["path"]).read_bytes()
        assert (entry["size"], entry["sha256"]) == (len(data), hashlib.sha256(data).hexdigest())
    assert (written["dataset"], written["revision"]) == ("zjunlp/MobileMem-Omni", DATASET_REVISION)


def test_a_manifested_folder_is_verified_and_run_json_says_so(manifested, tmp_path, capsys):
    assert main(["plan", "--dataset", str(manifested), "--simulate"]) == 0
    assert (f"dataset revision {DATASET_REVISION}: verified (mobilemem-manifest.json matched: 27 files, "
            "104,883 bytes, each of the listed size and sha256)") in capsys.readouterr().out
    plan = run_plan.preflight(RunRequest(dataset=manifested, output=tmp_path / "out", simulate=True))
    assert plan.revision_status == "verified"
    manifest = run_setup._manifest(plan)
    assert (manifest.dataset_revision, manifest.dataset_revision_status) == (DATASET_REVISION, "verified")


def test_without_a_manifest_the_revision_is_declared(sample_root, tmp_path, capsys):
    assert main(["plan", "--dataset", str(sample_root), "--simulate"]) == 0
    assert (f"dataset revision {DATASET_REVISION}: declared (no mobilemem-manifest.json; --write-manifest "
            "writes one)") in capsys.readouterr().out
    assert run_plan.preflight(RunRequest(dataset=sample_root, output=tmp_path / "out",
                                         simulate=True)).revision_status == "declared"


def test_one_edited_image_byte_is_refused_naming_the_image(manifested, tmp_path, capsys):
    path = manifested / PIXEL_FILE
    listed = hashlib.sha256(path.read_bytes()).hexdigest()
    data = bytearray(path.read_bytes())
    data[-30] ^= 1  # inside the image data: the file still decodes, same size
    path.write_bytes(bytes(data))
    assert _refusal(manifested, tmp_path, capsys) == (
        f"the dataset differs from its manifest: {PIXEL_FILE}: sha256 {hashlib.sha256(data).hexdigest()}, "
        f"mobilemem-manifest.json lists {listed}")


@pytest.mark.parametrize("change,line", [
    ("remove zip", "image.zip: missing (mobilemem-manifest.json lists it)"),
    ("link zip", "image.zip: a symbolic link (mobilemem-manifest.json lists regular files only)"),
    ("link folder", "image/spare/a.txt: reached through image/spare, a symbolic link (mobilemem-manifest.json "
                    "lists regular files only) (and 1 more)"),
    ("grow data", "data.jsonl: 28,828 bytes, mobilemem-manifest.json lists 28,827"),
    ("add file", "image/uid2/notes.txt: not listed in mobilemem-manifest.json"),
])
def test_every_other_difference_is_one_line_naming_the_file(manifested, tmp_path, capsys, change, line):
    if change == "remove zip":
        (manifested / "image.zip").unlink()
    if change == "link zip":
        (manifested / "image.zip").rename(tmp_path / "image.zip")
        (manifested / "image.zip").symlink_to(tmp_path / "image.zip")
    if change == "link folder":  # the same files through a link (into the dataset: preflight lets it be)
        (manifested / "image" / "spare").mkdir()
        (manifested / "image" / "spare" / "a.txt").write_text("unreferenced")
        assert main(["plan", "--dataset", str(manifested), "--simulate", "--write-manifest"]) == 0
        (manifested / "image" / "spare").rename(manifested / "spare")
        (manifested / "image" / "spare").symlink_to(Path("..") / "spare")
    if change == "grow data":
        with (manifested / "data.jsonl").open("a") as handle:
            handle.write("\n")
    if change == "add file":
        (manifested / "image" / "uid2" / "notes.txt").write_text("x")
    capsys.readouterr()
    assert _refusal(manifested, tmp_path, capsys) == f"the dataset differs from its manifest: {line}"


@pytest.mark.parametrize("damage,line", [
    ("truncated", "mobilemem-manifest.json: not valid JSON (truncated or edited)"),
    ("link", "mobilemem-manifest.json: is a symbolic link: not followed"),
    ("revision", "mobilemem-manifest.json is of zjunlp/MobileMem-Omni revision 0123abc; this runner evaluates "
                 f"zjunlp/MobileMem-Omni revision {DATASET_REVISION}"),
])
def test_a_damaged_linked_or_other_revisions_manifest_is_refused(manifested, tmp_path, capsys, damage, line):
    path = manifested / "mobilemem-manifest.json"
    text = path.read_text()
    if damage == "truncated":
        path.write_text(text[:100])
    if damage == "link":
        (tmp_path / "elsewhere.json").write_text(text)
        path.unlink()
        path.symlink_to(tmp_path / "elsewhere.json")
    if damage == "revision":
        path.write_text(text.replace(DATASET_REVISION, "0123abc"))
    assert _refusal(manifested, tmp_path, capsys).startswith(line)


def test_write_manifest_replaces_a_stale_one(manifested, capsys):
    (manifested / "image" / "uid2" / "notes.txt").write_text("x")
    assert main(["plan", "--dataset", str(manifested), "--simulate", "--write-manifest"]) == 0
    assert "written now: 28 files" in capsys.readouterr().out
    assert main(["plan", "--dataset", str(manifested), "--simulate"]) == 0


def test_no_file_is_hashed_twice(manifested, monkeypatch):
    """Preflight's own hashes of data.jsonl, questions.jsonl and every image it checked are reused:
    verification reads only image.zip (the one release file preflight does not hash), and only
    until the image cache has its hash. The hashing function is wrapped to count its calls, and the
    settling time is 0 (the copy was just made: its files' ctime is now, and no one can set it back)."""
    hashed = []
    real = image_cache._sha256
    monkeypatch.setattr(image_cache, "_sha256", lambda path: hashed.append(path.name) or real(path))
    monkeypatch.setattr(image_cache, "SETTLE_NS", 0)
    config, _ = run_plan.configured(RunRequest(dataset=manifested, simulate=True))
    dataset = run_plan.selected(RunRequest(dataset=manifested, simulate=True), config)
    for _ in range(2):
        assert dataset_manifest.verify(dataset) == "verified"
    assert hashed == ["image.zip"]
