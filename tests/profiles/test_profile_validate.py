"""`mindeval profiles validate`: every schema error as file:line:field, exit 1 when any."""

from __future__ import annotations

import json

from mindeval.cli import main
from mindeval.profiles.sampler import profiles_jsonl, sample_profiles
from mindeval.profiles.validate import validate_file


def _write_broken(tmp_path):
    good = sample_profiles(2, 5)
    rows = [json.loads(line) for line in profiles_jsonl(good).decode().splitlines()]
    missing_age = json.loads(json.dumps(rows[1]))
    del missing_age["member_attributes"]["age"]
    missing_age["member_attributes"]["sex"] = 3
    typo = json.loads(json.dumps(rows[1]))
    typo["member_attributes"]["educaton"] = typo["member_attributes"].pop("education")
    empty = json.loads(json.dumps(rows[1]))
    empty["member_attributes"]["region"] = "  "
    lines = [
        json.dumps(rows[0]),               # 1 ok
        '{"member_attributes": {',         # 2 malformed JSON
        json.dumps(missing_age),           # 3 missing age, sex not a string
        "",                                # 4 blank lines are allowed
        json.dumps(typo),                  # 5 unknown + missing attribute
        json.dumps(empty),                 # 6 empty value
        json.dumps(rows[0]),               # 7 duplicate of line 1
        "[1, 2]",                          # 8 not an object
        json.dumps({"profile": {}}),       # 9 unknown top-level field, no member_attributes
    ]
    path = tmp_path / "broken.jsonl"
    path.write_text("\n".join(lines) + "\n")
    return path


def test_all_errors_are_collected_with_line_and_field(tmp_path):
    path = _write_broken(tmp_path)
    valid, problems = validate_file(path)
    got = [(p.line, p.field) for p in problems]
    assert got == [
        (2, None),
        (3, "member_attributes.sex"), (3, "member_attributes.age"),
        (5, "member_attributes.educaton"), (5, "member_attributes.education"),
        (6, "member_attributes.region"),
        (7, None),
        (8, None),
        (9, "profile"), (9, "member_attributes"),
    ]
    assert valid == 1
    assert all(p.path == str(path) for p in problems)


def test_cli_prints_file_line_field_and_exits_1(tmp_path, capsys):
    path = _write_broken(tmp_path)
    assert main(["profiles", "validate", str(path)]) == 1
    out = capsys.readouterr().out.splitlines()
    assert f"{path}:3:member_attributes.age: missing required field" in out
    assert f"{path}:5:member_attributes.educaton: unknown attribute" in out
    assert f"{path}:6:member_attributes.region: empty value" in out
    assert f"{path}:7: duplicate of the profile on line 1" in out
    assert any(line.startswith(f"{path}:2: malformed JSON") for line in out)
    assert len(out) == 10


def test_valid_file_exits_0(tmp_path, capsys):
    path = tmp_path / "ok.jsonl"
    path.write_bytes(profiles_jsonl(sample_profiles(30, 2)))
    assert main(["profiles", "validate", str(path)]) == 0
    assert capsys.readouterr().out == ""


def test_backstory_flag_requires_valid_backstories(tmp_path, capsys):
    path = tmp_path / "ok.jsonl"
    path.write_bytes(profiles_jsonl(sample_profiles(2, 2)))
    assert main(["profiles", "validate", "--backstory", str(path)]) == 1
    assert capsys.readouterr().out.count(":member_narrative: no backstory") == 2
    assert main(["profiles", "validate", "--backstory", "demo"]) == 0


def test_official_profiles_are_valid_including_backstories(shared_data):
    valid, problems = validate_file(shared_data / "profiles.jsonl", backstory=True)
    assert problems == [] and valid == 50


def test_empty_and_missing_files(tmp_path, capsys):
    empty = tmp_path / "empty.jsonl"
    empty.write_text("\n")
    assert main(["profiles", "validate", str(empty)]) == 1
    assert "no profiles in file" in capsys.readouterr().out
    assert main(["profiles", "validate", str(tmp_path / "missing.jsonl")]) == 2  # a bad argument: one line
    err = capsys.readouterr().err
    assert "file not found" in err and len(err.strip().splitlines()) == 1
