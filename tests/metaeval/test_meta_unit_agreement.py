"""`metaeval compare` at the judge's unit on a synthetic study: humans and judges with known
disagreements; question-level and reply-level figures equal an independent computation written
here (plain loops), Fleiss' κ / ordinal α against statsmodels and the krippendorff package."""

from __future__ import annotations

import itertools
import json
import random
import shutil
from pathlib import Path

import krippendorff
import numpy as np
import pytest
from metaeval_builders import weighted_cohen
from statsmodels.stats.inter_rater import aggregate_raters, fleiss_kappa

from metaeval.api import compare
from mindeval.cli import main
from mindeval.cli.meta import main as meta_main
from mindeval.judging.items import dimension_values
from mindeval.rundir import read_run
from mindeval.stats.alt_test import alt_test
from mindeval.targets.guidelines import load_guidelines
from tests.support.rundirs import one_session_reply_safety

ROOT = Path(__file__).resolve().parents[2] / "targets"
RC = load_guidelines(ROOT / "risk_checklist" / "guidelines.yaml")
RS = load_guidelines(ROOT / "reply_safety" / "guidelines.yaml")
CONTENT = [q.id for ax in RC.judge_axes if ax.code == "CONTENT" for q in ax.questions]  # no branching
QUESTIONS = [q.id for ax in RC.judge_axes for q in ax.questions]
LEVELS = ["no_concern", "minor", "major", "critical"]  # best to worst
FLAGS = [f.id for f in RS.flags]
HUMANS = ["H1", "H2", "H3"]


# ------------------------------------------------------------------ synthetic study


def _base_run(out: Path, target: str, turns: int) -> Path:
    # one session per member here: figures over members (two sessions: test_meta_sessions.py)
    if target == "reply_safety":
        target = str(one_session_reply_safety(out.parent))
    assert main(["run", "--target", target, "--clinician", "fake/echo", "--patient", "fake/echo", "--judge",
                 "fake/judge", "--turns", str(turns), "--concurrency", "1", "--out", str(out), "--quiet"]) == 0
    return out


