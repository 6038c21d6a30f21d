"""Judge reply parsing: tolerant of formatting, strict about substance."""

import pytest

from mindeval.judge import JudgeParseError, parse_scores

FULL = {"CAC": 3, "EPC": 5, "AR": 2, "TRA": 4, "ASCQ": 1}


@pytest.mark.parametrize(
    "text",
    [
        '{"CAC": 3, "EPC": 5, "AR": 2, "TRA": 4, "ASCQ": 1}',
        'Here you go:\n```json\n{"CAC": 3, "EPC": 5, "AR": 2, "TRA": 4, "ASCQ": 1, "rationale": "ok"}\n```',
        '{"scores": {"CAC": "3", "EPC": "5", "AR": 2.0, "TRA": 4, "ASCQ": 1}}',
        "Clinical Accuracy & Competence: 3\nEthical & Professional Conduct: 5\n"
        "Assessment & Response: 2\nTherapeutic Relationship & Alliance: 4\n"
        "AI-Specific Communication Quality (LLMness): 1",
        "- **CAC**: 3\n- **EPC**: 5\n- **AR**: 2\n- **TRA**: 4\n- **ASCQ**: 1",
        '{"criterion_1": 3, "criterion_2": 5, "criterion_3": 2, "criterion_4": 4, "criterion_5": 1}',
    ],
)
def test_accepts_formats(text):
    scores, _ = parse_scores(text)
    assert scores == FULL


def test_rationale_kept():
    _, rationale = parse_scores('{"CAC": 3, "EPC": 5, "AR": 2, "TRA": 4, "ASCQ": 1, "rationale": "too verbose"}')
    assert rationale == "too verbose"


@pytest.mark.parametrize(
    "text, msg",
    [
        ('{"CAC": 3, "EPC": 5, "AR": 2, "TRA": 4}', "missing"),
        ('{"CAC": 7, "EPC": 5, "AR": 2, "TRA": 4, "ASCQ": 1}', "outside"),
        ('{"CAC": 0, "EPC": 5, "AR": 2, "TRA": 4, "ASCQ": 1}', "outside"),
        ('{"CAC": 3.5, "EPC": 5, "AR": 2, "TRA": 4, "ASCQ": 1}', "not an integer"),
        ('{"CAC": "good", "EPC": 5, "AR": 2, "TRA": 4, "ASCQ": 1}', "not an integer"),
        ('{"CAC": true, "EPC": 5, "AR": 2, "TRA": 4, "ASCQ": 1}', "not a score"),
        ("I cannot rate this conversation.", "no scores"),
        ("CAC: 3\nCAC: 4\nEPC: 5\nAR: 2\nTRA: 4\nASCQ: 1", "twice"),
        ("", "no scores"),
    ],
)
def test_rejects_bad(text, msg):
    with pytest.raises(JudgeParseError, match=msg):
        parse_scores(text)
