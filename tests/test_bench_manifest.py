"""bench/manifest.py at a tiny --scale: every figure printed, the memory's file count and bytes right,
the copy accepted; --cold through the per-file eviction (the machine's page cache is left alone)."""

import sys

from conftest import ROOT

sys.path.insert(0, str(ROOT / "bench"))

import manifest  # noqa: E402


def test_it_prints_every_figure_of_the_generated_memory(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(manifest, "DROP_CACHES", tmp_path / "no-proc" / "drop_caches")  # refused: posix_fadvise
    assert manifest.main(["--scale", "0.01", "--repeat", "2", "--cold", "--cache", str(tmp_path / "cache")]) == 0
    figures = {name: (value, unit) for name, value, unit in
               (line.split() for line in capsys.readouterr().out.splitlines())}
    [root] = [p for p in (tmp_path / "cache").iterdir() if (p / ".complete").is_file()]
    user = root / "users" / "0"
    files = [p for part in ("workspace", "sessions") for p in (user / part).rglob("*") if p.is_file()]
    files.append(user / "index-response.json")
    assert figures["memory_files"] == (str(len(files)), "files") == ("27", "files")
    assert float(figures["memory_bytes"][0]) == round(sum(p.stat().st_size for p in files) / 1e6, 3)
    assert figures["cold_eviction"] == ("posix_fadvise", "method")
    for prefix in ("", "cold_"):
        for kind in ("build", "copy_memory"):
            assert all(figures[f"{prefix}{kind}_{s}"][1] == "s" for s in ("wall", "wall_min", "wall_max", "cpu"))
        # the images, agent states and dialogs, the session records, index-response and memory_usage.json
        assert figures[f"{prefix}copy_memory_hard_links"] == ("20", "files")
    assert [p.name for p in (tmp_path / "cache").iterdir()] == [root.name]  # no copy left behind
