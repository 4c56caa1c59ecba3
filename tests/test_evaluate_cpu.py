"""The evaluate stage's CPU work (issue 17): each leaner path reads as the plain one did.

- a `~` after parts that are all empty text counts as at the word's start (the state that
  tracked it is now worked out from the parts when a `~` comes), in words and assignments;
- the glob test of an unquoted expansion is a module function (`interp._globbed`), not a closure
  made for every word: `set -f` still turns it off;
- option words of a launch (`--config-name x`, `-cn=x`, `--cfg job`, `-p pkg`) are read by
  `launch._option` apart from the overrides, in argv order with passthroughs;
"""

from __future__ import annotations

import shutil

import pytest

from verl_lint.dev import bash_oracle
from verl_lint.evaluate import Unknown, evaluate_script
from verl_lint.shell import parse_script
from verl_lint.source import SourceText


def _runs(text: str):
    return evaluate_script(parse_script(SourceText(text.encode())))


def _launch(text: str):
    (run,) = _runs(text)
    (launch,) = run.launches
    return launch


# ---- `~` at the start of a word --------------------------------------------------------------

_TILDES = {  # word → whether verl-lint reads a home directory in it (an Unknown value)
    "~/x": True, "~": True, "x:~/y": True, "x~/y": False, "$E~/y": True, '""~/y': True,
    "$N~/y": False, "'~'/y": False, '"$E"~/y': True, "x=~/y": True, '"x="~/y': False,
}


def _tilde_script(word: str) -> str:
    # `$E` is empty, `$N` is not; the word as an array element (an argv word) and as a value
    return (f"E=\nN=n\nA=({word})\na={word}\n"
            'python3 -m verl.trainer.main_ppo "x=${A[0]}" "y=$a"\n')


@pytest.mark.parametrize("word,home", sorted(_TILDES.items()))
def test_a_tilde_after_only_empty_text_is_at_the_start(word, home):
    # bash expands `~` only first in the word (and after `=`/`:` in an assignment); verl-lint
    # reads one after empty quotes or an empty expansion as first too: an Unknown, not a
    # wrong value
    launch = _launch(_tilde_script(word))
    assert [isinstance(o.value, Unknown) for o in launch.overrides] == [home, home]


@pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")
@pytest.mark.parametrize("word", sorted(w for w, home in _TILDES.items() if not home))
def test_tilde_words_that_verl_lint_knows_are_what_bash_passes(word, tmp_path):
    script = tmp_path / "run.sh"
    script.write_text("#!/bin/bash\n" + _tilde_script(word))
    results = bash_oracle.check_paths([str(script)])
    assert results and not [r for r in results if r.disagreements], bash_oracle.report(results)


# ---- option words among the overrides --------------------------------------------------------

def test_option_words_are_read_apart_from_the_overrides():
    launch = _launch(
        'P=/cfg\npython3 -m verl.trainer.main_ppo --config-path "$P" a=1 -cn=ppo --cfg job '
        'b=2 -p pkg --package=pkg2 -cd d1 "$@" --config-dir=d2 c=3 --info e=4 -cp\n')
    assert [(o.key, o.value) for o in launch.overrides] == [
        ("a", "1"), ("b", "2"), ("c", "3"), ("e", "4")]
    assert (launch.config_path, launch.config_name, launch.config_dirs) == \
        ("/cfg", "ppo", ["d1", "d2"])
    assert [p.position for p in launch.passthrough] == [2]


def test_an_unknown_option_value_and_an_unknown_key():
    launch = _launch('python3 -m verl.trainer.main_ppo --config-name=$N a=1 "$K"=2 x$K=3\n')
    assert isinstance(launch.config_name, Unknown)
    assert [(o.key, o.value) for o in launch.overrides] == [("a", "1")]
    # `"$K"=2` and `x$K=3`: the key is only known at run time
    assert [(p.position, p.reason.startswith("override key only known"))
            for p in launch.passthrough] == [(1, True), (1, True)]


# ---- unquoted expansions that bash globs ---------------------------------------------------

@pytest.mark.parametrize("noglob", [False, True])
def test_an_unquoted_pattern_is_many_words_unless_globbing_is_off(noglob):
    text = ("set -f\n" if noglob else "") + \
        "V='*.parquet'\nA=($V)\npython3 -m verl.trainer.main_ppo k=$V $V \"${A[@]}\"\n"
    launch = _launch(text)
    if noglob:
        assert [o.text for o in launch.overrides] == ["k=*.parquet", "*.parquet", "*.parquet"]
        assert launch.passthrough == []
    else:
        assert launch.overrides == []
        assert len(launch.passthrough) == 3
        assert all("which bash matches against file names" in p.reason
                   for p in launch.passthrough)
