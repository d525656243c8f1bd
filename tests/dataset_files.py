"""Reading and rewriting a dataset's JSONL files in tests (the shared helpers of the dataset tests)."""

import json
from pathlib import Path

import pytest

from mobilemem.dataset import load_dataset
from mobilemem.errors import DatasetError


def read_jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def write_jsonl(path: Path, records: list[dict]) -> None:
    """One record a line; a lone surrogate (not UTF-8) is written as its JSON escape `\\ud800`."""
    path.write_text("".join(json.dumps(r, ensure_ascii=False).encode("utf-8", "backslashreplace").decode("utf-8")
                            + "\n" for r in records), encoding="utf-8")


def refusal(root: Path, **kwargs) -> list[str]:
    """The problems preflight lists for `root` (it must refuse)."""
    with pytest.raises(DatasetError) as info:
        load_dataset(root, **kwargs)
    return info.value.problems
