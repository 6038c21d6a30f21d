"""The browser tests' time, from a pytest JUnit report (``scripts/test --junitxml FILE``).

Prints, per test file whose name holds "browser", its tests, their summed seconds and the slowest
test; then the total and its share of all test-seconds. Compare two reports (a commit before and
after, each run the same way, e.g. beside two CPU hogs) by passing both::

    .venv/bin/python benchmarks/bench_browser_tests.py before.xml [after.xml]
"""

from __future__ import annotations

import sys
import xml.etree.ElementTree as ET
from collections import defaultdict
from pathlib import Path


def browser_tests(report: Path) -> tuple[dict[str, float], float]:
    """Seconds of each browser test (``file::name``) and of every test in ``report``."""
    tests: dict[str, float] = {}
    total = 0.0
    for case in ET.parse(report).getroot().iter("testcase"):
        seconds = float(case.get("time") or 0.0)
        total += seconds
        classname = case.get("classname") or ""
        if "browser" in classname:
            tests[f"{_file_of(classname)}::{case.get('name')}"] = seconds
    return tests, total


def _file_of(classname: str) -> str:
    """``tests.app.test_x`` or ``tests.app.test_x.TestClass``: ``test_x.py``."""
    parts = classname.split(".")
    modules = [p for p in parts if p.startswith("test_")]
    return (modules[0] if modules else parts[-1]) + ".py"


def summary(report: Path) -> tuple[str, dict[str, float]]:
    """A report's lines and its browser tests' seconds."""
    tests, total = browser_tests(report)
    by_file: dict[str, list[float]] = defaultdict(list)
    for name, seconds in tests.items():
        by_file[name.split("::", 1)[0]].append(seconds)
    lines = [f"{report}:"]
    browser, n = sum(tests.values()), len(tests)
    for name in sorted(by_file, key=lambda k: -sum(by_file[k])):
        times = by_file[name]
        lines.append(f"  {name:44s} {len(times):3d} tests {sum(times):8.0f} s  (slowest {max(times):.0f} s)")
    share = f"{browser / total:.0%}" if total else "n/a"
    lines.append(f"  browser tests: {n} tests, {browser:.0f} s of {total:.0f} test-seconds ({share})")
    return "\n".join(lines), tests


def main(argv: list[str]) -> int:
    if not argv or len(argv) > 2:
        print(__doc__.strip().splitlines()[-1].strip(), file=sys.stderr)
        return 2
    reports = []
    for arg in argv:
        path = Path(arg)
        if not path.is_file():
            print(f"{path}: no such JUnit report", file=sys.stderr)
            return 2
        try:
            text, tests = summary(path)
        except ET.ParseError as exc:
            print(f"{path}: line {exc.position[0]}: not a JUnit XML report ({exc})", file=sys.stderr)
            return 2
        print(text)
        reports.append(tests)
    if len(reports) == 2:
        print(compare(*reports))
    return 0


def compare(before: dict[str, float], after: dict[str, float]) -> str:
    """After against before: all browser tests, and the tests both reports ran (like for like)."""
    both = sorted(set(before) & set(after))
    b, a = sum(before.values()), sum(after.values())
    b_same, a_same = sum(before[k] for k in both), sum(after[k] for k in both)
    return "\n".join([
        f"all browser tests: {a:.0f} s ({len(after)} tests) after vs {b:.0f} s ({len(before)}) before"
        + (f" = {a / b:.2f}x" if b else ""),
        f"the {len(both)} tests both ran: {a_same:.0f} s after vs {b_same:.0f} s before"
        + (f" = {a_same / b_same:.2f}x" if b_same else ""),
    ])

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