def _judge_dir(base: Path, out: Path, model: str, units: dict[str, dict]) -> Path:
    """A judge run over ``base``'s conversations whose unit ratings are ``units[interaction_id]``."""
    out.mkdir(parents=True)
    shutil.copy(base / "config.json", out / "config.json")
    rows = []
    for j in read_run(base).judgments:
        u = units[j.interaction_id]
        if "answers" in u:
            scores = dimension_values(RC, u["answers"])
        else:
            scores = {"SEVERITY": min(RS.value_of(r["level"]) for r in u["replies"])}
        rows.append({"interaction_id": j.interaction_id, "profile_id": j.profile_id, "model": j.model,
                     "judge_model": model, "sample": 0, "target": j.target, "parse_status": "ok", "scores": scores,
                     "attempts": 1, "raw_text": "", **u})
    (out / "judgments.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return out


def _answers(rng: random.Random, gate: str = "yes") -> dict[str, str]:
    out = {q: rng.choice(["yes", "no"]) for q in QUESTIONS}
    out["n_cue_present"] = gate
    return out


def _replies(rng: random.Random, turns: list[int]) -> list[dict]:
    return [{"turn": t, "level": rng.choice(LEVELS), "flags": {f: rng.random() < 0.4 for f in FLAGS}} for t in turns]


def _noisy(rng: random.Random, u: dict, p: float) -> dict:
    """A copy of unit ratings ``u`` with each answer / level / flag changed with probability ``p``."""
    if "answers" in u:
        return {"answers": {q: ({"yes": "no", "no": "yes"}[a] if rng.random() < p else a)
                            for q, a in u["answers"].items()}}
    return {"replies": [{"turn": r["turn"], "level": rng.choice(LEVELS) if rng.random() < p else r["level"],
                         "flags": {f: (not v) if rng.random() < p else v for f, v in r["flags"].items()}}
                        for r in u["replies"]]}


def _study(tmp: Path, target: str, turns: int, seed: int = 3) -> tuple[Path, Path, Path, dict]:
    """Base run, a good judge (truth + 10% noise), a poor one (40%), and three humans (truth + 20%)."""
    base = _base_run(tmp / "base", target, turns)
    rng = random.Random(seed)
    truth: dict[str, dict] = {}
    for j in read_run(base).judgments:
        if target == "risk_checklist":
            truth[j.interaction_id] = {"answers": _answers(rng)}
        else:
            truth[j.interaction_id] = {"replies": _replies(rng, [r.turn for r in j.replies or []])}
    good = _judge_dir(base, tmp / "good", "judge/good", {i: _noisy(rng, u, 0.1) for i, u in truth.items()})
    poor = _judge_dir(base, tmp / "poor", "judge/poor", {i: _noisy(rng, u, 0.4) for i, u in truth.items()})
    humans: dict[str, dict[str, dict]] = {h: {i: _noisy(rng, u, 0.2) for i, u in truth.items()} for h in HUMANS}
    path = tmp / "humans.jsonl"
    with path.open("w", encoding="utf-8") as fh:
        for h, per in humans.items():
            for iid, u in per.items():
                fh.write(json.dumps({"interaction_id": iid, "annotator": h, **u}) + "\n")
    judges = {"good": _units_of(good), "poor": _units_of(poor)}
    return path, good, poor, {"humans": humans, "judges": judges}


def _units_of(run: Path) -> dict[str, dict]:
    return {j.interaction_id: ({"answers": j.answers} if j.answers else
                               {"replies": [r.model_dump() for r in j.replies or []]}) for j in read_run(run).judgments}


# ------------------------------------------------------------ independent computation


def cohen(a: list, b: list) -> float:
    pairs = [(x, y) for x, y in zip(a, b, strict=True) if x is not None and y is not None]
    n = len(pairs)
    cats = sorted({x for p in pairs for x in p})
    po = sum(x == y for x, y in pairs) / n
    pe = sum((sum(x == c for x, _ in pairs) / n) * (sum(y == c for _, y in pairs) / n) for c in cats)
    return (po - pe) / (1 - pe)


def nominal_alpha(units: list[list]) -> float:
    """Krippendorff's α (nominal) from its definition: units = the values given to each item."""
    units = [[v for v in u if v is not None] for u in units]
    units = [u for u in units if len(u) >= 2]
    values = [v for u in units for v in u]
    n = len(values)
    d_o = sum(sum(x != y for x, y in itertools.permutations(u, 2)) / (len(u) - 1) for u in units) / n
    d_e = sum(x != y for x, y in itertools.permutations(values, 2)) / (n * (n - 1))
    return 1 - d_o / d_e


def prf(pred: list, ref: list, positive: object) -> dict[str, float]:
    pairs = [(p, r) for p, r in zip(pred, ref, strict=True) if p is not None and r is not None]
    tp = sum(p == positive and r == positive for p, r in pairs)
    fp = sum(p == positive and r != positive for p, r in pairs)
    fn = sum(p != positive and r == positive for p, r in pairs)
    return {"precision": tp / (tp + fp) if tp + fp else float("nan"), "recall": tp / (tp + fn) if tp + fn else
            float("nan"), "f1": 2 * tp / (2 * tp + fp + fn) if tp + fp + fn else float("nan"),
            "agreement": sum(p == r for p, r in pairs) / len(pairs)}


def majority_severe_first(values: list, order: list | None) -> object:
    """The most frequent value; ties to the value later in ``order`` (more severe); with no order (the
    answers carry no severity) a tie is ``None`` (left out)."""
    got = [v for v in values if v is not None]
    top = max(got.count(v) for v in got)
    tied = {v for v in got if got.count(v) == top}
    if order is None:
        return tied.pop() if len(tied) == 1 else None
    return max(tied, key=order.index)


def loo_prf(who: dict[str, list] | list, humans: dict[str, list], positive: object,
            order: list | None) -> dict[str, float]:
    """Mean over left-out humans of P/R/F1 against the majority of the other humans (``who`` is a judge's
    values, or the humans themselves: then each left-out human is scored)."""
    out: dict[str, list[float]] = {}
    for h in humans:
        ref = [majority_severe_first([humans[o][i] for o in humans if o != h], order)
               for i in range(len(humans[h]))]
        pred = humans[h] if isinstance(who, dict) else who
        for k, v in prf(pred, ref, positive).items():
            out.setdefault(k, []).append(v)
    return {k: float(np.nanmean(v)) for k, v in out.items()}


def figure(rep, field: str, metric: str, rater: str, reference: str):
    rows = [f for f in rep.figures if (f.field, f.metric, f.rater, f.reference) == (field, metric, rater, reference)]
    assert len(rows) == 1, (field, metric, rater, reference)
    return rows[0]


# ------------------------------------------------------------------------- tests


@pytest.fixture(scope="module")
def item_study(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("items")
    path, good, poor, data = _study(tmp, "risk_checklist", 2)
    frames = compare([str(path)], [f"good={good}", f"poor={poor}"], resamples=300, seed=1)
    return frames.result.units, data


def test_question_figures_equal_an_independent_computation(item_study):
    rep, data = item_study
    assert rep is not None and rep.unit == "question" and rep.humans == HUMANS and rep.judges == ["good", "poor"]
    iids = sorted(next(iter(data["humans"].values())))
    assert rep.n_conversations == len(iids) == 6
    for q in [*CONTENT, "n_cue_present"]:
        hv = {h: [data["humans"][h][i]["answers"][q] for i in iids] for h in HUMANS}
        field = f"question:{q}"
        for a, b in itertools.combinations(HUMANS, 2):
            if len(set(hv[a] + hv[b])) > 1:
                assert figure(rep, field, "kappa", a, b).value == pytest.approx(cohen(hv[a], hv[b]), nan_ok=True)
        for j in ("good", "poor"):
            jv = [data["judges"][j][i]["answers"][q] for i in iids]
            pair = [cohen(jv, hv[h]) for h in HUMANS]
            f = figure(rep, field, "kappa", j, "humans")
            assert f.value == pytest.approx(np.nanmean(pair)) and f.n_items == 6 and f.n_conversations == 6
            assert f.ci_low <= f.value <= f.ci_high
            alphas = [nominal_alpha([[x, y] for x, y in zip(jv, hv[h], strict=True)]) for h in HUMANS]
            assert figure(rep, field, "alpha", j, "humans").value == pytest.approx(np.nanmean(alphas))
            # c_* questions: "yes" fires a severity (ties -> yes); n_cue_present has none (ties left out)
            want = loo_prf(jv, hv, "yes", None if q == "n_cue_present" else ["no", "yes"])
            for m, v in want.items():
                assert figure(rep, field, m, j, "majority of the other humans").value == pytest.approx(v, nan_ok=True)
        if q in CONTENT:
            all_alpha = nominal_alpha([[hv[h][i] for h in HUMANS] for i in range(len(iids))])
            assert figure(rep, field, "alpha", "humans", "all humans").value == pytest.approx(all_alpha)
            table = np.array([[["no", "yes"].index(hv[h][i]) for h in HUMANS] for i in range(len(iids))])
            assert figure(rep, field, "fleiss_kappa", "humans", "all humans").value == pytest.approx(
                fleiss_kappa(aggregate_raters(table, n_cat=2)[0]))


def test_question_tie_rule_takes_the_answer_with_the_worse_severity(item_study):
    rep, data = item_study
    # c_* questions fire a severity on "yes": a 1-1 tie between the two other humans is "yes".
    iids = sorted(next(iter(data["humans"].values())))
    q = "c_method_info"
    severity = next(x.severity for ax in RC.judge_axes for x in ax.questions if x.id == q)
    assert "yes" in severity and "no" not in severity
    hv = {h: [data["humans"][h][i]["answers"][q] for i in iids] for h in HUMANS}
    want = loo_prf({}, hv, "yes", ["no", "yes"])
    f = figure(rep, f"question:{q}", "f1", "humans", "majority of the other humans")
    assert f.value == pytest.approx(want["f1"]) and f.n_tied == 0
    # n_cue_direct carries no severity: a tie between yes and no is left out and counted.
    # (asked only on a rater's path: after n_cue_present = yes)
    hv = {h: [a["n_cue_direct"] if (a := data["humans"][h][i]["answers"])["n_cue_present"] == "yes" else None
              for i in iids] for h in HUMANS}
    ties = sum({hv[o][i] for o in HUMANS if o != h} == {"yes", "no"} for h in HUMANS for i in range(len(iids)))
    assert ties > 0
    assert figure(rep, "question:n_cue_direct", "agreement", "good", "majority of the other humans").n_tied == ties


@pytest.fixture(scope="module")
def reply_study(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("replies")
    path, good, poor, data = _study(tmp, "reply_safety", 12)
    frames = compare([str(path)], [f"good={good}", f"poor={poor}"], resamples=300, seed=1)
    return frames.result.units, data, (path, good, poor)


def test_reply_figures_equal_an_independent_computation(reply_study):
    rep, data, _ = reply_study
    assert rep is not None and rep.unit == "reply"
    iids = sorted(next(iter(data["humans"].values())))
    items = [(i, r["turn"]) for i in iids for r in data["judges"]["good"][i]["replies"]]
    assert len(items) == 72  # 12 conversations x 6 replies

    def levels(units: dict) -> list[int]:
        by = {(i, r["turn"]): LEVELS.index(r["level"]) for i in iids for r in units[i]["replies"]}
        return [by[k] for k in items]

    hv = {h: levels(data["humans"][h]) for h in HUMANS}
    jv = levels(data["judges"]["poor"])
    f = figure(rep, "severity", "weighted_kappa", "poor", "humans")
    assert f.value == pytest.approx(np.mean([weighted_cohen(jv, hv[h], 4) for h in HUMANS]))
    assert f.n_items == 72 and f.n_conversations == 12 and f.ci_low <= f.value <= f.ci_high
    want = krippendorff.alpha(reliability_data=np.array([hv[h] for h in HUMANS], dtype=float),
                              level_of_measurement="ordinal", value_domain=[0, 1, 2, 3])
    assert figure(rep, "severity", "alpha", "humans", "all humans").value == pytest.approx(want)
    # the conversation's worst level and the "at least one reply major or worse" incident
    worst = {h: [max(LEVELS.index(r["level"]) for r in data["humans"][h][i]["replies"]) for i in iids]
             for h in HUMANS}
    jw = [max(LEVELS.index(r["level"]) for r in data["judges"]["good"][i]["replies"]) for i in iids]
    assert figure(rep, "worst", "weighted_kappa", "good", "H2").value == pytest.approx(weighted_cohen(jw, worst["H2"], 4))
    inc = {h: [w >= 2 for w in ws] for h, ws in worst.items()}
    assert figure(rep, "incident:major", "agreement", "good", "majority of the other humans").value == pytest.approx(
        loo_prf([w >= 2 for w in jw], inc, True, [False, True])["agreement"])
    # a flag per reply: F1 of the judge against the majority of the other humans, ties -> flagged
    for flag in FLAGS[:3]:
        def flags(units: dict, flag: str = flag) -> list[bool]:
            by = {(i, r["turn"]): r["flags"][flag] for i in iids for r in units[i]["replies"]}
            return [by[k] for k in items]
        hf = {h: flags(data["humans"][h]) for h in HUMANS}
        want_f = loo_prf(flags(data["judges"]["good"]), hf, True, [False, True])
        got = figure(rep, f"flag:{flag}", "f1", "good", "majority of the other humans")
        assert got.value == pytest.approx(want_f["f1"]) and got.n_tied == 0  # ties resolved to "flagged"
        assert figure(rep, f"flag:{flag}", "kappa", "good", "H1").value == pytest.approx(
            cohen(flags(data["judges"]["good"]), hf["H1"]))


def test_reply_alternative_annotator_test_is_the_dimension_test_on_reply_units(reply_study):
    rep, data, _ = reply_study
    iids = sorted(next(iter(data["humans"].values())))
    items = [(i, r["turn"]) for i in iids for r in data["judges"]["good"][i]["replies"]]

    def levels(units: dict) -> np.ndarray:
        by = {(i, r["turn"]): LEVELS.index(r["level"]) for i in iids for r in units[i]["replies"]}
        return np.array([by[k] for k in items], dtype=float)

    hm = np.vstack([levels(data["humans"][h]) for h in HUMANS])
    for j in ("good", "poor"):
        want = alt_test(levels(data["judges"][j])[None, :], hm, HUMANS, "ordinal")
        got = next(t for t in rep.alt_tests if t.judge == j and t.field == "severity").result
        assert got.omega == want.omega and got.rho == pytest.approx(want.rho)
        assert [h.p_corrected for h in got.humans] == pytest.approx([h.p_corrected for h in want.humans])
        assert got.status in ("pass", "fail")  # 3 humans, 72 replies each: the paper's minimums are met
    q = next(t for t in rep.alt_tests if t.field == "worst").result
    assert q.status.startswith("not applicable") and "30" in q.status  # 12 conversations per human


def test_cli_writes_the_unit_section_and_csv(reply_study, tmp_path, capsys):
    _, _, (path, good, _) = reply_study
    out = tmp_path / "out"
    assert meta_main(["compare", "--humans", str(path), "--judges", f"good={good}", "--resamples", "50",
                      "--no-plots", "--out", str(out)]) == 0
    text = capsys.readouterr().out
    assert "Agreement at the judge's unit (target reply_safety" in text and "ties: human majority ties" in text
    assert "## Agreement at the judge's unit" in (out / "agreement.md").read_text()
    rows = (out / "unit_agreement.csv").read_text().splitlines()
    assert rows[0].startswith("field,kind,unit,group,metric,rater,reference,value,ci_low,ci_high,n_items")
    assert json.loads((out / "agreement.json").read_text())["unit_agreement"]["unit"] == "reply"
    assert (out / "unit_alt_tests.csv").is_file()


@pytest.mark.parametrize(("row", "field"), [
    ({"annotator": "H1", "replies": []}, "interaction_id"),
    ({"interaction_id": "x", "annotator": "H1", "replies": [{"turn": 1, "level": "awful", "flags": {}}]},
     "replies[0].level"),
    ({"interaction_id": "x", "annotator": "H1", "replies": [{"turn": 1, "level": "minor", "flags": {"dismissive": True}}]},
     "replies[0].flags"),
    ({"interaction_id": "x", "annotator": "H1"}, "answers"),
])
def test_a_bad_unit_row_is_one_line_naming_file_line_and_field(reply_study, tmp_path, capsys, row, field):
    _, _, (_, good, _) = reply_study
    bad = tmp_path / "bad.jsonl"
    first = {"interaction_id": "y", "annotator": "H1", "replies": []}
    bad.write_text(json.dumps(first) + "\n" + json.dumps(row) + "\n", encoding="utf-8")
    assert meta_main(["compare", "--humans", str(bad), "--judges", f"good={good}", "--resamples", "0",
                      "--no-plots"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"error: {bad}:2:{field}:") and "Traceback" not in err and len(err.splitlines()) == 1


def test_vectorised_statistics_equal_the_maintained_implementations():
    """κ / weighted κ / P-R-F1 = scikit-learn, α (nominal, ordinal) = krippendorff, Fleiss' κ = statsmodels,
    on random data with missing ratings; an unused middle category changes nothing."""
    from sklearn.metrics import cohen_kappa_score, precision_recall_fscore_support

    from mindeval.stats import unit_agreement as ua

    rng = np.random.default_rng(7)
    k, n = 5, 60
    m = rng.choice([0, 1, 3, 4], size=(4, n)).astype(float)  # code 2 never used
    m[rng.random((4, n)) < 0.1] = np.nan
    w = np.ones((1, n))
    a, b = m[0], m[1]
    ok = ~np.isnan(a) & ~np.isnan(b)
    conf = ua.confusions(w, a, b, k)
    labels = list(range(k))
    assert ua.kappa(conf)[0] == pytest.approx(cohen_kappa_score(a[ok], b[ok], labels=labels), abs=1e-12)
    assert ua.kappa(conf, "quadratic")[0] == pytest.approx(
        cohen_kappa_score(a[ok], b[ok], labels=labels, weights="quadratic"), abs=1e-12)
    for level in ("nominal", "ordinal"):
        assert ua.alpha(ua.coincidences(w, m, k), level)[0] == pytest.approx(
            krippendorff.alpha(reliability_data=m, level_of_measurement=level, value_domain=labels), abs=1e-12)
    full = ~np.isnan(m).any(axis=0)
    assert ua.fleiss(w, m, k)[0] == pytest.approx(
        fleiss_kappa(aggregate_raters(m[:, full].T.astype(int), n_cat=k)[0]), abs=1e-12)
    p, r, f, _ = precision_recall_fscore_support(b[ok] >= 3, a[ok] >= 3, average="binary")
    got = ua.prf(conf, np.array([False, False, False, True, True]))
    assert (got["precision"][0], got["recall"][0], got["f1"][0]) == pytest.approx((p, r, f), abs=1e-12)
    # a bootstrap row is the statistic of the resampled items: counts 2 on item 0 = item 0 twice
    w2 = np.ones((1, n))
    w2[0, 0], w2[0, 1] = 2, 0
    keep = np.r_[0, 0, np.arange(2, n)]
    assert ua.kappa(ua.confusions(w2, a, b, k))[0] == pytest.approx(ua.kappa(ua.confusions(
        np.ones((1, len(keep))), a[keep], b[keep], k))[0])


def test_a_study_gives_the_same_unit_figures_as_the_file(reply_study):
    """The app's study (``SubmittedRating.replies``) and the unit ratings file are one input."""
    from datetime import datetime

    from mindeval.study_data import StudyRatings, SubmittedRating

    rep, data, (_, good, poor) = reply_study
    judged = {j.interaction_id: j for j in read_run(good).judgments}
    ratings = [SubmittedRating(interaction_id=iid, profile_id=judged[iid].profile_id, member_attributes={},
                               messages=[], clinician_model=judged[iid].model, annotator=h,
                               values={"reply_severity": min(RS.value_of(r["level"]) for r in u["replies"])},
                               justification="", safety_note=None, revision=1, submitted_at=datetime(2026, 1, 1),
                               replies=u["replies"])
               for h, per in data["humans"].items() for iid, u in per.items()]
    url = "sqlite:///study.db"
    study = StudyRatings(study="s", source=url, ratings=ratings, target="reply_safety", na_value=-1)
    got = compare([url], [f"good={good}", f"poor={poor}"], studies={url: study}, study="s", resamples=300,
                  seed=1).result.units
    assert got is not None
    by = {(f.field, f.metric, f.rater, f.reference): f.value for f in got.figures}
    want = {(f.field, f.metric, f.rater, f.reference): f.value for f in rep.figures}
    assert by.keys() == want.keys() and by == pytest.approx(want, nan_ok=True)


def test_an_answer_missing_on_the_path_is_refused_with_its_line(item_study, tmp_path, capsys):
    _, data = item_study
    iid, u = next(iter(data["humans"]["H1"].items()))
    answers = dict(u["answers"], n_cue_present="yes")
    del answers["n_acknowledged"]  # on NOTICE's path after n_cue_present = yes
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps({"interaction_id": iid, "annotator": "H1", "answers": answers}) + "\n", encoding="utf-8")
    assert meta_main(["compare", "--humans", str(bad), "--target", "risk_checklist", "--resamples", "0",
                      "--no-plots"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"error: {bad}:1:answers: dimension NOTICE has an unanswered question on its path")


def test_resamples_0_gives_the_same_point_values_without_intervals(reply_study):
    """``--resamples 0`` (point values only) works at the unit too: it raised "need resamples >= 1"."""
    rep, _data, (path, good, poor) = reply_study
    got = compare([str(path)], [f"good={good}", f"poor={poor}"], resamples=0, seed=1).result.units
    assert got is not None and len(got.figures) == len(rep.figures)
    want = {(f.field, f.metric, f.rater, f.reference): f.value for f in rep.figures}
    for f in got.figures:
        key = (f.field, f.metric, f.rater, f.reference)
        assert f.value == pytest.approx(want[key], nan_ok=True)
        assert f.ci_low != f.ci_low and f.ci_high != f.ci_high  # NaN: no interval without resamples
