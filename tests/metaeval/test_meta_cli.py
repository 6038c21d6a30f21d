"""`metaeval compare` end to end, report files, and CLI error handling."""

from __future__ import annotations

import csv
import json
import re
import subprocess
import sys

import pytest
from metaeval_builders import write_judgments

from metaeval.matrices import AVG_LABEL as AVG
from metaeval.report import fmt_values
from metaeval.sources import load_authors_annotations
from metaeval.statistics import MetricOptions, layouts_for
from mindeval.cli.meta import main
from mindeval.judging.authors import AUTHORS_FEWSHOT_IDS

ROWS_AXES = ("CAC", "EPC", "AR", "TRA", "ASCQ")


def judge_dir_from_humans(tiny_authors, out, runs=2):
    """A judge run in the run-directory schema of docs/architecture.md whose scores follow annotator ann-a, plus noise by run."""
    src = load_authors_annotations(tiny_authors)
    p1 = src.raters[0].frame
    rows = []
    for iid, it in src.interactions.items():
        base = {ax: p1[(p1.interaction_id == iid) & (p1.axis == ax)]["score"].iloc[0] for ax in ROWS_AXES}
        for r in range(runs):
            scores = {ax: int(min(6, max(1, round(v + (r if ax == "CAC" else 0))))) for ax, v in base.items()}
            rows.append({"interaction_id": iid, "profile_id": it.profile_id, "model": it.system,
                         "judge_model": "sys/alpha", "sample": r, "scores": scores})
    return write_judgments(out, rows, {"run_id": "x"})


def test_compare_end_to_end_writes_every_output(tiny_authors, tmp_path, capsys):
    jdir = judge_dir_from_humans(tiny_authors, tmp_path / "judge")
    out = tmp_path / "cmp"
    code = main(["compare", "--humans", str(tiny_authors), "--judges", f"J={jdir}", "--out", str(out)])
    assert code == 0
    printed = capsys.readouterr().out
    assert "Kendall τ-b below the diagonal, MIPSA (ties=sign) above" in printed
    assert "| Annotator | P1 | P2 | P3 | J | Avg. P |" in printed
    assert "verdict J (average): is it non-inferior to the humans (95% confidence)? " in printed
    # 3 humans on 10 interactions: below the paper's minimum of 30 items per human, so no pass or fail
    assert ("may it replace a human annotator (alternative annotator test, ε = 0.2)? NOT APPLICABLE: a human has 12 "
            "testable items, the test needs at least 30 per human") in printed
    assert "range check J (average): is its agreement at least the lowest human-human agreement?" in printed
    md = (out / "agreement.md").read_text()
    assert "### Average score" in md and "Krippendorff α" in md
    data = json.loads((out / "agreement.json").read_text())
    assert data["tau_variant"] == "tau-b" and data["mipsa_ties"] == "sign"
    assert set(data["matrices"]) == {"CAC", "EPC", "AR", "TRA", "ASCQ", "average"}
    assert "NaN" not in (out / "agreement.json").read_text()
    with (out / "agreement.csv").open() as fh:
        rows = list(csv.DictReader(fh))
    assert {"axis", "rater_a", "rater_b", "metric", "variant", "q1", "median", "q3", "n_runs"} <= set(rows[0])
    judge_rows = [r for r in rows if r["rater_a"] == "J" and r["metric"] == "tau"]
    assert judge_rows and all(r["n_runs"] == "2" for r in judge_rows)
    pngs = sorted(p.name for p in out.glob("heatmap_*.png"))
    assert len(pngs) == len(data["matrices"]) * len(layouts_for(False, MetricOptions()))
    assert all((out / p).stat().st_size > 5000 for p in pngs)
    assert (out / "heatmap_average_tau_mipsa.png").read_bytes()[:4] == b"\x89PNG"


