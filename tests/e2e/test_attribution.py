"""Evidence attribution on the sample run: one attribution.json per scored question, counted in
summary.json, and the simulator's agent opened the evidence image wherever it answered correctly."""

import pytest

from mobilemem.records import AttributionFile, MetricsFile, RunFile
from mobilemem.rundir import read_record
from e2e.runs import errors, run_cli, summary

pytestmark = pytest.mark.slow


def test_every_scored_question_has_an_attribution_that_summary_counts(baseline_run):
    code, run, _, _ = baseline_run
    assert code == 0
    attributions, metrics = {}, {}
    for planned in read_record(run.run, RunFile).questions:
        q = run.user(planned.user_id).question(planned.question_id)
        if q.metrics.exists():
            metrics[planned.question_id] = read_record(q.metrics, MetricsFile)
            attributions[planned.question_id] = read_record(q.attribution, AttributionFile)
    assert metrics and attributions.keys() == metrics.keys()
    evidence = summary(run).evidence
    cells = [evidence.retrieval_miss, evidence.retrieved_not_opened, evidence.opened_not_retrieved,
             evidence.retrieved_and_opened]
    assert (evidence.attributed, evidence.unattributed) == (len(attributions), 0)
    for cell in cells:
        members = [qid for qid, a in attributions.items()
                   if (a.retrieved_evidence_session, a.opened_evidence_image) == (cell.retrieved, cell.opened)]
        assert cell.questions == len(members)
        assert cell.correct == sum(metrics[qid].llm_judge for qid in members)
    for qid, attribution in attributions.items():
        assert attribution.label == ("CORRECT" if metrics[qid].llm_judge else "WRONG")
        if attribution.label == "CORRECT":
            assert attribution.opened_evidence_image and attribution.retrieved_evidence_session
            opened = [r for r in attribution.images_read if r.evidence]
            # ReMe's saved file maps back to the very Image ID the dialogue had
            assert opened and all(r.image_id and r.image_id.rsplit("/", 1)[-1] in
                                  {p.rsplit("/", 1)[-1] for p in attribution.evidence_images} for r in opened)


def test_a_failed_attribution_is_one_error_line_and_the_question_stays_scored(sample_root, simulator, tmp_path,
                                                                             monkeypatch):
    from lifecycle import evidence

    def broken(*args, **kwargs):
        raise ValueError("attribution broke (injected)")

    monkeypatch.setattr(evidence, "attribute", broken)
    simulator.reset()
    code, run = run_cli(monkeypatch, simulator, sample_root, tmp_path, "--users", "0", "--limit-questions", "1")
    simulator.reset()
    s = summary(run)
    assert code == 0 and s.scored == 1 and not s.gaps
    assert (s.evidence.attributed, s.evidence.unattributed) == (0, 1)
    [line] = errors(run)
    assert (line.stage, line.question_id, line.failure.label) == ("judge", "0_q_1", "ValueError")
    assert not run.user(0).question("0_q_1").attribution.exists()
