import pytest
from hypothesis import given
from hypothesis import strategies as st

from mobilemem.candidate.index import MemoryIndex, dialog_chunks, markdown_chunks, tokenize
from mobilemem.candidate.workspace import Workspace
from mobilemem.records import DialogLine


def test_tokenizer_splits_cjk_and_lowercases_latin():
    assert tokenize("Kayaking at LISBON 2025年3月，红色伞") == [
        "kayaking", "at", "lisbon", "2025", "年", "3", "月", "红", "色", "伞"]
    assert tokenize("image/uid0/camera photos/0_event_1.png") == [
        "image", "uid0", "camera", "photos", "0", "event", "1", "png"]


@given(st.text(alphabet=st.characters(min_codepoint=0x4E00, max_codepoint=0x9FFF), min_size=1, max_size=30))
def test_cjk_ideographs_are_single_tokens(text):
    assert tokenize(text) == list(text)


def test_markdown_chunks_keep_sections_and_line_ranges():
    text = "---\nname: a\n---\n\nintro\n# One\nalpha\n# Two\nbeta\n"
    chunks = markdown_chunks("daily/d/a.md", text)
    assert [(c.start, c.end) for c in chunks] == [(1, 5), (6, 7), (8, 9)]
    assert chunks[1].text == "# One\nalpha"
    long = "\n".join(f"line {i}" for i in range(1, 101))
    assert [(c.start, c.end) for c in markdown_chunks("x.md", long)] == [(1, 40), (41, 80), (81, 100)]


def test_dialog_chunks_render_role_time_and_image_ids():
    lines = [DialogLine(line=i, role="user", time="2024-03-17 17:15:00", text=f"t{i}") for i in range(1, 10)]
    lines.append(DialogLine(line=10, role="user", time="2024-03-17 17:15:00", image_id="image/uid0/a b.png",
                            saved_as="session/images/0_1/a b.png"))
    chunks = dialog_chunks("session/dialog/0_1.jsonl", "\n".join(x.model_dump_json() for x in lines))
    assert [(c.start, c.end) for c in chunks] == [(1, 8), (9, 10)]
    assert chunks[1].text == "[user @ 2024-03-17 17:15:00] t9\n[user @ 2024-03-17 17:15:00] Image ID: image/uid0/a b.png"


@pytest.fixture
def memory(tmp_path):
    ws = Workspace(tmp_path / "workspace").create()
    (ws.daily / "2024-03-17").mkdir()
    (ws.daily / "2024-03-17" / "kayak.md").write_text("# Kayak\nWent kayaking at Lisbon harbour.\n")
    (ws.daily / "2024-03-17" / "tea.md").write_text("# Tea\nDrank 龙井 tea with Anna.\nThe zanzibar word.\n")
    (ws.daily / "2024-03-17.md").write_text("# 2024-03-17\n- kayak\n- tea\n")
    (ws.dialog / "0_1.jsonl").write_text(
        DialogLine(line=1, role="user", time="2024-03-17 10:00:00", text="I love Lisbon").model_dump_json() + "\n")
    return ws


def test_search_finds_a_note_by_a_word_only_it_contains(memory):
    index, response = MemoryIndex.build(memory)
    assert (response.documents, response.chunks) == (4, 4)
    [hit] = index.search("zanzibar")
    assert (hit.chunk.path, hit.chunk.start, hit.chunk.end) == ("daily/2024-03-17/tea.md", 1, 3)
    assert index.search("龙井")[0].chunk.path == "daily/2024-03-17/tea.md"
    assert {h.chunk.path for h in index.search("lisbon", limit=5)} == {
        "daily/2024-03-17/kayak.md", "session/dialog/0_1.jsonl"}
    assert index.search("nothingmatches") == [] and index.search("   ") == []


def test_index_is_persisted_in_the_workspace(memory):
    built, _ = MemoryIndex.build(memory)
    loaded = MemoryIndex.load(memory.index)
    assert loaded.chunks == built.chunks
    assert [h.chunk for h in loaded.search("tea anna")] == [h.chunk for h in built.search("tea anna")]


def test_an_empty_memory_builds_an_empty_index(tmp_path):
    ws = Workspace(tmp_path / "workspace").create()
    index, response = MemoryIndex.build(ws)
    assert (response.documents, response.chunks) == (0, 0) and index.search("x") == []
    assert MemoryIndex.load(ws.index).search("x") == []
