"""bench/image_hashes.py at the smoke size: every figure printed, the image count and bytes right."""

import sys

from conftest import ROOT

sys.path.insert(0, str(ROOT / "bench"))

import image_hashes  # noqa: E402


def test_it_prints_every_figure_of_the_generated_images(tmp_path, capsys):
    argv = ["--sessions", "3", "--turns", "8", "--images", "2", "--size", "320", "--questions", "2",
            "--cache", str(tmp_path), "--repeat", "1"]
    assert image_hashes.main(argv) == 0
    figures = {name: (float(value), unit) for name, value, unit in
               (line.split() for line in capsys.readouterr().out.splitlines())}
    [root] = [p for p in tmp_path.iterdir() if (p / ".complete").is_file()]
    files = [p for p in (root / "image").rglob("*") if p.is_file()]
    assert figures["images"] == (len(files), "files")
    assert figures["image_bytes"][0] == round(sum(p.stat().st_size for p in files) / 1e6, 3)
    for kind in ("preflight_with_hashes", "preflight_without_hashes", "sha256_alone_one_thread"):
        assert figures[f"{kind}_wall"][1] == figures[f"{kind}_cpu"][1] == "s" and figures[f"{kind}_rate"][1] == "MB/s"
    assert "hashing_share_of_cpu" in figures
