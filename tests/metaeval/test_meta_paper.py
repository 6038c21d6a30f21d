"""On the authors' 60 × 4 annotations: loading, and reproducing the paper's human tables."""

from __future__ import annotations

import warnings

import pytest

from metaeval.matrices import AVG_LABEL, MetricOptions, Panel, build_all
from metaeval.sources import load_authors_annotations
from mindeval.judging.authors import AUTHORS_FEWSHOT_IDS

PAIRS = [("P1", "P2"), ("P1", "P3"), ("P1", "P4"), ("P2", "P3"), ("P2", "P4"), ("P3", "P4")]
# Paper Tables 13-18 (Table 3 = the average score): human-human Kendall τ and MIPSA, and
# Avg. P (leave-one-out) against P1..P4.
PAPER = {
    "CAC": ([0.2089, 0.3611, 0.3479, -0.0008, 0.1213, 0.0344], [0.6189, 0.6772, 0.6004, 0.4693, 0.5570, 0.5381],
            [0.4495, 0.1331, 0.1250, 0.1880], [0.7259, 0.5995, 0.5557, 0.5447]),
    "EPC": ([-0.037, 0.1881, 0.3042, -0.0396, -0.0443, 0.1794], [0.4860, 0.6531, 0.6439, 0.4614, 0.5123, 0.6566],
            [0.2586, -0.0313, 0.1875, 0.2366], [0.6618, 0.5605, 0.7013, 0.7390]),
    "AR": ([0.0950, 0.2758, 0.2286, -0.0728, 0.2670, 0.1685], [0.5395, 0.6127, 0.6302, 0.4868, 0.5952, 0.6267],
           [0.2868, 0.1458, 0.1368, 0.3453], [0.6965, 0.5478, 0.6224, 0.6921]),
    "TRA": ([0.1670, 0.1558, 0.1870, 0.0451, 0.0390, 0.0389], [0.6175, 0.5750, 0.5074, 0.6224, 0.4737, 0.4724],
            [0.2752, 0.1102, 0.1118, 0.1382], [0.5618, 0.5917, 0.5351, 0.4531]),
    "ASCQ": ([0.2741, 0.2928, 0.2984, -0.013, 0.0759, 0.1182], [0.6355, 0.6390, 0.6302, 0.5132, 0.4548, 0.5039],
             [0.4215, 0.1237, 0.1405, 0.2483], [0.7434, 0.6224, 0.5653, 0.5702]),
    "average": ([0.1556, 0.3854, 0.3690, 0.1324, 0.1178, 0.2619], [0.5693, 0.7623, 0.6706, 0.5303, 0.5833, 0.5693],
                [0.3987, 0.1550, 0.3618, 0.3292], [0.6842, 0.5868, 0.6307, 0.6618]),
}


@pytest.fixture(scope="module")
def authors(shared_data):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return {z: load_authors_annotations(shared_data / "human_annotations.jsonl", zeros=z) for z in ("missing", "zero")}


def test_authors_file_shape(authors):
    src = authors["missing"]
    assert len(src.interactions) == 60
    assert [r.label for r in src.raters] == ["P1", "P2", "P3", "P4"]
    keys = {(it.profile_id, it.system) for it in src.interactions.values()}
    assert len(keys) == 60 and len({k[0] for k in keys}) == 20 and len({k[1] for k in keys}) == 3
    assert set(AUTHORS_FEWSHOT_IDS) <= set(src.interactions)
    f = src.raters[0].frame
    assert set(f["axis"]) == {"CAC", "EPC", "AR", "TRA", "ASCQ", "average"}


def test_paper_human_tables_are_reproduced_exactly(authors):
    panel = Panel(authors["zero"].raters, [], exclude=AUTHORS_FEWSHOT_IDS)
    assert len(panel.keys) == 55
    # the published arithmetic: float means of the annotators in P order (exact=False)
    matrices = build_all(panel, MetricOptions(mipsa_ties="taub", alpha=False, exact=False))
    for axis, (tau, mip, avg_tau, avg_mip) in PAPER.items():
        m = matrices[axis]
        for (a, b), t, mp in zip(PAIRS, tau, mip, strict=True):
            assert m.cell(a, b).point("tau") == pytest.approx(t, abs=6e-5), (axis, a, b)
            assert m.cell(a, b).point("mipsa") == pytest.approx(mp, abs=6e-5), (axis, a, b)
        for h, t, mp in zip(["P1", "P2", "P3", "P4"], avg_tau, avg_mip, strict=True):
            assert m.cell(AVG_LABEL, h).point("tau") == pytest.approx(t, abs=6e-5), (axis, h)
            assert m.cell(AVG_LABEL, h).point("mipsa") == pytest.approx(mp, abs=6e-5), (axis, h)


def test_default_settings_differ_from_paper_settings(authors):
    """The principled default (0 = not rated, equation-(1) ties, all 60) gives other numbers."""
    m = build_all(Panel(authors["missing"].raters, []), MetricOptions(alpha=False), axes=["average"])["average"]
    assert m.n_interactions == 60
    assert m.cell("P1", "P2").point("tau") != pytest.approx(0.1556, abs=1e-3)


def test_exact_means_make_agreement_independent_of_annotator_order(authors):
    """τ(P3, Avg. P) is 0.3618, 0.3612 or 0.3667 with float means, by the order P1, P2, P4 are
    summed in; with exact means it is one value whatever the order."""
    import itertools

    raters = authors["zero"].raters
    got = {}
    for exact in (True, False):
        values = set()
        for order in itertools.permutations(raters):
            panel = Panel(list(order), [], exclude=AUTHORS_FEWSHOT_IDS)
            m = build_all(panel, MetricOptions(mipsa_ties="taub", alpha=False, exact=exact), axes=["average"])
            values.add(round(m["average"].cell(AVG_LABEL, "P3").point("tau"), 10))
        got[exact] = values
    assert len(got[True]) == 1 and round(next(iter(got[True])), 4) == 0.3621
    assert {round(v, 4) for v in got[False]} == {0.3612, 0.3618, 0.3667}
