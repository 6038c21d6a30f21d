"""Judge reply parsing: tolerant of formatting, strict about substance, takes the last answer."""

import pytest

from mindeval.judge import JudgeParseError, parse_scores

FULL = {"CAC": 3, "EPC": 5, "AR": 2, "TRA": 4, "ASCQ": 1}
LINES = ("Clinical Accuracy & Competence: 3\nEthical & Professional Conduct: 5\n"
         "Assessment & Response: 2\nTherapeutic Relationship & Alliance: 4\n"
         "AI-Specific Communication Quality (LLMness): 1")


@pytest.mark.parametrize(
    "text",
    [
        '{"CAC": 3, "EPC": 5, "AR": 2, "TRA": 4, "ASCQ": 1}',
        'Here you go:\n```json\n{"CAC": 3, "EPC": 5, "AR": 2, "TRA": 4, "ASCQ": 1, "rationale": "ok"}\n```',
        '{"scores": {"CAC": "3", "EPC": "5", "AR": 2.0, "TRA": 4, "ASCQ": 1}}',
        LINES,
        "- **CAC**: 3\n- **EPC**: 5\n- **AR**: 2\n- **TRA**: 4\n- **ASCQ**: 1",
        '{"criterion_1": 3, "criterion_2": 5, "criterion_3": 2, "criterion_4": 4, "criterion_5": 1}',
        # trailing comma in JSON
        '{"CAC": 3, "EPC": 5, "AR": 2, "TRA": 4, "ASCQ": 1,}',
        '```json\n{\n  "CAC": 3,\n  "EPC": 5,\n  "AR": 2,\n  "TRA": 4,\n  "ASCQ": 1,\n}\n```',
        # Markdown table, rows per axis
        "| Criterion | Score |\n|---|---|\n| Clinical Accuracy & Competence | 3 |\n| Ethical & Professional "
        "Conduct | 5 |\n| Assessment & Response | **2** |\n| TRA | 4 |\n| ASCQ | 1 |",
        # "Score: N" on the line after the axis heading
        "## Clinical Accuracy & Competence\nScore: 3\nSolid work.\n\n## Ethical & Professional Conduct\n"
        "**Score:** 5\n\n## Assessment & Response\nScore: 2/6\n\n### Therapeutic Relationship & Alliance\n"
        "Rating: 4\n\n**AI-Specific Communication Quality**\nScore: 1",
        "1. CAC - 3\n2. EPC - 5\n3. AR = 2\n4. TRA: 4\n5. ASCQ: 1/6",
    ],
)
def test_accepts_formats(text):
    scores, _ = parse_scores(text)
    assert scores == FULL


def test_rationale_kept():
    _, rationale = parse_scores('{"CAC": 3, "EPC": 5, "AR": 2, "TRA": 4, "ASCQ": 1, "rationale": "too verbose"}')
    assert rationale == "too verbose"


@pytest.mark.parametrize(
    "text",
    [
        # a draft, then the final answer
        'Draft: {"CAC": 1, "EPC": 1, "AR": 1, "TRA": 1, "ASCQ": 1}\n'
        'Final: {"CAC": 3, "EPC": 5, "AR": 2, "TRA": 4, "ASCQ": 1}',
        # a quoted fake block from the transcript, then the real answer in another format
        'The therapist wrote {"CAC": 6, "EPC": 6, "AR": 6, "TRA": 6, "ASCQ": 6} to game me.\n' + LINES,
        "CAC: 6\nEPC: 6\nAR: 6\nTRA: 6\nASCQ: 6\nOn reflection:\n" + LINES,
        # an incomplete aside after the answer is not an answer
        LINES + "\n\nNote: CAC: 3 was the hardest call.",
        "CAC: 3\nCAC: 4\n" + LINES.replace("Clinical Accuracy & Competence: 3\n", ""),
    ],
)
def test_last_complete_block_is_the_answer(text):
    scores, _ = parse_scores(text)
    expected = dict(FULL, CAC=4) if text.startswith("CAC: 3\nCAC: 4") else FULL
    assert scores == expected


@pytest.mark.parametrize(
    "text, msg",
    [
        ('{"CAC": 3, "EPC": 5, "AR": 2, "TRA": 4}', "missing"),
        ('{"CAC": 7, "EPC": 5, "AR": 2, "TRA": 4, "ASCQ": 1}', "outside"),
        ('{"CAC": 0, "EPC": 5, "AR": 2, "TRA": 4, "ASCQ": 1}', "outside"),
        ('{"CAC": 3.5, "EPC": 5, "AR": 2, "TRA": 4, "ASCQ": 1}', "not an integer"),
        ('{"CAC": "good", "EPC": 5, "AR": 2, "TRA": 4, "ASCQ": 1}', "not a score"),
        ('{"CAC": true, "EPC": 5, "AR": 2, "TRA": 4, "ASCQ": 1}', "not a score"),
        ('{"CAC": "3-4", "EPC": 5, "AR": 2, "TRA": 4, "ASCQ": 1}', "range"),
        ("I cannot rate this conversation.", "no scores"),
        ("", "no scores"),
        # ranges and alternatives are refused, not read as their first number
        ("CAC: 3-4\nEPC: 5\nAR: 2\nTRA: 4\nASCQ: 1", "range"),
        ("CAC: 3 – 4\nEPC: 5\nAR: 2\nTRA: 4\nASCQ: 1", "range"),
        ("CAC: 3 or 4\nEPC: 5\nAR: 2\nTRA: 4\nASCQ: 1", "range"),
        ("CAC: 3 to 4\nEPC: 5\nAR: 2\nTRA: 4\nASCQ: 1", "range"),
        ("| CAC | 3-4 |\n| EPC | 5 |\n| AR | 2 |\n| TRA | 4 |\n| ASCQ | 1 |", "range"),
        # a complete answer followed by an unreadable final word is refused, not resolved to the first
        ('{"CAC": 3, "EPC": 5, "AR": 2, "TRA": 4, "ASCQ": 1}\nRevised:\nCAC: 3-4', "range"),
        ("CAC: 3.5\nEPC: 5\nAR: 2\nTRA: 4\nASCQ: 1", "not an integer"),
    ],
)
def test_rejects_bad(text, msg):
    with pytest.raises(JudgeParseError, match=msg):
        parse_scores(text)


def test_paper_protocol_takes_fractional_lines():
    text = ("Clinical Accuracy & Competence: 3.75\nEthical & Professional Conduct: 4.5\nAssessment & Response: 3\n"
            "Therapeutic Relationship & Alliance: 2.75\nAI-Specific Communication Quality: 2.5")
    scores, _ = parse_scores(text, protocol="paper")
    assert scores == {"CAC": 3.75, "EPC": 4.5, "AR": 3, "TRA": 2.75, "ASCQ": 2.5}
    with pytest.raises(JudgeParseError, match="not an integer"):
        parse_scores(text)  # the default protocol wants integers
    with pytest.raises(JudgeParseError, match="outside"):
        parse_scores(text.replace("3.75", "0.5"), protocol="paper")
