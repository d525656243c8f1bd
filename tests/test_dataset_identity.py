"""An image is known by its content (issue 22): preflight hashes the bytes it decodes, the memory
fingerprint and run.json carry those hashes, and `first_difference` tells two datasets apart by
them, or says that it cannot."""

import hashlib

import pytest

from lifecycle import run_plan, run_setup
from mobilemem.config import load_config
from mobilemem.dataset import load_dataset
from mobilemem.dataset_identity import DatasetIdentity, first_difference, images_digest
from mobilemem.fingerprints import memory_fingerprint
from mobilemem.images import inspect_image
from mobilemem.prompts import frozen_hashes
from mobilemem.records import CandidateProvenance, RunRequest
from pixel_edit import pixel_variants

PROVENANCE = CandidateProvenance(reme_version="0.4.2.0", agentscope_version="2.0.10", preset="benchmark",
                                 plugin="mobilemem", plugin_version="0.2.0", inject_runtime_state=False)


@pytest.fixture(scope="module")
def variants(sample_root, tmp_path_factory):
    return pixel_variants(sample_root, tmp_path_factory.mktemp("pixels"), "0_q_3")


def _memories(root) -> dict[int, str]:
    dataset, preset = load_dataset(root), load_config().candidate
    return {u.user_id: memory_fingerprint(u, dataset.images_of(u), "m", preset, PROVENANCE, frozen_hashes(),
                                          simulated=True) for u in dataset.users}


def _manifest(root, out):
    return run_setup._manifest(run_plan.preflight(RunRequest(dataset=root, output=out, simulate=True)))


def test_the_hash_is_of_the_files_bytes(sample_root):
    dataset = load_dataset(sample_root)
    assert dataset.image_sha256 and all(
        sha == hashlib.sha256((dataset.root / path).read_bytes()).hexdigest() == inspect_image(dataset.root / path).sha256
        for path, sha in dataset.image_sha256.items())


def test_one_images_pixels_change_only_its_users_memory_fingerprint(variants):
    first, second, _ = variants
    before, after = _memories(first), _memories(second)
    assert before[0] != after[0]
    assert {u: f for u, f in before.items() if u != 0} == {u: f for u, f in after.items() if u != 0}


def test_one_images_pixels_change_only_its_users_image_hash_in_run_json(variants, tmp_path):
    first, second, _ = variants
    a, b = _manifest(first, tmp_path / "a"), _manifest(second, tmp_path / "b")
    assert (a.data_sha256, a.questions_sha256) == (b.data_sha256, b.questions_sha256)
    assert set(a.images_sha256) == set(b.images_sha256) == {str(u) for u in a.users}
    assert {u for u in a.images_sha256 if a.images_sha256[u] != b.images_sha256[u]} == {"0"}
    difference = first_difference(DatasetIdentity.of_run(a, "A"), DatasetIdentity.of_run(b, "B"))
    assert difference == (f"the runs evaluated different datasets: the images of user 0 differ: images_sha256 "
                          f"{a.images_sha256['0']} in A vs {b.images_sha256['0']} in B")
    assert first_difference(DatasetIdentity.of_run(a, "A"), load_dataset(first).identity()) is None


def _identity(where, images=None, data="d" * 64, questions="q" * 64):
    return DatasetIdentity(where, data, questions, images)


def test_first_difference_names_the_first_thing_that_differs():
    same = {"0": "x" * 64, "1": "y" * 64}
    assert first_difference(_identity("A", same), _identity("B", dict(same))) is None
    assert first_difference(_identity("A", same), _identity("B", same, data="e" * 64)).startswith(
        f"the runs evaluated different datasets: data_sha256 differs: {'d' * 64} in A vs {'e' * 64} in B")
    assert "questions_sha256 differs" in first_difference(_identity("A", same), _identity("B", same, questions="r"))
    assert first_difference(_identity("A", None), _identity("B", same)) == (
        "A was made before image hashes were recorded: cannot tell whether the images are the same")
    assert first_difference(_identity("A", same), _identity("B", None)).startswith("B was made before")


def test_only_the_users_in_both_are_compared_unless_users_are_named():
    a, b = _identity("A", {"0": "x" * 64, "1": "y" * 64}), _identity("B", {"1": "y" * 64, "2": "z" * 64})
    assert first_difference(a, b) is None
    assert first_difference(a, b, users=[1]) is None
    assert first_difference(a, b, users=[0, 1]) == (
        "B has no image hash of user 0: cannot tell whether its images are the same")
    c, d = _identity("C", {"10": "w" * 64, "2": "z" * 64}), _identity("D", {"10": "v" * 64, "2": "u" * 64})
    assert "the images of user 2 differ" in first_difference(c, d)  # 2 before 10: ids in numeric order


def test_a_run_file_without_image_hashes_is_a_run_made_before_them(variants, tmp_path):
    first, _, _ = variants
    manifest = _manifest(first, tmp_path / "a")
    old = manifest.model_copy(update={"images_sha256": {}})
    assert DatasetIdentity.of_run(old, "A").images_sha256 is None
    assert DatasetIdentity.of_run(manifest, "A").images_sha256 == manifest.images_sha256


def test_the_images_digest_is_canonical():
    pairs = [("image/uid0/b.png", "2" * 64), ("image/uid0/a.png", "1" * 64)]
    assert images_digest(pairs) == images_digest(reversed(pairs)) == images_digest([*pairs, pairs[0]])
    assert images_digest(pairs) != images_digest([("image/uid0/a.png", "2" * 64), ("image/uid0/b.png", "1" * 64)])
