"""The bundled attribute pool: coverage, minimum sizes, and clear errors for a broken pool."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from mindeval.errors import MindEvalError
from mindeval.profiles.pool import default_pool_dir, load_pool
from mindeval.profiles.sampler import sample_profiles
from mindeval.records import ATTRIBUTE_FIELDS


def test_every_profile_attribute_is_in_the_pool(pool):
    assert list(pool.attributes) == list(ATTRIBUTE_FIELDS)
    assert pool.age_range == (21, 69)


def test_pool_meets_the_issue_minimum_sizes(pool):
    assert len(pool["conversation_style"].values) >= 40
    assert len(pool["profession"].values) >= 100
    assert len(pool["thought_process"].values) >= 30
    assert len(pool["general_outlook"].values) >= 30
    for group, minimum in (("female", 40), ("male", 40), ("neutral", 20)):
        assert len(pool["name"].group(group)) >= minimum, group


def test_professions_are_spread_across_education_levels(pool):
    groups = pool["profession"].group_names
    assert len(groups) >= 6
    assert all(len(pool["profession"].group(g)) >= 10 for g in groups)
    for edu in pool["education"].values:
        reachable = sum(len(pool["profession"].group(g)) for g in edu.tag("professions"))
        assert reachable >= 10, edu.text


def test_no_value_appears_in_two_name_groups(pool):
    groups = [set(v.text for v in pool["name"].group(g)) for g in ("female", "male", "neutral")]
    assert not (groups[0] & groups[1]) and not (groups[0] & groups[2]) and not (groups[1] & groups[2])


def _copy_pool(tmp_path: Path) -> Path:
    dest = tmp_path / "pool"
    shutil.copytree(default_pool_dir(), dest)
    return dest


def _edit(path: Path, old: str, new: str) -> int:
    text = path.read_text()
    assert old in text, old
    line = text[: text.index(old)].count("\n") + 1
    path.write_text(text.replace(old, new, 1))
    return line


def test_missing_required_tag_names_file_line_field(tmp_path):
    d = _copy_pool(tmp_path)
    line = _edit(d / "work.yaml", '{text: "relies on public assistance and food banks", tier: 1}',
                 '{text: "relies on public assistance and food banks"}')
    with pytest.raises(MindEvalError) as exc:
        load_pool(d)
    err = exc.value
    assert (Path(err.path).name, err.line, err.field) == ("work.yaml", line, "financial_situation.tier")
    assert "missing required tag 'tier'" in str(err)


def test_unknown_tag_and_bad_tag_value_are_reported(tmp_path):
    d = _copy_pool(tmp_path)
    line = _edit(d / "health.yaml", "{text: inactive, level: 0}", "{text: inactive, level: 7}")
    with pytest.raises(MindEvalError) as exc:
        load_pool(d)
    assert exc.value.line == line and exc.value.field == "exercise.level"
    assert "integer from 0 to 4" in str(exc.value)

    d2 = _copy_pool(tmp_path / "b")
    line = _edit(d2 / "health.yaml", "{text: inactive, level: 0}", "{text: inactive, level: 0, colour: red}")
    with pytest.raises(MindEvalError, match="unknown tag 'colour'") as exc:
        load_pool(d2)
    assert exc.value.line == line


def test_duplicate_value_and_yaml_syntax_errors(tmp_path):
    d = _copy_pool(tmp_path)
    line = _edit(d / "relationships.yaml", "      - one older sister\n", "      - one older sister\n      - one older sister\n")
    with pytest.raises(MindEvalError, match="duplicate value 'one older sister'") as exc:
        load_pool(d)
    assert exc.value.line == line + 1 and exc.value.field == "siblings"

    d2 = _copy_pool(tmp_path / "b")
    line = _edit(d2 / "demographics.yaml", "  region:\n", "  region: [unclosed\n")
    with pytest.raises(MindEvalError, match="invalid YAML") as exc:
        load_pool(d2)
    assert Path(exc.value.path).name == "demographics.yaml" and exc.value.line is not None


def test_missing_attribute_and_unreachable_group(tmp_path):
    d = _copy_pool(tmp_path)
    (d / "names.yaml").unlink()
    with pytest.raises(MindEvalError, match="does not define attribute.*name") as exc:
        load_pool(d)
    assert exc.value.field == "name"

    d2 = _copy_pool(tmp_path / "b")
    _edit(d2 / "work.yaml", "professions: {doctorate: 3, master: 1}", "professions: {master: 1}")
    with pytest.raises(MindEvalError, match="'doctorate' is not reachable"):
        load_pool(d2)


def test_a_custom_pool_changes_what_is_sampled(tmp_path):
    d = _copy_pool(tmp_path)
    _edit(d / "demographics.yaml", "range: [21, 69]", "range: [30, 31]")
    ages = {p.member_attributes.age for p in sample_profiles(200, 1, pool=load_pool(d))}
    assert ages == {30, 31}
