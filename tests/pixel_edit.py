"""Two copies of a dataset that differ only in the pixels of one image, of one byte size (issue 22).

The image a visual question asks about is redrawn in both copies as an uncompressed PNG (stored
deflate: its size depends on the picture's dimensions only): in the first with the fact it shows,
in the second with another digit. data.jsonl, questions.jsonl and every other file stay the same.
"""

import shutil
from pathlib import Path

from PIL import Image

from mobilemem.dataset import load_dataset
from mobilemem.simulator.vision import draw_fact, read_fact


def pixel_variants(source: Path, out: Path, question_id: str) -> tuple[Path, Path, str]:
    """(first copy, second copy, the edited image's dataset-relative path)."""
    dataset = load_dataset(source)
    [evidence] = dataset.judge_questions[question_id].evidence
    [image] = {t.image for u in dataset.users for s in u.sessions for t in s.turns
               if t.image is not None and t.image.image_id == evidence["image_path"]}
    assert image.format == "PNG", image
    with Image.open(source / image.path) as shown:
        colour, digit = read_fact(shown)
        size = shown.size
    assert colour is not None and digit is not None
    copies = []
    for name, drawn in (("first", digit), ("second", (digit + 1) % 10)):
        target = out / name / "MobileMem-Omni"
        shutil.copytree(source, target, symlinks=True)
        draw_fact(colour, drawn, size).save(target / image.path, format="PNG", compress_level=0)
        copies.append(target)
    first, second = (c / image.path for c in copies)
    assert first.stat().st_size == second.stat().st_size and first.read_bytes() != second.read_bytes()
    return copies[0], copies[1], image.path
