"""The builder's positional record constructors (`parser._assignment`, `_command`,
`_set_options`, `_comment`) build what the records' own keyword constructors build: a field
given in the wrong place would still make a record, so the models are compared whole."""

from __future__ import annotations

import pytest

from verl_lint.shell import parser
from verl_lint.shell.model import Assignment, Command, Comment, SetOptions
from verl_lint.source import SourceText

_SCRIPTS = [
    "ARR[1+2]+=x\nexport -x A=1 B\nlocal -r L=\"$1\" &\nX= Y=2\n",
    "A=1 B=2 python3 -m m k=$X 'v' >log 2>&1 &\nset -euo pipefail\nset +x -- a\n",
    "#!/bin/bash\n# note\nARR=(a \"b c\" # c\n  d)\nf() { local v=1; echo \"$v\"; }\n",
    "if [ \"$D\" = npu ]; then X=1 && Y=2 || Z=3; fi\ncase $M in a) B=1 ;; esac # end\n",
    "A=1 B=2\nC=3 cmd\ncat <<EOF | sort\n$X\nEOF\nCKPT=$HOME/$exp/ckpt\n",
]


def _keyword(cls, names):
    def make(*values):
        return cls(**dict(zip(names, values)))
    return make


@pytest.mark.parametrize("script", _SCRIPTS)
def test_positional_statements_are_the_keyword_ones(script, monkeypatch):
    data = script.encode()
    fast = parser.parse_script(SourceText(data))
    node = parser._NODE_FIELDS
    monkeypatch.setattr(parser, "_assignment", _keyword(Assignment, (
        *node, "name", "name_span", "index", "append", "value", "array", "declared_by",
        "flags", "command_prefix")))
    monkeypatch.setattr(parser, "_command", _keyword(Command, (
        *node, "words", "prefix", "redirects", "heredocs")))
    monkeypatch.setattr(parser, "_set_options", _keyword(SetOptions, (
        *node, "enable", "disable", "words")))
    monkeypatch.setattr(parser, "_comment", _keyword(Comment, ("span", "text")))
    plain = parser.parse_script(SourceText(data))
    assert fast.statements and fast == plain
    assert [repr(s) for s in fast.statements] == [repr(s) for s in plain.statements]


def test_the_fields_land_where_they_belong():
    model = parser.parse_script(SourceText(b"ARR[1]+=x\nexport -x A=1\nset -e\n"))
    arr, exported, options = model.statements
    assert (arr.name, arr.index.text, arr.append, arr.value.text, arr.declared_by) == \
        ("ARR", "1", True, "x", None)
    assert (exported.name, exported.declared_by, exported.flags, exported.command_prefix) == \
        ("A", "export", ("-x",), False)
    assert [s.id for s in model.statements] == [0, 1, 2]
    assert options.enable == ("errexit",) and options.after == "" and options.kind == "set"
