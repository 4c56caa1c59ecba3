"""The shortcuts the verl analysis and its rules take on the cold path find what the plain
computation finds (the plain one is written out here as the oracle)."""

from __future__ import annotations

from hypothesis import example, given, strategies as st

from verl_lint.verl.suggest import _NameIndex, leaf_similarity

names = st.text(alphabet="abcde_lr", min_size=1, max_size=14)


@given(names, st.lists(names, max_size=12))
@example("lr", ["learning_rate"])  # an acronym, far apart in length
@example("learning_rate", ["lr"])
@example("tensor_parallel_size", ["tensor_model_parallel_size"])  # a dropped word
@example("a_b", ["a_c_b_d_e_e_e"])
@example("a_c_b_d_e_e_e", ["a_b"])
def test_names_near_a_name_hold_every_name_that_scores_08(a, pool):
    """`near` may keep more names than score 0.8 with `a`, never fewer."""
    near = _NameIndex([], pool).near(a)
    assert {b for b in pool if leaf_similarity(a, b) >= 0.8} <= near


BASE = {"a": {"b": 1, "l": [1, {"x": 2}], "e": {}, "s": "text", "i": "${a.e}"},
        "n": None, "u": "???"}
WORDS = ["a.b=2", "+a.c=1", "++a.c=1", "++a.b=3", "a.l.0=5", "a.l.1.x=3", "++a.l.5=1",
         "++a.s.deeper=1", "+a.s.deeper=1", "++a.i.k=1", "a.e={k: 1}", "+a.e.k=1",
         "~a.b", "+n=1", "n=1", "u=2", "++new.path.here=1", "a.l=[1]", "a.l.x=1", "++a.l.x=1"]


def test_apply_says_whether_the_key_was_there_as_a_lookup_before_it():
    """`apply`'s answer (read off its own walk) is what a lookup before it finds, word by word
    over one tree that the words keep changing."""
    from verl_lint.verl import hydra_semantics as hs

    for start in range(len(WORDS)):
        tree = hs.Tree(BASE)
        for word in WORDS[start:] + WORDS[:start]:
            p = hs.parse(word)
            before = hs.lookup(tree.root, tuple(p.key.split("."))) is not hs.ABSENT
            try:
                existed = hs.apply(tree, p)
            except (hs.HydraReject, hs.Unmodeled):
                continue
            assert existed == (before and p.prefix != "~"), word


REF_BASE = {"a": {"b": 1, "tool_config_path": "x.yaml", "e": {}, "ref": "${c}"},
            "c": {"custom_reward_function": {"path": "y.py", "name": "f"}},
            "d": {"tool_config_path": None}}
REF_WORDS = ["a.b=2", "++a.b.c.tool_config_path=z.yaml", "++a.b.c={tool_config_path: z.yaml}",
             "a={b: {tool_config_path: w.yaml}}", "++a.e.interaction_config_path=v.yaml", "a.e=3",
             "++a.b=${c}", "++a.q=${c}", "a.ref=null", "d.tool_config_path=t.yaml", "++d.x=1",
             "++d.x.interaction_config_path=i.yaml", "c.custom_reward_function.path=u.py",
             "++a.b.custom_reward_function.path=r.py", "~a.b", "++a.b=9", "++a.q=1"]


@given(st.lists(st.sampled_from(REF_WORDS), max_size=12))
@example(["a.b=2", "++a.b.c.tool_config_path=z.yaml"])  # a value, then a reference below it
@example(["a.b=2", "++a.b=${c}"])
@example(["++a.q=${c}"])
def test_vl212_finds_the_references_asking_every_applied_key_finds(words):
    """VL212 passes over a plain value set to a key that names no reference; the references
    it finds are the ones asking every applied key finds."""
    from types import SimpleNamespace

    from verl_lint.rules.overrides.missing_referenced_file import MissingReferencedFile
    from verl_lint.verl import hydra_semantics as hs
    from verl_lint.verl.effective_build import build_effective

    tree, applied = hs.Tree(REF_BASE), []
    for word in words:
        p = hs.parse(word)
        try:
            hs.apply(tree, p)
        except (hs.HydraReject, hs.Unmodeled):
            continue
        if p.prefix != "~":
            applied.append(SimpleNamespace(key=p.key, value=p.value))
    config = build_effective("0.9.1", "ppo_trainer", tree.root, {}, REF_BASE)
    every = dict.fromkeys(k for a in applied for k in (
        (a.key,) if a.key in config else config.keys(a.key + ".")))
    want = set(MissingReferencedFile._references_of(every))
    assert set(MissingReferencedFile._references(config, applied)) == want


def test_the_missing_values_of_a_tree_in_order():
    """`_missing` lists the `???` leaves of the dicts, depth first in key order, as the
    recursive walk it replaces did (lists are not entered)."""
    from verl_lint.verl.analysis import _missing

    def plain(node, prefix):
        if isinstance(node, dict):
            for k, v in node.items():
                yield from plain(v, f"{prefix}.{k}" if prefix else k)
        elif node == "???":
            yield prefix

    tree = {"a": "???", "b": {"c": {"d": "???", "e": 1}, "f": "???", "g": {}},
            "h": ["???"], "i": {"j": {"k": {"l": "???"}}}, "m": "???", 0: "???"}
    assert _missing(tree) == list(plain(tree, "")) == ["a", "b.c.d", "b.f", "i.j.k.l", "m", 0]


