"""Misreads the bash oracle found (issue 14), each checked against what bash passes."""

from __future__ import annotations

import shutil

import pytest

from verl_lint.dev import bash_oracle
from verl_lint.evaluate import evaluate_script
from verl_lint.shell import parse_script
from verl_lint.source import SourceText

LAUNCH = "python3 -m verl.trainer.main_ppo"


def launch_words(text: str, **kw) -> list:
    """The single launch's words as verl-lint reads them (`...` for a passthrough)."""
    (run,) = evaluate_script(parse_script(SourceText(text.encode(), "t.sh")), **kw)
    return bash_oracle._items(run.launches[0])


def bash_words(text: str) -> list[str]:
    run = bash_oracle.run_bash(text.encode(), "t.sh", {}, None)
    (argv,) = [a for _, a in run.records]
    return [o.text for o in bash_oracle.bash_launch(argv).overrides]


needs_bash = pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")


@pytest.mark.parametrize("text, words", [
    # quoted strings joined by a backslash-newline are one assignment word
    ("MODS='{a:{},'\\\n'b:{}}'\n" + LAUNCH + ' "m=$MODS"\n', ["m={a:{},b:{}}"]),
    ("export MODS='x,'\\\n'y' B=1\n" + LAUNCH + ' "m=$MODS" b=$B\n', ["m=x,y", "b=1"]),
    ("V=[/d/a.parquet,\\\n/d/b.parquet]\n" + LAUNCH + " v=$V\n", ["v=[/d/a.parquet,/d/b.parquet]"]),
    # an associative array's subscript is a string, not `$aime`
    ('declare -A m\nm["aime"]="math"\nm[gsm8k]+=gsm\n' + LAUNCH + ' "a=${m[aime]}" '
     '"g=${m["gsm8k"]}"\n', ["a=math", "g=gsm"]),
    ('declare -A n=([a]=1 ["b c"]=2)\n' + LAUNCH + ' "b=${n[b c]}"\n', ["b=2"]),
    # an unquoted string of overrides: bash splits it at blanks (not at \r or \f)
    ('C="a.b=1\n  c.d=2\tx=\r\f"\n' + LAUNCH + " $C\n", ["a.b=1", "c.d=2", "x=\r\f"]),
    ('A=("p=1 q=2" r)\n' + LAUNCH + " ${A[@]} \"s=${A[@]}\"\n", ["p=1", "q=2", "r", "s=p=1 q=2",
                                                              "r"]),
    ("A=($'p=1\\rq' 'r=1\x0bs')\n" + LAUNCH + " ${A[@]}\n", ["p=1\rq", "r=1\x0bs"]),
    # a trailing `\ ` is an argument of one space
    (LAUNCH + " a=1 \\  \n", ["a=1", " "]),
])
def test_reading_equals_bash(text, words):
    assert launch_words(text) == words
    if shutil.which("bash"):
        assert bash_words(text) == words


def test_no_variable_is_read_in_an_associative_subscript():
    model = parse_script(SourceText(b'set -u\ndeclare -A m\nm["aime"]="math"\nk=aime\n'
                                    b'echo "${m[$k]}"\n', "t.sh"))
    (run,) = evaluate_script(model)
    assert "aime" not in {u.name for u in run.var_uses}


def test_unquoted_expansion_that_may_glob_is_unknown():
    text = 'C="a=1 x=b* y=[ab] l=[c,d] q=\'[\\"e\\"]\'"\n' + LAUNCH + " $C\n"
    words = launch_words(text)
    assert words[0] == "a=1" and words[1] is ... and words[2] is ...
    assert words[3:] == ["l=[c,d]", "q='[\"e\"]'"]
    assert launch_words("set -f\n" + text)[1:3] == ["x=b*", "y=[ab]"]  # noglob: as is


