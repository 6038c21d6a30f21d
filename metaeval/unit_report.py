"""The unit-level figures as terminal lines, a Markdown section and CSV files (``extra["unit_agreement"]``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd

from .unit_agreement import HUMANS

KAPPA = {"kappa": "κ", "weighted_kappa": "κw"}
MAJORITY = "majority of the other humans"


def _fig(r: dict[str, Any]) -> str:
    if r["value"] != r["value"]:  # NaN: undefined (e.g. one category only)
        pairs = f", {r['n_undefined']} of {r['n_pairs']} pairs undefined" if r.get("n_undefined") else ""
        return f"n/a (n={r['n_items']}{pairs})"
    ci = "" if r["ci_low"] != r["ci_low"] else f" [{r['ci_low']:.2f}, {r['ci_high']:.2f}]"
    skipped = f", {r['n_undefined']} of {r['n_pairs']} pairs undefined, left out" if r.get("n_undefined") else ""
    return f"{r['value']:.2f}{ci} (n={r['n_items']}{skipped})"


def _by(rep: dict[str, Any]) -> dict[tuple[str, str], dict[str, dict[str, Any]]]:
    """(field, rater group) -> metric -> figure: means over pairs, vs the majority, all humans."""
    out: dict[tuple[str, str], dict[str, dict[str, Any]]] = {}
    for r in rep["figures"]:
        if r["reference"] == HUMANS:
            out.setdefault((r["field"], r["rater"]), {})[r["metric"]] = r
        elif r["reference"] == MAJORITY:
            out.setdefault((r["field"], r["rater"]), {})[f"maj_{r['metric']}"] = r
        elif r["reference"] == "all humans":
            out.setdefault((r["field"], HUMANS), {})[f"all_{r['metric']}"] = r
    return out


def _cells(m: dict[str, dict[str, Any]]) -> list[tuple[str, str]]:
    kap = next((k for k in KAPPA if k in m), None)
    out = [(KAPPA[kap], _fig(m[kap]))] if kap else []
    out += [(label, _fig(m[key])) for key, label in (("alpha", "α"), ("maj_agreement", "agree vs maj."),
                                                    ("maj_precision", "P"), ("maj_recall", "R"), ("maj_f1", "F1"),
                                                    ("all_fleiss_kappa", "Fleiss κ"), ("all_alpha", "α all"))
            if key in m]
    return out


def _header(rep: dict[str, Any]) -> str:
    per = "per question" if rep["unit"] == "question" else "per reply, and per conversation's worst level and incidents"
    return (f"Agreement at the judge's unit (target {rep['target']}, {per}; {rep['n_conversations']} conversations; "
            f"humans {', '.join(rep['humans'])}; judges {', '.join(rep['judges']) or 'none'}). κ/α: mean over pairs "
            "with each human (a pair whose value is undefined is left out and counted: `k of N pairs undefined`); vs maj.: against the majority of the other humans, averaged over the left-out human; "
            "intervals resample conversations.")


def unit_lines(extra: dict[str, Any]) -> list[str]:
    """Terminal lines: one per field and rater group, then the alternative annotator tests."""
    rep = extra.get("unit_agreement")
    if not rep:
        return []
    out = ["", _header(rep), f"  ties: {rep['tie_rule']}"]
    for (field, who), m in _by(rep).items():
        out.append(f"  {field} {who}: " + " · ".join(f"{k} {v}" for k, v in _cells(m)))
    for t in rep["alt_tests"]:
        r = t["result"]
        out.append(f"  alternative annotator test {t['judge']} {t['field']} (ε = {r['epsilon']:g}): "
                   f"{r['status'].upper() if ':' not in r['status'] else r['status']} — ω {r['omega']:.2f}, "
                   f"ρ {r['rho']:.3f}, items per human {min((h['n_items'] for h in r['humans']), default=0)}")
    return out


def unit_section(extra: dict[str, Any]) -> list[str]:
    """The Markdown section "Agreement at the judge's unit"."""
    rep = extra.get("unit_agreement")
    if not rep:
        return []
    rows = _by(rep)
    heads = ["κ / κw", "α", "agree vs maj.", "P", "R", "F1", "Fleiss κ", "α all"]
    out = ["## Agreement at the judge's unit\n", _header(rep), "", f"Ties: {rep['tie_rule']}.", "",
           "| Field | Rater | " + " | ".join(heads) + " |", "|---" * (len(heads) + 2) + "|"]
    for (field, who), m in rows.items():
        cells = dict(_cells(m))
        cells["κ / κw"] = cells.pop("κ", cells.pop("κw", ""))
        out.append(f"| {field} | {who} | " + " | ".join(cells.get(h, "") for h in heads) + " |")
    out += ["", "| Judge | Field | ε | result | ω | ρ | items per human |", "|---|---|---|---|---|---|---|"]
    for t in rep["alt_tests"]:
        r = t["result"]
        out.append(f"| {t['judge']} | {t['field']} | {r['epsilon']:g} | {r['status']} | {r['omega']:.2f} | "
                   f"{r['rho']:.3f} | {min((h['n_items'] for h in r['humans']), default=0)} |")
    return [*out, ""]


def write_unit_csv(out: Path, extra: dict[str, Any]) -> dict[str, Path]:
    """``unit_agreement.csv`` (every figure) and ``unit_alt_tests.csv`` (per judge, field and left-out human)."""
    rep = extra.get("unit_agreement")
    if not rep:
        return {}
    paths = {"unit_csv": out / "unit_agreement.csv", "unit_alt_csv": out / "unit_alt_tests.csv"}
    pd.DataFrame(rep["figures"]).to_csv(paths["unit_csv"], index=False)
    alt = [{"judge": t["judge"], "field": t["field"], "unit": t["unit"], "scale": t["scale"],
            "epsilon": t["result"]["epsilon"], "status": t["result"]["status"], "omega": t["result"]["omega"],
            "rho": t["result"]["rho"], **h} for t in rep["alt_tests"] for h in t["result"]["humans"]]
    pd.DataFrame(alt).to_csv(paths["unit_alt_csv"], index=False)
    return paths
