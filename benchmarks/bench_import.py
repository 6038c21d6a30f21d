"""Import and export speed of the annotation store, with the authors' human_annotations.jsonl.

Usage: .venv/bin/python benchmarks/bench_import.py [--file PATH] [--db URL] [--repeat 3]

Imports the file into a fresh study, exports it in the authors' layout, checks that the
rows come back identical, imports the export into a second study (its ratings go to the
already imported annotators: no new people), and times each step. SQLite in a temporary
folder by default; ``--db`` must point at an empty database.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path

from annotation_app.services import SYSTEM, Workspace

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_FILE = ROOT.parent / "shared" / "data" / "mindeval-official" / "human_annotations.jsonl"


def once(url: str, src: Path, tag: str) -> dict[str, float | int | bool]:
    ws = Workspace(url)
    try:
        ws.create_study(SYSTEM, f"in-{tag}", "rating")
        t0 = time.perf_counter()
        rep = ws.import_path(SYSTEM, f"in-{tag}", src)
        t1 = time.perf_counter()
        text = ws.export_text(SYSTEM, f"in-{tag}", "authors")
        t2 = time.perf_counter()
        original = [json.loads(x) for x in src.read_text(encoding="utf-8").splitlines() if x.strip()]
        exported = [json.loads(x) for x in text.splitlines()]
        with tempfile.TemporaryDirectory() as tmp:
            back = Path(tmp) / "export.jsonl"
            back.write_text(text, encoding="utf-8")
            ws.create_study(SYSTEM, f"again-{tag}", "rating")
            t3 = time.perf_counter()
            again = ws.import_path(SYSTEM, f"again-{tag}", back)
            t4 = time.perf_counter()
        return {"rows": len(original), "items": rep.items_linked, "ratings": rep.ratings_added,
                "annotators": rep.annotators_added, "identical": exported == original,
                "reimport_ratings": again.ratings_added, "reimport_new_people": again.annotators_added,
                "import_s": t1 - t0, "export_s": t2 - t1, "reimport_s": t4 - t3}
    finally:
        ws.close()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--file", type=Path, default=DEFAULT_FILE)
    ap.add_argument("--db", default=None, help="an empty database URL (default: SQLite in a temp folder)")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        url = args.db or f"sqlite:///{Path(tmp) / 'bench.db'}"
        runs = [once(url, args.file, str(i)) for i in range(args.repeat)]
    first = runs[0]
    print(f"{args.file.name}: {first['rows']} rows → {first['items']} items, {first['ratings']} ratings, "
          f"{first['annotators']} imported annotators; authors export identical: {first['identical']}; "
          f"re-import of the export: {first['reimport_ratings']} ratings, {first['reimport_new_people']} new people")
    for key in ("import_s", "export_s", "reimport_s"):
        xs = [float(r[key]) for r in runs]
        print(f"  {key[:-2]:<9} median {statistics.median(xs) * 1000:.0f} ms (min {min(xs) * 1000:.0f}, n={len(xs)})")


if __name__ == "__main__":
    main()