def test_unquoted_expansion_under_the_scripts_own_ifs_is_unknown():
    words = launch_words('IFS=,\nB="a=1,b=2"\n' + LAUNCH + " $B\n")
    assert words == [...]
    assert launch_words('IFS=,\nB="a=1,b=2"\n' + LAUNCH + ' "$B"\n') == ["a=1,b=2"]


@needs_bash
def test_glob_words_really_change_with_files(tmp_path):
    """Why `x=b*` is unknown: with a matching file bash passes the file's name."""
    script = tmp_path / "t.sh"
    script.write_text('C="x=b*"\nprintf "%s\\n" $C\n')
    (tmp_path / "x=bee").write_text("")
    out = bash_oracle.subprocess.run(["bash", str(script)], cwd=tmp_path, capture_output=True,
                                     text=True).stdout
    assert out == "x=bee\n"


def test_a_string_of_overrides_with_an_unknown_part_still_splits():
    """verl's veomni scripts: `ACTOR_CONFIG="… model.path=$HOME/m … mini_batch=32"` then an
    unquoted `$ACTOR_CONFIG`; the known words stay known (VL303/VL304 read them)."""
    text = ('C="\n  a.lr=1e-6 \\\n  a.path=$HOME/m \\\n  a.mini=32"\nC="$C b.x=$(date)"\n'
            + LAUNCH + " $C ${C}\n")
    words = launch_words(text)
    assert words[0] == "a.lr=1e-6" and words[2] == "a.mini=32" and len(words) == 8
    assert "HOME" in words[1].reason and "date" in words[3].reason
    assert words[4:] == words[:4]
    # alone, an unknown part may be any number of words
    assert launch_words('C="a=1 $(date)"\n' + LAUNCH + " $C\n") == ["a=1", ...]


def test_compound_tests_on_known_values_are_decided():
    text = ('A=x\nN=4\nR=(a=1)\n'
            'if [ "${USE_UV:-0}" != 0 ] && [ "${DEVICE:-gpu}" = gpu ]; then R+=(b=1); fi\n'
            'if [ "$A" = x ] && [ "${N}" -gt 1 ]; then R+=(c=1); fi\n'
            'if [ "$A" = y ] || [[ $A == x* ]]; then R+=(d=1); fi\n'
            'if [ $A = x ] && [ "$N" -ge 5 ]; then R+=(f=1); else R+=(g=1); fi\n'
            'if [ "$UNSET_X" = 1 ] && [ "$A" = y ]; then R+=(h=1); fi\n'
            'if [ "$HOME" = 1 ] || [ "$A" = y ]; then R+=(i=1); fi\n'
            + LAUNCH + ' "${R[@]}"\n')
    words = launch_words(text)
    assert words[:4] == ["a=1", "c=1", "d=1", "g=1"]
    assert words[4:] == [...]  # `$HOME = 1` is not known: i=1 may be added
    if shutil.which("bash"):
        assert bash_words(text) == ["a=1", "c=1", "d=1", "g=1"]


@pytest.mark.parametrize("text, words", [
    # nullglob: a pattern that matches no file is dropped, so which words remain is unknown
    ("shopt -s nullglob\nX='a=[b]'\n" + LAUNCH + " k=[1,2] 'q=[1]' $X y=1 'z=*'\n",
     [..., "q=[1]", ..., "y=1", "z=*"]),
    ("shopt -s nullglob\nshopt -u nullglob\n" + LAUNCH + " k=[1,2]\n", ["k=[1,2]"]),
    # aliases: only with expand_aliases, as in a non-interactive bash
    ("alias PY=python3\nPY -m verl.trainer.main_ppo a=1\n" + LAUNCH + " b=2\n", ["b=2"]),
    ("shopt -s expand_aliases\nalias PY='python3'\nPY -m verl.trainer.main_ppo a=1\n", ["a=1"]),
])
def test_shell_options_and_aliases_read_as_bash(text, words):
    assert launch_words(text) == words
    if shutil.which("bash"):
        known = [w for w in words if w is not ...]
        assert [w for w in bash_words(text) if w in known] == known
