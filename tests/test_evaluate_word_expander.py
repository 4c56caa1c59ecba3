"""`Interpreter.word_expander`: a command's and an array's words skip `expand_fields` (the
call that only adds nullglob's and failglob's dropping of unmatched patterns) unless one of
them is set, and then still go through it, whatever other options are set."""

from __future__ import annotations

import pytest

from verl_lint.dev import bash_oracle
from verl_lint.evaluate import evaluate_script
from verl_lint.shell import parse_script
from verl_lint.source import SourceText

LAUNCH = "python3 -m verl.trainer.main_ppo"


def _words(text: str) -> list:
    (run,) = evaluate_script(parse_script(SourceText(text.encode(), "t.sh")))
    return bash_oracle._items(run.launches[0])


@pytest.mark.parametrize("options, dropped", [
    ("", False), ("set -euxo pipefail\n", False), ("shopt -s expand_aliases\n", False),
    ("shopt -s nullglob\n", True), ("set -x\nshopt -s failglob\n", True),
    ("shopt -s nullglob\nset -f\n", False),  # noglob: no pattern at all
])
def test_unmatched_patterns_of_commands_and_arrays_under_the_options(options, dropped):
    text = options + "ARGS=(a=1 'b=[1]' c=[1,2])\n" + LAUNCH + ' "${ARGS[@]}" k=[1,2] y=2\n'
    glob = ... if dropped else "c=[1,2]"
    assert _words(text) == ["a=1", "b=[1]", glob, glob if dropped else "k=[1,2]", "y=2"]
