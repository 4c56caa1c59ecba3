"""The shell and arithmetic rules' shortcuts (issue 17) give what the plain walks give."""

from __future__ import annotations

import signal
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from strategies import hostile_scripts, verl_scripts
from verl_lint.rules.shell import array_not_passed
from verl_lint.rules.shell.shell_expanded_interpolation import is_interpolation
from verl_lint.rules.shell.unquoted_glob_override import glob_pattern
from verl_lint.shell import parse_script
from verl_lint.shell.model import words_of
from verl_lint.source import SourceText

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT.parent / "shared" / "corpus" / "verl-head"

# what the prefilters rely on, written to break them: `$` inside quotes, heredocs (quoted and
# not), defaults holding expansions, arithmetic, backticks, escapes, globs in every quoting,
# a function whose heredoc body comes after its closing brace
TRICKY = [
    'A=1\necho "${A:-$B}" ${C:+"$D"} $((E + $F)) `echo $G` \\$H \'$I\' $\'$J\'\n',
    'cat <<EOF\n${X} $Y ${now:%H} ${oc.env:HOME}\nEOF\ncat <<\'EOF\'\n$Z\nEOF\n',
    'f() { cat <<EOF; }\n$INSIDE ${ARR[@]}\nEOF\nARR=(a.b=1 c.d=2)\nf\n',
    'g() {\n  python3 -m verl.trainer.main_ppo "${ARR[@]}"\n}\nARR=(x.y=1)\ng\n',
    'echo ${!prefix*} ${!name} ${#ARR[@]} "${ARR[*]}"\n',
    "python3 -m verl.trainer.main_ppo a.b=[1,2] 'c.d=*' e.f=\\* g.h=\"?\" i.j=x[0] k.l=a/[b]\n",
    'X="new:${X}"\nY=${Y}\necho ${hydra:runtime.cwd} "${now:%Y}" ${a.b} ${.sib}\n',
]


def _scripts() -> list[bytes]:
    paths = sorted((ROOT / "fixtures").rglob("*.sh"))
    if CORPUS.is_dir():
        paths += sorted(CORPUS.rglob("*.sh"))
    return [t.encode() for t in TRICKY] + [p.read_bytes() for p in paths]


def _plain_references(model, names):
    """`_references` as it was (every statement's words, every variable piece), for `names`."""
    out: dict = {}
    for s in model.statements:
        for word in words_of(s):
            for piece in word.variables():
                if piece.operator in ("indirect", "names"):
                    return None
                if piece.name in names:
                    out.setdefault(piece.name, []).append(
                        None if s.function is not None else piece.span)
    return out


def _check_model(data: bytes) -> None:
    model = parse_script(SourceText(data))
    for w in model.words:
        if "$" not in w.text:  # VL103's prefilter
            assert not list(w.variables()), w.text
        if "${" not in w.text:  # VL107's
            assert not any(is_interpolation(p) for p in w.pieces), w.text
        if not ("*" in w.text or "?" in w.text or "[" in w.text):  # VL111's
            assert glob_pattern(w) is None, w.text
    arrays = {a.name for a in model.arrays}
    every = arrays | {p.name for w in model.words for p in w.variables() if p.name}
    for names in (arrays, every, {"A", "ACTOR"}):
        assert array_not_passed._references(model, names) == _plain_references(model, names)


@pytest.mark.parametrize("data", _scripts(), ids=lambda d: d[:40].decode("utf-8", "replace"))
def test_prefilters_and_flat_references_on_real_and_tricky_scripts(data):
    _check_model(data)


@settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.one_of(verl_scripts(), hostile_scripts()))
def test_prefilters_and_flat_references_on_generated_scripts(data):
    _check_model(data)


def test_references_keeps_function_bodies_apart():
    model = parse_script(SourceText(TRICKY[3].encode()))
    assert model.functions
    assert array_not_passed._references(model, {"ARR"}) == {"ARR": [None]}


