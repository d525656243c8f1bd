import base64

import pytest
from agentscope.message import DataBlock

from mobilemem.candidate.index import MemoryIndex
from mobilemem.candidate.tools import MAX_READ_LINES, MemoryTools, UserMemory
from mobilemem.candidate.workspace import Workspace
from mobilemem.errors import WorkspaceEscape
from mobilemem.records import DialogLine


@pytest.fixture
def tools(tmp_path):
    ws = Workspace(tmp_path / "users" / "1" / "workspace").create()
    other = Workspace(tmp_path / "users" / "2" / "workspace").create()
    (other.daily / "secret.md").write_text("other user's secret")
    (ws.daily / "2024-03-17").mkdir()
    (ws.daily / "2024-03-17" / "long.md").write_text("\n".join(f"fact {i}" for i in range(1, 501)) + "\n")
    (ws.daily / "2024-03-17" / "kayak.md").write_text("# Kayak\nkayaking Image ID: image/uid1/a b.png\n")
    images = ws.images("1_1")
    images.mkdir(parents=True)
    (images / "a b.png").write_bytes(b"\x89PNG\r\n\x1a\n" + _png_body())
    line = DialogLine(line=1, role="user", time="2024-03-17 10:00:00", image_id="image/uid1/a b.png",
                      saved_as="session/images/1_1/a b.png")
    (ws.dialog / "1_1.jsonl").write_text(line.model_dump_json() + "\n")
    MemoryIndex.build(ws)
    return MemoryTools(UserMemory.load(ws))


def _png_body() -> bytes:
    import io

    from PIL import Image

    buf = io.BytesIO()
    Image.new("RGB", (8, 8), (255, 0, 0)).save(buf, format="PNG")
    return buf.getvalue()[8:]


def test_search_shows_path_range_score_and_text(tools):
    out = tools.bm25_search("kayaking")
    assert out.startswith("[1] daily/2024-03-17/kayak.md:1-2 (score ")
    assert "Image ID: image/uid1/a b.png" in out
    assert "No memory matched" in tools.bm25_search("zeppelin")
    for bad in ("", "  ", None, "x" * 3000):
        with pytest.raises(ValueError):
            tools.bm25_search(bad)


def test_read_windows_long_files_with_a_continue_notice(tools):
    out = tools.read("daily/2024-03-17/long.md")
    assert out.splitlines()[0] == "    1| fact 1"
    assert f"[lines 1-{MAX_READ_LINES} of 500; to continue: read(path=\"daily/2024-03-17/long.md\", " \
           f"start_line={MAX_READ_LINES + 1})]" in out
    assert tools.read("daily/2024-03-17/long.md", 499, 900).splitlines() == ["  499| fact 499", "  500| fact 500"]
    assert "nothing at line 600" in tools.read("daily/2024-03-17/long.md", 600)


def test_read_renders_transcripts_lists_folders_and_refuses_images(tools):
    assert tools.read("session/dialog/1_1.jsonl") == \
        "    1| [L1 | user @ 2024-03-17 10:00:00] Image ID: image/uid1/a b.png (saved as session/images/1_1/a b.png)"
    assert "daily/2024-03-17/kayak.md" in tools.read("daily/2024-03-17")
    with pytest.raises(ValueError, match="read_image"):
        tools.read("session/images/1_1/a b.png")
    with pytest.raises(ValueError, match="no memory file"):
        tools.read("daily/nope.md")


@pytest.mark.parametrize("path", [
    "/etc/passwd", "../../2/workspace/memory/daily/secret.md", "file:///etc/passwd", "daily/%2e%2e/%2e%2e/x",
    "daily\\..\\..\\x", "../trajectories/x.json", "x" * 10_000_000,
])
def test_read_refuses_every_escape(tools, path):
    with pytest.raises(WorkspaceEscape):
        tools.read(path)


def test_read_image_returns_the_saved_bytes_as_an_image_block(tools):
    for image_id in ("image/uid1/a b.png", "session/images/1_1/a b.png", "memory/session/images/1_1/a b.png"):
        chunk = tools.read_image(image_id)
        block = next(b for b in chunk.content if isinstance(b, DataBlock))
        assert block.source.media_type == "image/png"
        saved = tools.memory.ws.memory / "session/images/1_1/a b.png"
        assert base64.b64decode(block.source.data) == saved.read_bytes()
    assert list(tools.sent_images.values()) == ["session/images/1_1/a b.png"]


@pytest.mark.parametrize("image_id", [
    "image/uid1/unknown.png", "daily/2024-03-17/kayak.md", "/etc/passwd", "file:///etc/hostname",
    "../../2/workspace/memory/daily/secret.md", "", "y" * 10_000_000,
])
def test_read_image_refuses_anything_but_a_saved_image(tools, image_id):
    with pytest.raises((ValueError, WorkspaceEscape)):
        tools.read_image(image_id)
