"""`values.BarePart` (made without `__init__`, its fields assigned by `interp._literal_part`) is
the Part `Part(value, src)` makes: same fields, same text, no other slots."""

from __future__ import annotations

from verl_lint.evaluate.interp import _literal_part
from verl_lint.evaluate.values import BarePart, Part
from verl_lint.shell import parse_script
from verl_lint.source import SourceText


def test_a_literal_piece_makes_the_part_of_its_text_and_place():
    model = parse_script(SourceText(b"X=abc Y='q r' Z=\"s\" W=a\\$b\n"))
    got = [(p.value, p.src) for a in model.assignments for p in map(_literal_part,
                                                                     a.value.pieces)]
    assert got == [("abc", 2), ("q r", 9), ("s", 17), ("a", 22), ("$", None), ("b", 25)]
    part = _literal_part(model.assignments[0].value.pieces[0])
    assert isinstance(part, Part) and type(part) is BarePart and not hasattr(part, "__dict__")
    assert repr(part) == repr(Part("abc", 2)) == "Part('abc', 2)"