def test_config_of_answers_for_the_context_asked_and_forgets_it_with_the_context():
    import gc
    from types import SimpleNamespace

    from verl_lint.rules.arithmetic._operands import config_of
    from verl_lint.verl.effective import EffectiveConfig

    src = SourceText(b"$ACTOR_CONFIG\n")
    config = EffectiveConfig("0.9.1", "ppo_trainer", {})

    class Ctx:  # a LaunchContext's fields that config_of reads (weakly referenceable)
        def __init__(self, passthrough, config=config):
            self.config, self.source = config, src
            self.launch = SimpleNamespace(passthrough=passthrough)

    own = Ctx([SimpleNamespace(span=src.span(0, 13))])  # veomni's `$ACTOR_CONFIG`
    plain = Ctx([])
    doubted = config_of(own)
    assert doubted is not config and config_of(own) is doubted
    assert config_of(plain) is config
    assert config_of(own) is doubted
    assert config_of(Ctx([], config=None)) is None
    gc.collect()
    assert not config_of.holds()  # the last context is gone: so is its entry


def test_vl110_prefilter_covers_every_parallel_key():
    from verl_lint.rules.shell.parallel_variable_mismatch import KEY_DIMENSION

    # VL110 skips an override whose key does not end in `parallel_size` before the lookup
    assert all(leaf.endswith("parallel_size") for leaf in KEY_DIMENSION)


def _indexed_close(name, candidates):
    """VL101's `Names.close` as it was: every name indexed before the first question."""
    from verl_lint.rules.shell.undefined_variable import _deletions, _fold, _one_edit, \
        _other_word, _swaps

    names = set(candidates)
    folded: dict = {}
    deletions: dict = {}
    for c in sorted(names):
        folded.setdefault(_fold(c), []).append(c)
        if len(c) >= 5:
            for k in _deletions(c):
                deletions.setdefault(k, set()).add(c)
    same = [c for c in folded.get(_fold(name), ()) if c != name]
    if same:
        return same[0]
    if len(name) < 6:
        return None
    pool = set(deletions.get(name, ()))
    for k in _deletions(name):
        pool |= deletions.get(k, set())
        if k in names:
            pool.add(k)
    pool |= {w for w in _swaps(name) if w in names}
    near = [c for c in pool if c != name and _one_edit(name, c) and not _other_word(name, c)]
    return near[0] if len(near) == 1 else None


# few letters, both cases and `_`: folds, typos, swaps and whole-word differences all occur
_VAR = st.text(alphabet="aAbB_cd", min_size=1, max_size=9)


@settings(max_examples=300, deadline=None)
@given(st.lists(_VAR, max_size=25), st.lists(_VAR, min_size=1, max_size=4))
def test_names_close_scans_then_indexes_with_the_same_answers(candidates, questions):
    from verl_lint.rules.shell.undefined_variable import Names

    names = Names(candidates)  # the first question scans, the next ones use the index
    for q in questions:
        assert names.close(q) == _indexed_close(q, candidates)


def test_names_close_on_verl_like_names():
    from verl_lint.rules.shell.undefined_variable import Names

    pool = ["ROLLOUT_TP", "ROLLOUT_N", "MODEL_PATH", "last_layer", "TRAIN_BATCH_SIZE",
            "GEN_TP", "GEN_PP", "NNODES", "ACTOR_LR"]
    for q in ["LAST_LAYER", "MODLE_PATH", "MODEL_PAT", "ROLLOUT_PP", "TRAIN_BATCH_SIZEE",
              "GEN_TT", "NNODE", "ACTORLR", "ROLOUT_N"]:
        names = Names(pool)
        first = names.close(q)
        assert first == names.close(q) == _indexed_close(q, pool), q


@pytest.mark.skipif(not hasattr(signal, "setitimer"), reason="the file budget needs setitimer")
def test_per_context_runs_no_callback_the_file_budget_could_interrupt(monkeypatch):
    """A weakref callback interrupted by the budget's alarm would print "Exception ignored in"
    with a traceback (a file that ran out of time while its last context was freed)."""
    from verl_lint.engine import file_budget
    from verl_lint.rules.base import per_context

    unraised: list = []
    monkeypatch.setattr(sys, "unraisablehook", unraised.append)

    class Ctx:
        pass

    ask = per_context(lambda ctx: [0] * 10)
    for _ in range(300):
        with file_budget(0.0005):
            while True:  # left by the budget
                ask(Ctx())
    assert unraised == []
