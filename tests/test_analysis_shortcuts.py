"""Shortcuts in the verl analysis and the rules that read it (copy-on-write config trees, key
prefilters, the trie of override paths) against the plain computation they replace."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
from hypothesis import given, settings, strategies as st

from verl_lint.verl import hydra_semantics as hs

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT.parent / "shared" / "corpus" / "verl-head"

BASE = {"a": {"b": 1, "l": [1, {"x": 2}], "e": {}, "s": "text", "i": "${a.e}",
              "d": {"k": {"v": 1}}},
        "n": None, "u": "???", "z": {"y": 0}}
WORDS = ["a.b=2", "+a.c=1", "++a.c=1", "++a.b=3", "a.l.0=5", "a.l.1.x=3", "++a.l.5=1",
         "++a.s.deeper=1", "a.e={k: 1}", "+a.e.k=1", "~a.b", "+n=1", "n=1", "u=2",
         "++new.path.here=1", "a.l=[1]", "a.l.x=1", "a.d.k.v=2", "a.d={k: {v: 3}}", "z.y=1",
         "++z.w.q=1", "~z.y", "a.d.k={w: 1}"]


def _run(tree: hs.Tree, words: list[str]) -> list:
    out = []
    for word in words:
        try:
            out.append(hs.apply(tree, hs.parse(word)))
        except (hs.HydraReject, hs.Unmodeled) as exc:
            out.append(type(exc).__name__)
    return out


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(WORDS), max_size=14))
def test_copy_on_write_tree_matches_a_private_copy_and_leaves_the_base_alone(words):
    """The tree copies only what it has not copied yet (the root once, not per override): the
    shared base stays as it was, and the result is what the same words give on a tree that
    owns nothing shared (a deep copy of the base)."""
    pristine = copy.deepcopy(BASE)
    shared = hs.Tree(BASE)
    private = hs.Tree(copy.deepcopy(BASE))
    assert _run(shared, words) == _run(private, words)
    assert shared.root == private.root
    assert BASE == pristine


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(WORDS), max_size=14))
def test_writing_in_place_into_an_owned_dict_is_what_the_walk_from_the_root_does(words):
    """`set_in` writes a value into the dict `check_update` reached when the tree owns it:
    the same verdicts and tree as `set`'s copy-on-write walk from the root, the base kept."""
    pristine = copy.deepcopy(BASE)
    fast = hs.Tree(BASE)
    found = _run(fast, words)
    plain = hs.Tree(BASE)
    plain.set_in = lambda parent, parts, value: plain.set(parts, value)
    assert _run(plain, words) == found
    assert fast.root == plain.root
    assert BASE == pristine


def _scripts() -> list[Path]:
    paths = sorted((ROOT / "fixtures").rglob("*.sh"))
    if CORPUS.is_dir():
        paths += sorted(CORPUS.rglob("*.sh"))
    return paths


class _Everything:
    """A key set holding every key: the release's prefilters then let every override through."""

    def __contains__(self, key: object) -> bool:
        return True


@pytest.mark.parametrize("version", [None, "0.4.0", "0.9.1"])
def test_enum_and_rename_prefilters_change_no_finding(monkeypatch, version):
    """VL205 and VL209 skip the keys that `enum_keys()` / `renamed_keys()` lack without asking
    `enum_for` / `renames_of`: with sets that hold every key they find the same."""
    from verl_lint.cli.check import settings_for_args
    from verl_lint.engine import lint_file
    from verl_lint.verl.release import VerlRelease

    args = ["--format", "json", "--no-cache", "--select", "VL205,VL209"]
    if version:
        args += ["--verl-version", version]

    def findings() -> list:
        out = []
        for path in _scripts():
            report = lint_file(path, settings_for_args(args, str(path)))
            out += [(str(path), d.code, d.span.start, d.message, d.severity)
                    for d in report.diagnostics]
        return out

    fast = findings()
    monkeypatch.setattr(VerlRelease, "enum_keys", lambda self: _Everything())
    monkeypatch.setattr(VerlRelease, "renamed_keys", lambda self: _Everything())
    assert findings() == fast
    assert {code for _, code, *_ in fast} == {"VL205", "VL209"}  # both rules do find


