"""``mindeval profiles stats``: what a profile set contains, beside what the paper states.

Reference values and their sources:
  * severe depressive and/or anxious symptoms ~50%: paper Table 1 (and §4.2's split);
  * the other Table 1 archetypes (~20%, ~20%, ~10%, ~8%, ~8%) were found by reading the
    backstories, so attributes cannot measure them; related attribute shares are shown
    and labelled as such;
  * a single person does not live with a spouse: paper footnote 3;
  * ~20% non-heterosexual, ~2% gender identity different from sex, ages 21-69: design targets of the sampler.
"""

from __future__ import annotations

import statistics
from collections import Counter
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from ..records import ATTRIBUTE_FIELDS, Profile
from .pool import AttributePool

LEVELS = ("minimal", "mild", "moderate", "severe")
LONG_TEXT = ("conversation_style",)  # shown as distinct counts only


class StatRow(BaseModel):
    section: str
    label: str
    observed: str
    reference: str = ""
    source: str = ""
    share: float | None = None  # the observed share (0-1) when the row is a share
    against: str = ""  # the same statistic in a second set (``--against``)


class ProfileStats(BaseModel):
    path: str
    n: int
    rows: list[StatRow]
    distributions: dict[str, list[tuple[str, int]]]
    distinct: dict[str, int]
    against_path: str | None = None
    against_n: int | None = None


def _pct(k: int, n: int) -> str:
    return f"{100.0 * k / n:.1f}% ({k})" if n else "n/a"


def symptom_level(text: str) -> str:
    t = text.lower()
    for level in reversed(LEVELS):  # "severe" before "mild" etc.
        if level in t:
            return level
    return "other"


def _attrs(p: Profile) -> dict[str, Any]:
    return p.member_attributes.model_dump()


def is_heterosexual(text: str) -> bool:
    t = text.lower()
    return "heterosexual" in t or "straight" in t


def identity_differs(a: dict[str, Any]) -> bool:
    return str(a["gender_identity"]).strip().lower() != str(a["sex"]).strip().lower()


_NO_PARTNER_WORDS = ("single", "divorced", "widow", "separated", "dating")


def single_with_spouse(a: dict[str, Any]) -> bool:
    rel = str(a["relationship_status"]).lower()
    no_partner = any(w in rel for w in _NO_PARTNER_WORDS) and "married" not in rel.replace("not married", "")
    return no_partner and "spouse" in str(a["living_situation"]).lower()


def _shares(profiles: list[Profile], pool: AttributePool | None) -> dict[str, tuple[int, int] | None]:
    """Counts ``(k, n)`` behind every share row (None when it cannot be computed)."""
    n = len(profiles)
    attrs = [_attrs(p) for p in profiles]
    dep = [symptom_level(a["depressive_symptoms"]) for a in attrs]
    anx = [symptom_level(a["anxious_symptoms"]) for a in attrs]
    out: dict[str, tuple[int, int] | None] = {
        "severe": (sum(d == "severe" or x == "severe" for d, x in zip(dep, anx)), n),
        "severe_dep_only": (sum(d == "severe" and x != "severe" for d, x in zip(dep, anx)), n),
        "severe_anx_only": (sum(x == "severe" and d != "severe" for d, x in zip(dep, anx)), n),
        "severe_both": (sum(d == "severe" and x == "severe" for d, x in zip(dep, anx)), n),
        "non_hetero": (sum(not is_heterosexual(a["sexual_orientation"]) for a in attrs), n),
        "identity_differs": (sum(identity_differs(a) for a in attrs), n),
        "age_in_range": (sum(21 <= int(a["age"]) <= 69 for a in attrs), n),
        "single_with_spouse": (sum(single_with_spouse(a) for a in attrs), n),
        "lgbtq": (sum(not is_heterosexual(a["sexual_orientation"]) or identity_differs(a) for a in attrs), n),
        "not_white": (sum(str(a["race"]).lower() not in ("white", "caucasian") for a in attrs), n),
        "partner_loss": (sum(any(w in str(a["relationship_status"]).lower()
                                 for w in ("widow", "divorced", "separated")) for a in attrs), n),
        "precarity": None,
    }
    for level in LEVELS:
        out[f"dep_{level}"] = (dep.count(level), n)
        out[f"anx_{level}"] = (anx.count(level), n)
    if pool is not None:
        tiers = {v.text: v.tag("tier") for v in pool["financial_situation"].values}
        if all(a["financial_situation"] in tiers for a in attrs):
            out["precarity"] = (sum(tiers[a["financial_situation"]] <= 2 for a in attrs), n)
    return out


