import mobilemem_judge


def test_public_surface_is_pinned():
    assert sorted(mobilemem_judge.__all__) == [
        "DEFAULT_RUBRIC", "Judgment", "ParsedLabel", "RUBRICS", "fill", "judge_answer", "judge_settings",
        "judgment_fingerprint", "parse_label", "rubric_sha256", "rubric_text"]
