"""VL212 reads a reward/dataset file's top-level names; where it cannot tell them all (star
imports, tuple targets, definitions under compound statements) it knows none missing."""

from __future__ import annotations

import pytest

from verl_lint.rules.overrides.missing_referenced_file import defined_names


@pytest.mark.parametrize("source", [
    b"from my_rewards import *\n",
    b"a, compute_score = 1, 2\n",
    b"import sys\nsys.modules[__name__].compute_score = len\n",
    b"with open('cfg'):\n    def compute_score(s):\n        return 0\n",
    b"for _ in range(1):\n    def compute_score(s):\n        return 0\n",
    b"if True:\n    def compute_score(s):\n        return 0\n",
])
def test_names_it_cannot_read_make_it_skip(source):
    assert defined_names(source) is None


def test_plain_top_level_names_are_read():
    source = (b'"""Rewards."""\nimport os.path\nfrom math import sqrt as root\nLIMIT: int = 3\n'
              b"def compute_score(s):\n    return 0\nclass Dataset:\n    pass\nassert LIMIT\n")
    assert defined_names(source) == {"os", "root", "LIMIT", "compute_score", "Dataset"}
