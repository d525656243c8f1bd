"""bench/cpu_profile.py charges each py-spy sample to its owner: the innermost frame outside the
standard library, named by package (`runner` for this repository), or `import` for a sample inside
an import; the runner's functions are counted inclusive of what they call."""

import sys
import sysconfig
from pathlib import Path

from conftest import ROOT

sys.path.insert(0, str(ROOT / "bench"))
from cpu_profile import charge, parse  # noqa: E402

STDLIB = sysconfig.get_paths()["stdlib"]
SITE = "/venv/lib/python3.11/site-packages"


def _raw(tmp_path: Path, lines: list[str]) -> Path:
    path = tmp_path / "raw.txt"
    path.write_text("\n".join(lines) + "\n")
    return path


def test_samples_are_charged_to_the_innermost_owner_outside_the_standard_library(tmp_path):
    run = f"evaluate ({ROOT}/cli/run.py:80)"
    loop = f"BaseEventLoop._run_once ({STDLIB}/asyncio/base_events.py:1922)"
    task = f"answer_question ({ROOT}/tasks/answer.py:40)"
    reme = f"AsAgentWrapper.reply ({SITE}/reme/components/agent_wrapper/as_agent_wrapper.py:90)"
    json_dump = f"dumps ({STDLIB}/json/__init__.py:231)"
    load = "_find_and_load (<frozen importlib._bootstrap>:1176)"
    samples = parse(_raw(tmp_path, [
        f"{run};{loop};{task};{reme};{json_dump} 7",  # ReMe's, though the leaf is the standard library's
        f"{run};{loop};{task} 2",
        f"{run};{load};{reme} 4",  # an import, whoever runs it
        f"{loop} 1",  # nothing but the standard library
    ]))
    owners, functions, inclusive, total = charge(samples)
    assert total == 14
    assert owners == {"reme": 7, "runner": 2, "import": 4, "stdlib": 1}
    assert functions["reme: AsAgentWrapper.reply (reme/components/agent_wrapper/as_agent_wrapper.py)"] == 7
    assert inclusive["answer_question (tasks/answer.py)"] == 9
    assert inclusive["evaluate (cli/run.py)"] == 9  # the import sample is charged to `import` only