def test_matrix_layout_tau_below_mipsa_above(tiny_authors, tmp_path):
    jdir = judge_dir_from_humans(tiny_authors, tmp_path / "judge", runs=3)
    out = tmp_path / "cmp"
    assert main(["compare", "--humans", str(tiny_authors), "--judges", str(jdir), "--out", str(out),
                 "--no-plots", "--tau", "c", "--mipsa-ties", "exclude"]) == 0
    data = json.loads((out / "agreement.json").read_text())
    m = data["matrices"]["average"]
    assert m["options"]["tau_variant"] == "c"
    summary = m["summary"]
    md = (out / "agreement.md").read_text()
    section = md.split("### Average score — Kendall τ-c below the diagonal, MIPSA (ties=exclude) above")[1]
    table = [line for line in section.splitlines() if line.startswith("| ")]
    header = [c.strip() for c in table[0].strip("|").split("|")]
    p2_row = [c.strip() for c in table[2].strip("|").split("|")]  # row P2
    assert p2_row[0] == "P2"
    # below the diagonal (row P2, column P1): τ ; above (row P2, column P3): MIPSA
    assert p2_row[header.index("P1")].partition(" [")[0] == fmt_values(summary["P1|P2"]["tau"])
    assert p2_row[header.index("P3")].partition(" [")[0] == fmt_values(summary["P2|P3"]["mipsa"])
    judge = "sys/alpha"
    j_row = next(r for r in table if r.startswith(f"| {judge} |"))
    assert j_row.count("[") >= 3  # quartile brackets for a repeated judge


def test_self_preference_and_leaderboards_in_report(tiny_authors, tmp_path):
    a = judge_dir_from_humans(tiny_authors, tmp_path / "a")
    b = judge_dir_from_humans(tiny_authors, tmp_path / "b", runs=1)
    out = tmp_path / "cmp"
    assert main(["compare", "--judges", f"ref={a}", f"alpha={b}", "--self-system", "alpha=sys/alpha",
                 "--out", str(out), "--no-plots", "--no-alpha"]) == 0
    data = json.loads((out / "agreement.json").read_text())
    [row] = data["table5"]
    assert row["judge"] == "alpha" and row["reference"] == "ref" and row["self_system"] == "sys/alpha"
    assert 0 <= row["pairwise_accuracy"] <= 1 and row["n_profiles"] == 4
    assert set(data["leaderboards"]) == {"ref", "alpha"}


def test_cli_errors_exit_2_without_traceback(tiny_authors, tmp_path):
    bad = tmp_path / "bad.jsonl"
    lines = tiny_authors.read_text().splitlines()
    row = json.loads(lines[1])
    row["criterion_3.responses"] = [1, "x", 2]
    bad.write_text(lines[0] + "\n" + json.dumps(row) + "\n")
    proc = subprocess.run([sys.executable, "-m", "mindeval.cli.meta", "compare", "--humans", str(bad),
                           "--out", str(tmp_path / "o")], capture_output=True, text=True)
    assert proc.returncode == 2
    assert f"error: {bad}:2:criterion_3.responses:" in proc.stderr
    assert "Traceback" not in proc.stderr
    proc = subprocess.run([sys.executable, "-m", "mindeval.cli.meta", "compare", "--judges", str(tmp_path)],
                          capture_output=True, text=True)
    assert proc.returncode == 2 and "no judgments.jsonl" in proc.stderr and "Traceback" not in proc.stderr


def test_compare_needs_inputs(capsys):
    assert main(["compare"]) == 2
    assert "give at least one" in capsys.readouterr().err


def test_judge_then_compare_with_the_cli(tiny_authors, tmp_path, capsys):
    jdir = tmp_path / "fake"
    assert main(["judge", "--annotations", str(tiny_authors), "--judge", "fake/judge", "--fewshot", "2",
                 "-n", "2", "--out", str(jdir)]) == 0
    out = tmp_path / "cmp"
    assert main(["compare", "--humans", str(tiny_authors), "--judges", str(jdir), "--out", str(out), "--no-plots"]) == 0
    printed = capsys.readouterr().out
    assert "10 interactions (4 profiles, 3 systems); 2 excluded" in printed


def test_compare_on_the_authors_data(shared_data, tmp_path, capsys):
    ann = shared_data / "human_annotations.jsonl"
    jdir = tmp_path / "judge"
    assert main(["judge", "--annotations", str(ann), "--judge", "fake/judge", "--fewshot", "5", "-n", "2",
                 "--out", str(jdir)]) == 0
    shots = json.loads((jdir / "config.json").read_text())["fewshot_interaction_ids"]
    out = tmp_path / "cmp"
    assert main(["compare", "--humans", str(ann), "--judges", str(jdir), "--out", str(out), "--paper-compatible"]) == 0
    printed = capsys.readouterr().out
    assert "| fake/judge | [" in printed and "verdict fake/judge (average): " in printed
    data = json.loads((out / "agreement.json").read_text())
    excluded = set(shots) | set(AUTHORS_FEWSHOT_IDS)
    assert data["inputs"]["excluded_interaction_ids"] == sorted(excluded)
    assert data["matrices"]["average"]["n_interactions"] == 60 - len(excluded)
    assert data["matrices"]["average"]["runs"]["fake/judge"] == 2
    # one heatmap per axis matrix and layout of the registry (a new layout needs no edit here)
    assert len(list(out.glob("heatmap_*.png"))) == len(data["matrices"]) * len(layouts_for(False, MetricOptions()))


