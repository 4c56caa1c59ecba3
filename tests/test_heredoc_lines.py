"""Here-documents with more of the command line after them (issue 19): bash reads the body at
the next newline whatever the line holds; verl-lint must agree with `bash -n` and give the body
to the command that reads it."""

from __future__ import annotations

import shutil
import subprocess

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from verl_lint.shell import parse_script
from verl_lint.source import SourceText

pytestmark = pytest.mark.skipif(shutil.which("bash") is None, reason="bash is the oracle")

# (what follows the here-document on its line, what closes it after the body)
TAILS = [
    ("", ""), (" | cat", ""), (" && echo ok", ""), (" || exit 1", ""), (" &", "wait\n"),
    ("; echo hi", ""), (" > /dev/null", ""), (" # note", ""), (" || {", "  exit 1\n}\n"),
    (" | {", "  cat\n}\n"), (" || (", "  exit 1\n)\n"), (" &&", "echo next\n"),
    (" | python3 - || { echo failed; exit 1; }", ""),
]
WRAPS = [("", "", ""), ("if ! ", "; then", "  exit 1\nfi\n"), ("while ", "; do", "  break\ndone\n"),
         ("f() {\n  ", "", "}\n")]


@st.composite
def heredoc_lines(draw):
    cmd = draw(st.sampled_from(["cat", "python3 -", "paste - -"]))
    op, delim = draw(st.sampled_from([("<<EOF", "EOF"), ("<<'PY'", "PY"), ('<<"X"', "X"),
                                      ("<<-EOF", "\tEOF"), ("<< \\EOF", "EOF")]))
    tail, closer = draw(st.sampled_from(TAILS))
    head, opener, end = draw(st.sampled_from(WRAPS))
    if opener and tail.endswith(("{", "(", "&&")):
        tail, closer = "", ""  # `if ! cmd <<EOF || {; then` is no script
    body = "line $HOME\n"
    return (f"{head}{cmd} {op}{tail}{opener}\n{body}{delim}\n{closer}{end}echo after\n",
            cmd.split()[0])


@settings(max_examples=120, deadline=None)
@given(heredoc_lines())
def test_heredoc_lines_agree_with_bash(case):
    text, name = case
    valid = subprocess.run(["bash", "-n"], input=text.encode(), capture_output=True).returncode == 0
    model = parse_script(SourceText(text.encode()))
    assert (not model.errors) == valid, (text, [e.message for e in model.errors])
    if valid:
        owner = next(c for c in model.commands if c.words and c.words[0].text == name)
        # (tree-sitter ends a `<<-` body after the tabs of the delimiter line)
        assert [h.body.text.replace("\t", "") for h in owner.heredocs] == ["line $HOME\n"], text
        assert model.commands[-1].words[0].text == "echo"  # `echo after` is read as a command


def test_many_lifted_here_documents_are_given_back_in_linear_time():
    # each `cat <<EOF | cat` is lifted; finding its reader among all earlier commands was
    # quadratic (4,000 of them: 3.4 s)
    import time

    source = SourceText(b"cat <<EOF | cat\nx\nEOF\n" * 4000, "many.sh")
    start = time.process_time()
    model = parse_script(source)
    took = time.process_time() - start
    readers = [s for s in model.statements if getattr(s, "heredocs", ())]
    assert len(readers) == 4000 and all(len(s.heredocs) == 1 for s in readers)
    assert took < 1.5, f"{took:.2f} s"