def test_the_knowledge_rules_facts_do_not_outlive_their_launch(tmp_path):
    """The knowledge rules share one launch's facts through a one-slot cache that holds the
    launch's context weakly: once the file is linted nothing of it is kept (held, the next
    file's first knowledge rule paid for freeing its model and analysis)."""
    import gc

    from verl_lint.engine import lint_file
    from verl_lint.rules.knowledge import conditions
    from verl_lint.settings import SettingsResolver

    script = tmp_path / "run.sh"
    script.write_text("#!/usr/bin/env bash\n# verl==0.9.1\npython3 -m verl.trainer.main_ppo \\\n"
                      "    actor_rollout_ref.rollout.name=vllm trainer.n_gpus_per_node=8\n")
    gc.collect()
    report = lint_file(script, SettingsResolver({})(script))
    assert report.error is None
    assert not conditions._facts_of.holds()


@given(st.one_of(st.integers(), st.floats(allow_nan=True), st.booleans(),
                 st.text(max_size=6), st.just("None")),
       st.one_of(st.integers(), st.floats(allow_nan=True), st.booleans(),
                 st.text(max_size=6), st.just("None")),
       st.sampled_from([None, "int", "float", "Optional[int]", "bool", "str", "int | float",
                        "Optional[float]", "list[int]", "Any"]))
def test_vl206_passes_a_value_of_its_defaults_own_type(value, default, annotation):
    """VL206 passes over a value whose type is its default's (int, float, bool, str): the
    checks it then skips find nothing for it."""
    from verl_lint.rules.overrides.override_type_mismatch import expected_type, mismatch

    if type(value) is not type(default):
        return
    want = expected_type(default, annotation)
    why = mismatch(value, want, declared=annotation is not None) if want else None
    assert why is None


@given(st.lists(st.sampled_from(KEYS_WORDS_412 := [
    "actor_rollout_ref.actor.use_remove_padding=True", "~actor_rollout_ref.rollout.multi_turn",
    "+actor_rollout_ref.rollout.multi_turn.enable2=True", "+critic.use_remove_padding=1",
    "+critic.extra={use_remove_padding: 1}", "+critic.extra2={use_remove_padding: 1}",
    "+actor_rollout_ref.actor.override.use_remove_padding=True", "++x.actor.use_remove_padding=1",
    "++x.multi_turn.enable=1", "actor_rollout_ref.ref.optim=null", "++critic.model=1",
    "+actor_rollout_ref.actor.optim.use_remove_padding=True", "++critic.model.enable=1",
    "actor_rollout_ref.rollout.multi_turn=null"]), max_size=6),
    st.sampled_from(["use_remove_padding", "actor.use_remove_padding", "multi_turn.enable",
                     "model.use_remove_padding", "optim.use_remove_padding", "enable"]),
    st.sampled_from([None, "actor_rollout_ref.rollout", "actor_rollout_ref.actor", "critic"]))
@example(["~actor_rollout_ref.rollout.multi_turn", "++x.multi_turn.enable=1"],
         "multi_turn.enable", None)  # the composed tree's key gone, another one added
@example(["++x.actor.use_remove_padding=1"], "actor.use_remove_padding", None)
def test_vl412_resolves_from_the_composed_keys_what_the_launch_has(words, key, near):
    """`resolve_before` answers as `resolve` does, or gives a key where `resolve` gives None
    (never another key, never None where `resolve` finds one): a site that does not hold with
    its answers does not hold with `resolve`'s."""
    from test_effective_keys_ending import config_after

    from verl_lint.rules.knowledge.mode_requirement import resolve, resolve_before
    from verl_lint.verl import hydra_semantics as hs

    try:
        config = config_after(words)
    except (hs.HydraReject, hs.Unmodeled):
        return
    fast, exact = resolve_before(config, key, near), resolve(config, key, near)
    assert fast == exact or (exact is None and fast is not None), (fast, exact)


TWO_BASE = {"a": {"multi_turn": {"enable": False}}, "b": {"multi_turn": {"enable": False}},
            "c": {"x": 1}}


@given(st.lists(st.sampled_from(["~a.multi_turn", "~b.multi_turn", "++c.multi_turn.enable=1",
                                 "a.multi_turn=null", "b.multi_turn.enable=True"]), max_size=4),
       st.sampled_from([None, "a", "b", "c"]))
@example(["~b.multi_turn"], None)  # one of two keys gone: `resolve` finds the other
@example(["~b.multi_turn"], "a")
def test_vl412_resolves_when_one_of_two_composed_keys_goes(words, near):
    from verl_lint.rules.knowledge.mode_requirement import resolve, resolve_before
    from verl_lint.verl import hydra_semantics as hs
    from verl_lint.verl.effective_build import build_effective

    tree = hs.Tree(TWO_BASE)
    for word in words:
        try:
            hs.apply(tree, hs.parse(word))
        except (hs.HydraReject, hs.Unmodeled):
            pass
    config = build_effective("0.9.1", "t", tree.root, {}, TWO_BASE)
    fast = resolve_before(config, "multi_turn.enable", near)
    exact = resolve(config, "multi_turn.enable", near)
    assert fast == exact or (exact is None and fast is not None), (fast, exact)
