"""Fingerprints say exactly which earlier results a changed setting invalidates: the candidate model
or a plugin text changes every memory and answer and no judgment; the judge model changes only
judgments; one user's changed session changes only that user's memory; one changed question only
its answer. Same inputs, same fingerprints (canonical JSON, no order or process dependence)."""

import hashlib

import mobilemem_judge
import pytest

from mobilemem.config import load_config
from mobilemem.dataset import load_dataset
from mobilemem.fingerprints import ANSWER_ONLY, BASELINE_ONLY, answer_fingerprint, digest, memory_fingerprint
from mobilemem.models import Endpoint
from mobilemem.prompts import frozen_hashes
from mobilemem.records import CandidateProvenance

PROVENANCE = CandidateProvenance(reme_version="0.4.2.0", agentscope_version="2.0.10", preset="benchmark",
                                 plugin="mobilemem", plugin_version="0.2.0", inject_runtime_state=False)


@pytest.fixture(scope="module")
def dataset(sample_root):
    return load_dataset(sample_root)


def _all(dataset, model="qwen3.8-max", frozen=None, judge_model=None, prediction="a red umbrella",
         config=None, users=None):
    """Every memory, answer and judgment fingerprint of the sample under the given settings."""
    config = config or load_config()
    judge_config = config.judge if judge_model is None else config.judge.model_copy(update={"model": judge_model})
    settings = mobilemem_judge.judge_settings(judge_config, Endpoint.simulated("judge", config.model_copy(
        update={"judge": judge_config}), "http://127.0.0.1:1/v1"))
    out = {}
    for user in users or dataset.users:
        memory = memory_fingerprint(user, dataset.images_of(user), model, config.candidate, PROVENANCE,
                                    frozen or frozen_hashes(), simulated=False)
        out[("memory", user.user_id)] = memory
        for job in user.questions:
            out[("answer", job.question_id)] = answer_fingerprint(memory, job, config.candidate)
            out[("judgment", job.question_id)] = mobilemem_judge.judgment_fingerprint(
                dataset.judge_questions[job.question_id], prediction, settings)
    return out


def _changed(before: dict, after: dict) -> set[str]:
    return {kind for key, value in before.items() if after[key] != value for kind in [key[0]]}


def test_same_inputs_same_fingerprints(dataset):
    first, second = _all(dataset), _all(dataset)
    assert first == second and len(set(first.values())) == len(first)  # and all distinct


def test_the_candidate_model_invalidates_every_memory_and_answer_but_no_judgment(dataset):
    before, after = _all(dataset), _all(dataset, model="qwen3.8-plus")
    assert _changed(before, after) == {"memory", "answer"}
    assert all(after[k] != before[k] for k in before if k[0] != "judgment")


def test_a_plugin_text_invalidates_every_memory_and_answer_but_no_judgment(dataset):
    frozen = dict(frozen_hashes())
    frozen["reme/answer_step.yaml"] = "0" * 64
    before, after = _all(dataset), _all(dataset, frozen=frozen)
    assert _changed(before, after) == {"memory", "answer"}


def test_the_judge_model_invalidates_only_judgments(dataset):
    before, after = _all(dataset), _all(dataset, judge_model="another-judge")
    assert _changed(before, after) == {"judgment"}
    assert all(after[k] != before[k] for k in before if k[0] == "judgment")


def test_an_answer_setting_invalidates_answers_not_memories(dataset):
    config = load_config()
    looser = config.model_copy(update={"candidate": config.candidate.model_copy(update={"max_iters": 7})})
    assert _changed(_all(dataset), _all(dataset, config=looser)) == {"answer"}


def test_the_tool_call_cap_invalidates_answers_not_memories(dataset):
    config = load_config()
    tighter = config.model_copy(update={"candidate": config.candidate.model_copy(update={"max_tool_calls": 8})})
    before, after = _all(dataset), _all(dataset, config=tighter)
    assert _changed(before, after) == {"answer"}
    assert all(after[k] != before[k] for k in before if k[0] == "answer")


def _file_sha256(path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_at_the_default_cap_fingerprints_are_those_of_runs_made_before_it(dataset):
    """The documents as they were before `max_tool_calls` existed, built by hand."""
    preset, user = load_config().candidate, dataset.users[0]
    assert preset.max_tool_calls == 256
    old_preset = preset.model_dump(mode="json", exclude={*ANSWER_ONLY, *BASELINE_ONLY, "max_tool_calls"})
    memory = digest({"kind": "memory", "user_id": user.user_id, "language": user.language,
                     "sessions": [s.model_dump(mode="json") for s in user.sessions],
                     "image_sha256": {t.image.path: _file_sha256(dataset.root / t.image.path)
                                      for s in user.sessions for t in s.turns if t.image is not None},
                     "model": "m", "preset": old_preset, "candidate": PROVENANCE.model_dump(mode="json", exclude={"kind", "plugin_package", "entry_point"}),
                     "frozen_texts": frozen_hashes(), "simulated": False})
    assert memory_fingerprint(user, dataset.images_of(user), "m", preset, PROVENANCE, frozen_hashes(), simulated=False) == memory
    job = user.questions[0]
    answer = digest({"kind": "answer", "memory": memory, "question_id": job.question_id, "question": job.question,
                     "settings": preset.model_dump(mode="json", include=set(ANSWER_ONLY))})
    assert answer_fingerprint(memory, job, preset) == answer


def test_another_answer_text_changes_only_its_judgment(dataset):
    before, after = _all(dataset), _all(dataset, prediction="a blue umbrella")
    assert _changed(before, after) == {"judgment"}


def test_one_users_changed_session_changes_only_that_users_memory_and_answers(dataset):
    user0, *others = dataset.users
    session = user0.sessions[0]
    turns = [session.turns[0].model_copy(update={"text": (session.turns[0].text or "") + " (edited)"}),
             *session.turns[1:]]
    edited = user0.model_copy(update={"sessions": [session.model_copy(update={"turns": turns}), *user0.sessions[1:]]})
    before, after = _all(dataset), _all(dataset, users=[edited, *others])
    changed = {key for key in before if before[key] != after[key]}
    assert changed == {("memory", 0)} | {("answer", q.question_id) for q in user0.questions}


def test_a_plug_ins_distribution_and_version_are_part_of_its_memory(dataset):
    """Another version of a plug-in is another memory; where its entry point sits is not."""
    user, preset = dataset.users[0], load_config().candidate.model_copy(update={"kind": "long-context"})

    def memory(provenance):
        return memory_fingerprint(user, dataset.images_of(user), "m", preset, provenance, frozen_hashes(),
                                  simulated=False)

    plugin = PROVENANCE.model_copy(update={"kind": "long-context", "plugin_package": "mobilemem-long-context==0.1.0",
                                           "entry_point": "mobilemem_long_context:PLUGIN"})
    assert memory(plugin) != memory(plugin.model_copy(update={"plugin_package": "mobilemem-long-context==0.2.0"}))
    assert memory(plugin) != memory(PROVENANCE.model_copy(update={"kind": "long-context"}))
    assert memory(plugin) == memory(plugin.model_copy(update={"entry_point": "elsewhere:PLUGIN"}))