def test_paper_compatible_humans_reproduce_table3(shared_data, tmp_path, capsys):
    out = tmp_path / "cmp"
    assert main(["compare", "--humans", str(shared_data / "human_annotations.jsonl"), "--paper-compatible",
                 "--out", str(out), "--no-plots"]) == 0
    printed = capsys.readouterr().out
    avg = printed.split("### Average score")[1]
    # every cell gains its 95% interval; the point values are the published ones, digit for digit
    rows = {line.split(" | ")[0]: line.strip("| ").split(" | ")[1:] for line in avg.splitlines()
            if line.startswith("| P") or line.startswith("| Avg. P")}
    cell = re.compile(r"^(-?\d\.\d{4}) \[(-?\d\.\d{4}), (-?\d\.\d{4})\]$")
    points = {}
    for label, cells in rows.items():
        for c in cells:
            if c.strip():
                m = cell.match(c.strip())
                assert m, c
                assert float(m[2]) <= float(m[1]) <= float(m[3]), c
                points.setdefault(label, []).append(m[1])
    assert points["| P1"] == ["0.5693", "0.7623", "0.6706", "0.6842"]
    assert points["| P2"] == ["0.1556", "0.5303", "0.5833", "0.5868"]
    assert points["| Avg. P"] == ["0.3987", "0.1550", "0.3618", "0.3292"]
    # without resamples the printed matrix is the one printed before intervals existed
    assert main(["compare", "--humans", str(shared_data / "human_annotations.jsonl"), "--paper-compatible",
                 "--resamples", "0"]) == 0
    plain = capsys.readouterr().out.split("### Average score")[1]
    assert "| P1 |  | 0.5693 | 0.7623 | 0.6706 | 0.6842 |" in plain
    assert "| P2 | 0.1556 |  | 0.5303 | 0.5833 | 0.5868 |" in plain
    assert "| Avg. P | 0.3987 | 0.1550 | 0.3618 | 0.3292 |  |" in plain


