"""The headline-score language (mindeval.formula): what it computes and everything it refuses."""

from __future__ import annotations

import ast
import math
import re
from pathlib import Path

import numpy as np
import pytest

from mindeval import formula as formula_module
from mindeval.formula import FormulaError, parse_formula

KNOWN = {"a", "b", "c", "pct_best_practice", "pct_high_harm"}
VERA = "max(0, (50 + pct_best_practice / 2) * (1 - pct_high_harm / 100) ** 2)"


def test_vera_formula_on_numbers_and_on_resamples():
    f = parse_formula(VERA, KNOWN)
    assert f.names == {"pct_best_practice", "pct_high_harm"}
    assert f.evaluate({"pct_best_practice": 60, "pct_high_harm": 20}) == pytest.approx(80 * 0.8**2)
    got = f.evaluate({"pct_best_practice": np.array([60.0, 100.0, 0.0]), "pct_high_harm": np.array([20.0, 0.0, 300.0])})
    assert got == pytest.approx([51.2, 100.0, 50 * 4])
    assert parse_formula("max(0, (50 + a/2) * (1 - b/100)**2 - 1000)", KNOWN).evaluate({"a": 1, "b": 2}) == 0


@pytest.mark.parametrize(("text", "want"), [
    ("-a + +b", 1.0), ("-(a + b)", -5.0), ("a ** -1", 0.5), ("min(a, b, c)", 2.0), ("max(a, b, c)", 4.0), ("abs(a - c)", 2.0),
    ("clip(c, 0, 3)", 3.0), ("clip(-c, 0, 3)", 0.0), ("(a + b) * c / 2", 10.0), ("1e3 * a", 2000.0),
    ("a\n  + b", 5.0),  # a YAML block may break the line
])
def test_arithmetic(text, want):
    assert parse_formula(text, KNOWN).evaluate({"a": 2, "b": 3, "c": 4}) == pytest.approx(want)


def test_undefined_results_are_nan_never_a_number():
    assert math.isnan(parse_formula("a / b").evaluate({"a": 1, "b": 0}))
    assert math.isnan(parse_formula("(-a) ** 0.5").evaluate({"a": 8}))
    assert math.isnan(parse_formula("(a * a * a) ** 10").evaluate({"a": 1e12}))  # overflow
    out = parse_formula("a / b").evaluate({"a": np.array([1.0, 1.0]), "b": np.array([0.0, 2.0])})
    assert math.isnan(out[0]) and out[1] == 0.5
    assert math.isnan(parse_formula("a + 1").evaluate({"a": float("nan")}))


@pytest.mark.parametrize(("text", "token", "why"), [
    ("a.__class__", "a.__class__", "attribute access"),
    ("().__class__.__bases__[0].__subclasses__()", "().__class__.__bases__[0].__subclasses__", "only functions"),
    ("__import__('os').system('true')", "__import__('os').system", "only functions"),
    ("open('/etc/passwd')", "open", "only functions are min, max, abs, clip"),
    ("eval('1')", "eval", "only functions"),
    ("__builtins__", "__builtins__", "underscore"),
    ("_private", "_private", "underscore"),
    ("a[0]", "a[0]", "indexing"),
    ("a ** 100", "100", "exponent must be a number between -10 and 10"),
    ("9 ** 9 ** 9", "9 ** 9", "exponent"),
    ("2 ** a", "a", "exponent"),
    ("a // 2", "//", "not allowed"),
    ("a % 2", "%", "not allowed"),
    ("a << 2", "<<", "not allowed"),
    ("~a", "~", "not allowed"),
    ("not a", "not", "not allowed"),
    ("a if b else c", "a if b else c", "not allowed"),
    ("a < b", "a < b", "not allowed"),
    ("a and b", "a and b", "not allowed"),
    ("'text'", "'text'", "only numbers"),
    ("True", "True", "only numbers"),
    ("1j", "1j", "only numbers"),
    ("1e400", "1e400", "finite"),
    ("lambda: 1", "lambda: 1", "not allowed"),
    ("[a, b]", "[a, b]", "not allowed"),
    ("(a := 1)", "a := 1", "not allowed"),
    ("f'{a}'", "f'{a}'", "not allowed"),
    ("max(a)", "max(a)", "at least 2 arguments"),
    ("clip(a, 1)", "clip(a, 1)", "takes 3 arguments"),
    ("max(a, b, key=c)", "max(a, b, key=c)", "plain arguments"),
    ("abs(*a)", "abs(*a)", "plain arguments"),
    ("max", "max", "is a function"),
    ("nope + a", "nope", "not a reported quantity of this target (a, b, c, pct_best_practice"),
])
def test_refused_with_the_offending_token(text, token, why):
    with pytest.raises(FormulaError, match=re.escape(why)) as e:
        parse_formula(text, KNOWN)
    assert e.value.token == token and e.value.column is not None and f"'{token}'" in str(e.value)


@pytest.mark.parametrize(("text", "why"), [
    ("", "empty"), ("a +", "not an expression"), ("a; b", "not an expression"), ("import os", "not an expression"),
    ("(" * 300 + "a" + ")" * 300, "not an expression"), ("a+" * 150 + "a", "more than 200 parts"),
    ("a" * 1001, "longer than 1000"),
])
def test_not_an_expression(text, why):
    with pytest.raises(FormulaError, match=why):
        parse_formula(text, KNOWN)


def test_the_column_points_at_the_token():
    with pytest.raises(FormulaError, match=r"column 9\)") as e:
        parse_formula("a + b + nope", KNOWN)
    assert e.value.token == "nope"


def test_the_language_never_reaches_python_evaluation():
    """No eval, exec, compile or import of user text anywhere in the module."""
    tree = ast.parse(Path(formula_module.__file__).read_text(encoding="utf-8"))
    called = {n.func.id for n in ast.walk(tree) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)}
    assert not called & {"eval", "exec", "compile", "__import__", "getattr"}


def test_a_dimension_subscript_reads_one_named_quantity():
    f = parse_formula("pct_a[DETECT] - pct_a", ["pct_a", "pct_a[DETECT]"])
    assert f.names == {"pct_a", "pct_a[DETECT]"} and f.units == {"DETECT"}
    assert f.evaluate({"pct_a": 10.0, "pct_a[DETECT]": 25.0}) == 15.0
    assert f.why_undefined({"pct_a": 1.0, "pct_a[DETECT]": float("nan")}) == \
        "pct_a[DETECT] is undefined (no rated unit counts toward it)"