# (key, section, label, reference, source)
_ROWS: tuple[tuple[str, str, str, str, str], ...] = (
    ("severe", "Severity mix", "severe depressive and/or anxious", "~50%", "paper Table 1"),
    ("severe_dep_only", "Severity mix", "  severe depressive only", "", ""),
    ("severe_anx_only", "Severity mix", "  severe anxious only", "", ""),
    ("severe_both", "Severity mix", "  both severe", "", ""),
    *((f"dep_{lv}", "Severity mix", f"depressive: {lv}", "", "") for lv in LEVELS),
    *((f"anx_{lv}", "Severity mix", f"anxious: {lv}", "", "") for lv in LEVELS),
    ("non_hetero", "Identity", "sexual orientation not heterosexual", "~20%", "design target"),
    ("identity_differs", "Identity", "gender identity differs from sex", "~2%", "design target"),
    ("age_in_range", "Identity", "age within 21-69", "100%", "design target"),
    ("single_with_spouse", "Realism", "no partner but lives with a spouse", "0", "paper fn. 3"),
    ("precarity", "Table 1 (related attribute shares)",
     "financial tier 1-2 (pool) ~ economic precarity", "~20% archetype", "paper Table 1"),
    ("not_white", "Table 1 (related attribute shares)",
     "race other than White ~ racial/cultural outsider", "~10% archetype", "paper Table 1"),
    ("lgbtq", "Table 1 (related attribute shares)",
     "LGBTQ+ identity ~ LGBTQ+ identity rejection", "~8% archetype", "paper Table 1"),
    ("partner_loss", "Table 1 (related attribute shares)",
     "widowed/divorced/separated ~ loss of long-term partner", "~8% archetype", "paper Table 1"),
)


def compute_stats(
    profiles: list[Profile], path: str | Path, *, pool: AttributePool | None = None, top: int = 5,
    against: list[Profile] | None = None, against_path: str | Path | None = None,
) -> ProfileStats:
    """All rows of the stats table plus the per-attribute distributions."""
    n = len(profiles)
    counts = _shares(profiles, pool)
    other = _shares(against, pool) if against else None
    rows: list[StatRow] = []
    for key, section, label, ref, source in _ROWS:
        kn = counts[key]
        row = StatRow(section=section, label=label, reference=ref, source=source,
                      observed=_pct(*kn) if kn else "n/a (values not from the pool)",
                      share=(kn[0] / kn[1]) if kn and kn[1] else None)
        if other is not None:
            ok = other[key]
            row.against = _pct(*ok) if ok else "n/a"
        rows.append(row)
    rows.append(StatRow(section="Table 1 (related attribute shares)",
                        label="parental emotional unavailability", observed="n/a (backstory only)",
                        reference="~20% archetype", source="paper Table 1",
                        against="n/a" if other is not None else ""))
    ages = [int(p.member_attributes.age) for p in profiles]
    age_row = StatRow(section="Identity", label="age min / median / max",
                      observed=f"{min(ages)} / {statistics.median(ages):g} / {max(ages)}",
                      reference="21-69", source="design target")
    if against:
        oa = [int(p.member_attributes.age) for p in against]
        age_row.against = f"{min(oa)} / {statistics.median(oa):g} / {max(oa)}"
    rows.insert(next(i for i, r in enumerate(rows) if r.section == "Realism"), age_row)
    dists: dict[str, list[tuple[str, int]]] = {}
    distinct: dict[str, int] = {}
    dumped = [_attrs(p) for p in profiles]
    for attr in ATTRIBUTE_FIELDS:
        c = Counter(str(a[attr]) for a in dumped)
        distinct[attr] = len(c)
        if attr not in LONG_TEXT and attr != "name":
            dists[attr] = sorted(c.items(), key=lambda kv: (-kv[1], kv[0]))[:top]
    return ProfileStats(path=str(path), n=n, rows=rows, distributions=dists, distinct=distinct,
                        against_path=str(against_path) if against_path else None,
                        against_n=len(against) if against else None)


def _clip(s: str, width: int) -> str:
    return s if len(s) <= width else s[: width - 1] + "…"


def _short_pct(k: int, n: int) -> str:
    pct = 100.0 * k / n
    return f"{pct:.0f}%" if pct >= 1 else f"{pct:.1f}%"


def render_stats(st: ProfileStats) -> str:
    """The stats as a plain-text table."""
    has_against = st.against_path is not None
    head = ["", "observed"] + (["against"] if has_against else []) + ["paper / target", "source"]
    out = [f"Profiles: {st.n} ({st.path})"]
    if has_against:
        out.append(f"Against:  {st.against_n} ({st.against_path})")
    section = None
    table: list[list[str]] = []
    for r in st.rows:
        if r.section != section:
            section = r.section
            table.append([f"[{section}]"] + [""] * (len(head) - 1))
        cells = [f"  {r.label}", r.observed] + ([r.against] if has_against else []) + [r.reference, r.source]
        table.append(cells)
    widths = [max(len(row[i]) for row in [head] + table) for i in range(len(head))]
    out.append("")
    out.append("  ".join(h.ljust(w) for h, w in zip(head, widths)).rstrip())
    out.append("  ".join("-" * w for w in widths))
    for row in table:
        out.append("  ".join(c.ljust(w) for c, w in zip(row, widths)).rstrip())
    out.append("")
    out.append("Table 1 archetypes were found by reading the paper's 50 backstories; the attribute shares")
    out.append("beside them are related facts, not the archetypes themselves.")
    out.append("")
    out.append("[Distributions] (top values of each attribute; distinct values in brackets)")
    for attr in ATTRIBUTE_FIELDS:
        if attr not in st.distributions:
            out.append(f"  {attr} [{st.distinct[attr]} distinct]")
            continue
        items = ", ".join(f"{_clip(v, 48)} {_short_pct(k, st.n)}" for v, k in st.distributions[attr])
        out.append(f"  {attr} [{st.distinct[attr]}]: {items}")
    return "\n".join(out) + "\n"