def test_prefilter_sets_hold_every_key_the_release_answers_for():
    from verl_lint.verl import data
    from verl_lint.verl.release import load_release
    from verl_lint.verl.versions import SUPPORTED_VERSIONS

    # the keys of the bundled data itself, not of the index the sets are made from, and keys
    # no entry names (a wider `enum_for`, by suffix say, must widen `enum_keys` too)
    keys = {k for e in data.enums() for k in (e["key"], *e.get("also_applies_to", ()))} | \
        {e["old"] for e in data.renames()} | {e["new"] for e in data.renames()} | \
        {"a.b", "trainer.x", "actor_rollout_ref.rollout.x.name"}
    for version in SUPPORTED_VERSIONS:
        release = load_release(version)
        for key in keys:
            if key not in release.enum_keys():
                assert release.enum_for(key) is None, key
            if key not in release.renamed_keys():
                assert release.renames_of(key) == (), key


def _launch_contexts(paths):
    """The LaunchContext of every analysed launch of the scripts (as VL412 sees them)."""
    from verl_lint.cli.check import settings_for_args
    from verl_lint.engine import lint_file
    from verl_lint.rules.knowledge import mode_requirement as mr

    seen = []
    real = mr.ModeRequirement.check

    def spy(self, ctx):
        seen.append(ctx)
        return real(self, ctx)

    args = ["--format", "json", "--no-cache", "--select", "VL412"]
    mr.ModeRequirement.check = spy
    try:
        for path in paths:
            lint_file(path, settings_for_args(args, str(path)))
    finally:
        mr.ModeRequirement.check = real
    return [c for c in seen if c.config is not None]


def test_script_wide_device_asks_the_name_first_and_finds_the_same():
    from verl_lint.rules.knowledge.conditions import _ASCEND_ENV, _CUDA_ENV, script_wide_device

    def plain(ctx):
        names = [a.name for a in ctx.model.assignments
                 if not a.path and a.function is None and a.span.start < ctx.launch.span.start
                 and a.exported]
        if any(n.startswith(_CUDA_ENV) for n in names):
            return None
        return "npu" if any(n.startswith(_ASCEND_ENV) for n in names) else None

    contexts = _launch_contexts(_scripts())
    found = [script_wide_device(c) for c in contexts]
    assert found == [plain(c) for c in contexts]
    if CORPUS.is_dir():
        assert "npu" in found


def _trie(origins: dict) -> dict:
    """Every override's path as a trie: part → [the override that set this node, below]."""
    trie: dict = {}
    for p, entry in origins.items():
        level, node = trie, None
        for k in p:
            node = level.setdefault(k, [None, {}])
            level = node[1]
        node[0] = entry
    return trie


def _trie_origin(trie: dict, path: tuple) -> object:
    """The override that decided `path`, as a walk of the trie finds it."""
    best, level = None, trie
    for k in path:
        hit = level.get(k)
        if hit is None:
            break
        if hit[0] is not None and (best is None or hit[0][0] > best[0]):
            best = hit[0]
        level = hit[1]
    return best


NESTED_OVERRIDES = [  # a node and a key below it, set in both orders
    "actor_rollout_ref.actor.optim.lr=1e-6 'actor_rollout_ref.actor.optim={lr: 2e-6}'",
    "'actor_rollout_ref.actor.optim={lr: 2e-6}' actor_rollout_ref.actor.optim.lr=3e-6",
]


def test_origin_of_finds_the_override_the_trie_of_their_paths_found(tmp_path):
    """`origin_of` looks each node of the path up among the overrides' paths: for every key
    of every launch's config (and the nodes above them), the latest override at or above it
    is the one a trie of the override paths gives."""
    checked = 0
    scripts = []
    for i, words in enumerate(NESTED_OVERRIDES):
        scripts.append(tmp_path / f"nested{i}.sh")
        scripts[-1].write_text(f"#!/bin/bash\npython3 -m verl.trainer.main_ppo {words}\n")
    for ctx in _launch_contexts(scripts + _scripts()):
        entries = ctx.config._entries
        origins = entries._origins
        trie = _trie(origins)
        paths = {path[:end] for path, _, _ in entries.flat.values()
                 for end in range(1, len(path) + 1)} | set(origins)
        for path in paths:
            best = _trie_origin(trie, path)
            origin = entries.origin_of(path)
            if best is None:
                assert origin.kind == "default", path
            else:
                assert origin.kind == "script" and origin.span == best[1].span, path
                checked += 1
    assert checked > 1000
