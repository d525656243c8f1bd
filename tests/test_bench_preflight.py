"""bench/preflight.py at the smoke size: every figure printed, the warm preflight decoding nothing."""

import sys

from conftest import ROOT

sys.path.insert(0, str(ROOT / "bench"))

import preflight  # noqa: E402


def test_it_prints_every_figure_of_the_generated_images(tmp_path, capsys):
    argv = ["--sessions", "3", "--turns", "8", "--images", "2", "--size", "320", "--questions", "2",
            "--cache", str(tmp_path), "--repeat", "1"]
    assert preflight.main(argv) == 0
    figures = {name: (float(value), unit) for name, value, unit in
               (line.split() for line in capsys.readouterr().out.splitlines())}
    [root] = [p for p in tmp_path.iterdir() if (p / ".complete").is_file()]
    files = [p for p in (root / "image").rglob("*") if p.is_file()]
    assert figures["images"] == (len(files), "files")
    for kind in ("cold", "cold_one_thread", "warm"):
        assert figures[f"{kind}_wall"][1] == figures[f"{kind}_wall_min"][1] == figures[f"{kind}_cpu"][1] == "s"
    assert figures["cold_speedup"][1] == figures["cold_speedup_of_minima"][1] == "x"
