"""The annotation platform's database as a human source (SQLite, and PostgreSQL when available)."""

from __future__ import annotations

import uuid
import warnings

import pytest

from annotation_app.store import read_ratings
from metaeval.sources import load_authors_annotations, load_study
from mindeval.errors import MindEvalError


def load_annotation_db(url: str, study, **kw):
    """A study read as the command lines read it (the app's data package), then handed to metaeval."""
    return load_study(read_ratings(url, study), **kw)


def import_study(url: str, path, name: str = "ratings") -> None:
    from annotation_app.store.importers import import_path
    from annotation_app.store.migrations import upgrade
    from annotation_app.store.models import StudySpec
    from annotation_app.store.studies import create_study
    from mindeval.store import Database
    from mindeval.targets.guidelines import load_guidelines

    db = Database(url)
    try:
        upgrade(db.engine)
        create_study(db, StudySpec(name=name, kind="rating"))
        import_path(db, load_guidelines(), name, path)
    finally:
        db.close()


def same_scores(a, b) -> None:
    """Same annotators (by original id) with identical axis scores."""
    by_id = {b.rater_ids[r.label]: r for r in b.raters}
    assert sorted(a.rater_ids[r.label] for r in a.raters) == sorted(by_id)
    for ra in a.raters:
        rb = by_id[a.rater_ids[ra.label]]
        fa = ra.frame.sort_values(["interaction_id", "axis"]).reset_index(drop=True)
        fb = rb.frame.sort_values(["interaction_id", "axis"]).reset_index(drop=True)
        assert fa.equals(fb), ra.label


def test_db_ratings_equal_the_file_they_came_from(tiny_authors, tmp_db_url):
    import_study(tmp_db_url, tiny_authors)
    db_src = load_annotation_db(tmp_db_url, "ratings")
    same_scores(db_src, load_authors_annotations(tiny_authors))
    assert db_src.rater_ids == {"ann-a": "ann-a", "ann-b": "ann-b", "ann-c": "ann-c"}
    assert len(db_src.interactions) == 12


def test_db_with_authors_data_keeps_paper_labels(shared_data, tmp_db_url):
    path = shared_data / "human_annotations.jsonl"
    import_study(tmp_db_url, path)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        db_src = load_annotation_db(tmp_db_url, "ratings", zeros="zero")
        same_scores(db_src, load_authors_annotations(path, zeros="zero"))
    assert [r.label for r in db_src.raters] == ["P1", "P2", "P3", "P4"]


def test_unknown_study_is_a_clear_error(tiny_authors, tmp_db_url):
    import_study(tmp_db_url, tiny_authors)
    with pytest.raises(MindEvalError, match="no study"):
        load_annotation_db(tmp_db_url, "nope")


@pytest.mark.postgres
def test_postgres_annotation_db(tiny_authors, pg_url):
    name = f"metaeval-{uuid.uuid4().hex[:8]}"
    import_study(pg_url, tiny_authors, name=name)
    same_scores(load_annotation_db(pg_url, name), load_authors_annotations(tiny_authors))


def test_compare_reads_the_database_from_the_cli(tiny_authors, tmp_db_url, tmp_path, capsys):
    from mindeval.cli.meta import main

    import_study(tmp_db_url, tiny_authors)
    out = tmp_path / "cmp"
    assert main(["compare", "--humans", tmp_db_url, "--study", "ratings", "--out", str(out), "--no-plots"]) == 0
    assert "| Annotator | ann-a | ann-b | ann-c | Avg. P |" in capsys.readouterr().out
    assert main(["compare", "--humans", tmp_db_url, "--out", str(out)]) == 2
    assert "needs --study" in capsys.readouterr().err


def test_judge_runs_over_a_database_study(tiny_authors, tmp_db_url, tmp_path):
    from metaeval.judge_runs import run_judge
    from mindeval.run_options import RunOptions

    import_study(tmp_db_url, tiny_authors)
    out = tmp_path / "jr"
    s = run_judge(RunOptions(annotations=tmp_db_url, study="ratings", judge="fake/judge", fewshot_k=2,
                             out=str(out)), echo=None, studies={tmp_db_url: read_ratings(tmp_db_url, "ratings")})
    assert s["n_judged"] == 10
    cfg = (out / "config.json").read_text()
    assert "int-" in cfg  # the few-shot ids are the original interaction ids
    with pytest.raises(MindEvalError, match="needs --study"):
        run_judge(RunOptions(annotations=tmp_db_url, judge="fake/judge", out=str(tmp_path / "x")), echo=None)


def test_metaeval_takes_a_study_as_data_and_never_opens_the_database(tiny_authors, tmp_db_url):
    """A Python caller hands the ratings over (read with the app's data package); an unread
    database is one clear error, its password hidden."""
    from metaeval.comparison import CompareOptions, run_compare
    from mindeval.cli.studies import read_studies

    import_study(tmp_db_url, tiny_authors)
    studies = read_studies([tmp_db_url, str(tiny_authors), None], "ratings")
    assert list(studies) == [tmp_db_url] and studies[tmp_db_url].study == "ratings"
    assert read_studies([tmp_db_url], None) == {}  # no study: metaeval says "needs --study"
    both = run_compare(CompareOptions(humans=[tmp_db_url, str(tiny_authors)], study="ratings", resamples=0), studies)
    assert both.extra["inputs"]["humans"][0]["source"].endswith("#study=ratings")
    with pytest.raises(MindEvalError, match="annotation database was not read") as err:
        run_compare(CompareOptions(humans=["postgresql://u:secret@host/db"], study="ratings"))
    assert "secret" not in str(err.value)
