"""A launch's overrides work out their `key_span` and `value_span` when first read
(`launch._ReadOverride`): whichever is read first, they are the spans `launch._spans` gives
for the word, and the override copies, pickles and compares as the plain `Override`."""

from __future__ import annotations

import copy
import dataclasses
import pickle

from verl_lint.evaluate import evaluate_script
from verl_lint.evaluate.launch import _spans
from verl_lint.evaluate.model import Override
from verl_lint.shell import parse_script
from verl_lint.source import SourceText

_SCRIPT = (b'V=1\nARGS=(x.y=5 "z=$V")\n'
           b'python3 -m verl.trainer.main_ppo a.b=2 +c.d=$V \'e.f=3\' g="$V"x ~h.i '
           b'"${ARGS[@]}" \xc3\xa9.k=4\n')


def _overrides():
    source = SourceText(_SCRIPT)
    model = parse_script(source)
    (run,) = evaluate_script(model)
    return model, run.launches[0].overrides


def _fields(ov) -> dict:
    return {f.name: getattr(ov, f.name) for f in dataclasses.fields(Override)}


def test_the_spans_read_later_are_those_worked_out_at_once():
    model, overrides = _overrides()
    assert len(overrides) == 8
    _, again = _overrides()
    for ov, other in zip(overrides, again):
        args = Override.key_span.__get__(ov)  # not read yet: `_spans`'s arguments
        expected = _spans(*args)
        assert isinstance(args, tuple) and args[-1] == model.span
        assert (ov.key_span, ov.value_span) == expected  # the key span first
        assert (other.value_span, other.key_span) == expected[::-1]  # the value span first
        assert ov.key_span is ov.key_span and other.value_span is other.value_span  # kept


def test_a_read_override_copies_pickles_and_compares_as_the_record():
    _, overrides = _overrides()
    _, again = _overrides()
    for ov, other in zip(overrides, again):
        for twin in (pickle.loads(pickle.dumps(ov)), copy.copy(ov), copy.deepcopy(ov)):
            assert type(twin) is Override and _fields(twin) == _fields(ov)
        assert ov == other and hash(ov) == hash(other) and repr(ov) == repr(other)
        changed = dataclasses.replace(ov, text="b=3")
        assert changed.text == "b=3" and changed.key_span == ov.key_span
        assert changed.value_span == ov.value_span