@pytest.mark.parametrize("args", [["--tau", "d"], ["--mipsa-ties", "half"]])
def test_bad_choices_exit_2(args, capsys):
    assert main(["compare", *args]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: metaeval compare: argument") and len(err.splitlines()) == 1, err


def test_table5_from_mindeval_run_directories(tmp_path, capsys):
    """Judge A and judge B (another judge prompt) each scored two clinicians' runs; runs of one
    judge are merged into one leaderboard, and fake/judge is also a clinician (self-preference)."""
    from mindeval.cli import main as mindeval_main

    dirs = {}
    for clin in ("fake/echo", "fake/judge"):
        for label, prompt in (("A", "judge/default"), ("B", "judge/length_penalty")):
            out = tmp_path / f"{label}-{clin.split('/')[1]}"
            assert mindeval_main(["run", "--patient", "fake/echo", "--clinician", clin, "--judge", "fake/judge",
                                  "--judge-prompt", prompt, "--profiles", "demo", "--limit", "3", "--turns", "2",
                                  "--out", str(out), "--quiet"]) == 0
            dirs.setdefault(label, []).append(out)
    out = tmp_path / "cmp"
    args = [f"{lab}={d}" for lab, ds in dirs.items() for d in ds]
    assert main(["compare", "--judges", *args, "--out", str(out), "--no-plots"]) == 0
    data = json.loads((out / "agreement.json").read_text())
    assert data["matrices"]["average"]["labels"] == ["A", "B"]
    assert data["matrices"]["average"]["n_interactions"] == 6
    [row] = data["table5"]
    assert row["reference"] == "A" and row["self_system"] == "fake/judge" and row["n_profiles"] == 3
    assert set(data["leaderboards"]["A"]) == {"fake/echo", "fake/judge"}
    capsys.readouterr()
    # the same runs under one label twice would double-count interactions: refused
    assert main(["compare", "--judges", f"A={dirs['A'][0]}", f"A={dirs['A'][0]}", "--out", str(out)]) == 2
    assert "same interactions" in capsys.readouterr().err


def test_paper_compatible_conflicting_zeros_is_refused(shared_data, capsys):
    from mindeval.cli.meta import main as meta_main

    rc = meta_main(["compare", "--humans", str(shared_data / "human_annotations.jsonl"),
                    "--paper-compatible", "--zeros", "missing", "--no-plots"])
    assert rc == 2 and "--zeros missing" in capsys.readouterr().err


def test_every_figure_is_legible_and_the_calibration_names_its_n(tiny_authors, tmp_path, monkeypatch):
    """Issue 29: heatmap cell text was 6 pt; the calibration plot's bias bars named no n."""
    pytest.importorskip("matplotlib")
    from tests.support.figures import record_figures

    seen = record_figures(monkeypatch)
    jdir = judge_dir_from_humans(tiny_authors, tmp_path / "judge")
    assert main(["compare", "--humans", str(tiny_authors), "--judges", f"J={jdir}", "--out", str(tmp_path / "c")]) == 0
    heatmaps = [name for name in seen if name.startswith("heatmap_")]
    data = json.loads((tmp_path / "c" / "agreement.json").read_text())
    per_format = len(data["matrices"]) * len(layouts_for(False, MetricOptions()))  # every layout, every axis
    assert len(heatmaps) == 2 * per_format and "calibration_J.png" in seen  # PNG and SVG of each
    for name, fig in seen.items():
        assert fig.min_font_pt >= 8, name
    cells = [t for t in seen["heatmap_average_tau_mipsa.png"].texts  # cell labels with a defined value
             if "\n" in t and t[:1] in "[-0123456789" and "nan" not in t]
    assert cells and [t for t in cells if not re.search(r"\[-?\d\.\d+, -?\d\.\d+\]", t)] == []  # each with its interval
    bias = seen["calibration_J.png"].axes[0]
    assert bias.bar_sets == bias.bar_sets_with_errors == 1
    assert any(re.search(r"bias per axis \(n = \d+ interactions\)", t) for t in seen["calibration_J.png"].texts)


def test_forest_plot_shows_each_judges_tau_with_interval_against_the_human_range(tiny_authors, tmp_path,
                                                                                  monkeypatch):
    """Issue 29: a forest plot of each judge's agreement with humans against the human-human range."""
    pytest.importorskip("matplotlib")
    from matplotlib.collections import PolyCollection

    from tests.support.figures import record_figures

    seen = record_figures(monkeypatch)
    shapes = []
    from matplotlib.figure import Figure

    save = Figure.savefig

    def savefig(self, fname, *args, **kwargs):
        if str(fname).endswith("forest_tau.png"):
            ax = self.axes[0]
            shapes.append((ax.get_xlim(), [c for c in ax.collections if isinstance(c, PolyCollection)]))
        return save(self, fname, *args, **kwargs)

    monkeypatch.setattr(Figure, "savefig", savefig)
    jdir = judge_dir_from_humans(tiny_authors, tmp_path / "judge")
    out = tmp_path / "c"
    assert main(["compare", "--humans", str(tiny_authors), "--judges", f"J={jdir}", "--out", str(out)]) == 0
    assert (out / "forest_tau.png").is_file() and (out / "forest_tau.svg").is_file()
    fig = seen["forest_tau.png"]
    agreement = json.loads((out / "agreement.json").read_text())
    axes = list(agreement["matrices"])
    ax = fig.axes[0]
    assert ax.errorbar_sets == len(axes)  # one point per judge and dimension, each with its interval
    assert fig.min_font_pt >= 8
    for axis in axes:
        cell = agreement["matrices"][axis]["summary"].get(f"J|{AVG}") or agreement["matrices"][axis]["summary"][
            f"{AVG}|J"]
        tau = cell["tau"][1] if len(cell["tau"]) == 3 else cell["tau"][0]
        label = next(t for t in fig.texts if t.startswith(f"τ {tau:.2f} ["))
        assert re.search(r"\[-?\d\.\d\d, -?\d\.\d\d\] n=\d+", label)
        assert f"{axis}: J" in fig.texts
    xlim, bands = shapes[0]
    assert xlim == (-1.0, 1.0)  # τ's whole range
    assert len(bands) == len(axes)  # the human-human range behind every dimension's rows
    assert "human-human range" in fig.texts
