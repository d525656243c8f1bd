"""The report's bounded parts: thumbnails stay inside the workspace's saved images and within their
byte budget, tool-call excerpts (arguments and results) are cut, marked and shrink alike past their
budget, and the interval helpers."""

import json
import re

from PIL import Image

from judge.run_files import finished_run
from mobilemem.records import ToolCallRecord
from mobilemem.rundir import RunDir
from mobilemem.run_reader import RunReader
from mobilemem_judge.analysis import report_data
from mobilemem_judge.analysis.report import write_report
from mobilemem_judge.analysis.stats import mean_interval, mcnemar_exact, paired_difference
from mobilemem_judge.analysis.thumbnails import Thumbnails


def _image(run: RunDir, user: int, name: str, size=(640, 480)) -> str:
    relative = f"session/images/{user}_1/{name}"
    path = run.user(user).workspace / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    Image.new("RGB", size, (200, 30, 30)).save(path)
    return relative


def test_thumbnails_are_small_jpegs_of_saved_images_only(tmp_path):
    run = RunDir(tmp_path)
    first = _image(run, 0, "msg-a-image-1.png")
    (run.user(0).workspace / "run-secret.txt").write_text("not an image")
    outside = tmp_path.parent / f"{tmp_path.name}-outside"
    outside.mkdir()
    Image.new("RGB", (64, 64)).save(outside / "elsewhere.png")
    (run.user(0).workspace / "session/images/0_1/link.png").symlink_to(outside / "elsewhere.png")
    (run.user(0).workspace / "session/images/0_2").symlink_to(outside, target_is_directory=True)
    thumbs = Thumbnails(RunReader(RunDir(tmp_path)))
    keys = [thumbs.add(0, first), thumbs.add(0, first), thumbs.add(0, "../../run.json"),
            thumbs.add(0, "session/images/0_1/gone.png"), thumbs.add(0, "run-secret.txt"),
            thumbs.add(0, "session/images/0_1/link.png"), thumbs.add(0, "session/images/0_2/elsewhere.png")]
    thumbs.make()
    assert keys[0] == keys[1] and list(thumbs.uris) == [keys[0]]
    assert thumbs.uris[keys[0]].startswith("data:image/jpeg;base64,")
    assert thumbs.missing == {keys[2]: "not a saved image of the workspace",
                              keys[3]: "the image is no longer in the workspace",
                              keys[4]: "not a saved image of the workspace",
                              keys[5]: "not shown: is a symbolic link: not followed",
                              keys[6]: "not shown: is a symbolic link: not followed"}


def test_thumbnails_stop_at_the_budget_in_first_seen_order(tmp_path):
    run = RunDir(tmp_path)
    names = [_image(run, 1, f"msg-{i}-image-1.png") for i in range(4)]
    probe = Thumbnails(RunReader(RunDir(tmp_path)))
    probe.add(1, names[0])
    probe.make()
    thumbs = Thumbnails(RunReader(RunDir(tmp_path)), budget_bytes=2 * probe.bytes)
    keys = [thumbs.add(1, name) for name in names]
    thumbs.make()
    assert list(thumbs.uris) == keys[:2]
    assert set(thumbs.missing) == set(keys[2:]) and "budget" in thumbs.missing[keys[3]]


def test_excerpts_shrink_alike_past_their_budget(monkeypatch):
    monkeypatch.setattr(report_data, "EXCERPTS_BUDGET", 2_000)
    details = [{"tools": [{"result": "x" * 600}, {"result": None}, {"result": "y" * 600}]} for _ in range(4)]
    report_data._fit_excerpts(details)
    lengths = [len(t["result"]) for d in details for t in d["tools"] if t["result"]]
    assert lengths == [250] * 8  # 2,000 characters shared by eight results
    mixed = [{"tools": [{"arguments": "a" * 1000, "result": "r" * 1000}, {"arguments": "b" * 1000}]}]
    report_data._fit_excerpts(mixed)
    assert [len(t[k]) for t in mixed[0]["tools"] for k in ("arguments", "result") if k in t] == [666] * 3  # shared
    monkeypatch.setattr(report_data, "EXCERPTS_BUDGET", 100)
    report_data._fit_excerpts(details)
    assert {len(t["result"]) for d in details for t in d["tools"] if t["result"]} == {report_data.MIN_EXCERPT}
    small = [{"tools": [{"result": "z" * 50}]}]
    report_data._fit_excerpts(small)
    assert small[0]["tools"][0]["result"] == "z" * 50


def test_a_huge_tool_argument_is_cut_and_marked_and_leaves_the_report_its_size(tmp_path):
    small = ToolCallRecord(name="bm25_search", ok=True, arguments={"query": "sign digit"}, result="no hits",
                           result_chars=7)
    huge = ToolCallRecord(name="bm25_search", ok=True, arguments={"query": "x" * 10_000_000}, result="no hits",
                          result_chars=7)
    sizes = {}
    for name, call in (("small", small), ("huge", huge)):
        page = write_report(finished_run(tmp_path / name, [call]).root)[0].read_text(encoding="utf-8")
        sizes[name] = len(page.encode("utf-8"))
        blob = re.search(r'<script type="application/json" id="details-data">(.*?)</script>', page, re.S)
        step = json.loads(blob.group(1))[0]["tools"][0]
    assert sizes["huge"] < sizes["small"] + 2 * report_data.EXCERPT  # the page grows by an excerpt, not 10 MB
    assert step["arguments"] == json.dumps(huge.arguments)[:report_data.EXCERPT]
    assert step["arguments_chars"] == len(json.dumps(huge.arguments))  # marked: the page says how much there was
    assert "characters in all" in page


def test_intervals_cover_their_estimate_and_pair_correctly():
    wide = mean_interval([0, 1] * 50)
    assert wide.low < wide.estimate == 0.5 < wide.high
    assert mean_interval([0.3]).low is None and mean_interval([]).estimate is None
    assert paired_difference([0.1, 0.2], [0.1, 0.2]).estimate == 0.0
    better = paired_difference([0.0] * 20, [1.0] * 10 + [0.0] * 10)
    assert better.estimate == 0.5 and better.low > 0
    test = mcnemar_exact([True] * 10, [False] * 10)
    assert (test.only_a, test.only_b) == (10, 0) and test.p_value < 0.01
