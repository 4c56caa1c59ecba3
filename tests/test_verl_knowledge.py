"""verl knowledge: version choice, bundled data, composition cache, launch analysis, EffectiveConfig."""

from __future__ import annotations

import subprocess
import sys
from dataclasses import replace
from importlib import metadata

import pytest

from verl_lint.evaluate.model import Launch, Override, Unknown
from verl_lint.source import SourceText
from verl_lint.verl import cache, data
from verl_lint.verl.analysis import analyze_launch, entry_module
from verl_lint.verl.choice import choose_version, header_pin, nearest_release
from verl_lint.verl.release import load_release
from verl_lint.verl.versions import NEWEST, SUPPORTED_VERSIONS

PPO = "verl.trainer.main_ppo"


def launch(words: list[str], module: str | None = PPO, *, unknown: dict[str, str] = {},
           **kw) -> Launch:
    """A Launch built by hand, as the evaluator would for `python3 -m MODULE WORDS…`."""
    head = f"python3 -m {module} "
    text = head + " ".join(words)
    src = SourceText(text.encode())
    pos, ovs = len(head), []
    for w in words:
        prefix = "++" if w.startswith("++") else w[:1] if w[:1] in "+~" else ""
        key, eq, value = w[len(prefix):].partition("=")
        ks = pos + len(prefix)
        val = Unknown(reason=unknown[key]) if key in unknown else (value if eq else None)
        ovs.append(Override(prefix=prefix, key=key, value=val,
                            text=Unknown(reason="var") if key in unknown else w,
                            span=src.span(pos, pos + len(w)),
                            key_span=src.span(ks, ks + len(key)),
                            value_span=src.span(ks + len(key) + 1, pos + len(w)) if eq else None))
        pos += len(w) + 1
    return Launch(module=module, overrides=ovs, span=src.span(0, len(text)), **kw)


def analyze(words, version=NEWEST, **kw):
    return analyze_launch(load_release(version), launch(words, **kw))


# --- version choice -------------------------------------------------------------------------

def test_version_order(monkeypatch):
    monkeypatch.setattr("verl_lint.verl.sources.installed_verl_version", lambda: None)
    monkeypatch.setattr("verl_lint.verl.sources.installed_tree", lambda: None)
    script = "#!/bin/bash\n# needs verl==0.7.1\nset -x\n"
    assert choose_version(cli="0.8.0", config="0.6.0", script_text=script).source == "--verl-version"
    assert choose_version(config="0.6.0", script_text=script).version == "0.6.0"
    c = choose_version(script_text=script)
    assert (c.version, c.source, c.supported) == ("0.7.1", "script header", True)
    assert choose_version().version == NEWEST and choose_version().source == "newest bundled"


def test_installed_verl_is_read_from_metadata_not_imported(monkeypatch):
    monkeypatch.setattr("verl_lint.verl.sources.installed_verl_version", lambda: "0.8.0")
    monkeypatch.setattr("verl_lint.verl.sources.installed_tree", lambda: None)
    c = choose_version(script_text="# verl==0.6.0\n")
    assert (c.version, c.source) == ("0.8.0", "installed verl")


def test_installed_verl_version_uses_distribution_metadata(monkeypatch):
    from verl_lint.verl import sources

    sources.installed_verl_version.cache_clear()
    monkeypatch.setattr(sources, "may_be_installed", lambda: True)  # no verl on this sys.path
    monkeypatch.setattr(metadata, "version", lambda name: "0.9.0" if name == "verl" else "")
    try:
        assert sources.installed_verl_version() == "0.9.0"
    finally:
        sources.installed_verl_version.cache_clear()


def test_unknown_version_falls_back_to_nearest():
    c = choose_version(cli="0.9.3")
    assert (c.version, c.requested, c.supported) == ("0.9.1", "0.9.3", False)
    assert nearest_release("0.3.0") == "0.4.0"
    assert nearest_release("0.10.0.dev0") == NEWEST
    assert nearest_release("main") == NEWEST


def test_header_pin_only_in_leading_comments():
    assert header_pin("#!/bin/bash\n# pip install verl==0.8.0\n") == "0.8.0"
    assert header_pin("set -x\n# verl==0.8.0\n") is None


# --- bundled data ---------------------------------------------------------------------------

@pytest.mark.parametrize("version", SUPPORTED_VERSIONS)
def test_every_release_is_bundled(version):
    rel = load_release(version)
    assert PPO in rel.entry_points
    assert "verl/trainer/config|ppo_trainer|" in data.composed_configs(version)
    assert data.config_files(version)


def test_constraints_loader_for_the_arithmetic_rules():
    ids = {c["id"] for c in data.constraints()}
    assert "megatron_mp_divides_world" in ids
    assert all("condition" in c and "keys" in c for c in data.constraints())


def test_enums_and_renames_per_release():
    assert "token-sum" in load_release("0.9.0").enum_for("actor_rollout_ref.actor.loss_agg_mode")[0]
    assert "token-sum" not in load_release("0.8.0").enum_for("actor_rollout_ref.actor.loss_agg_mode")[0]
    assert load_release("0.4.0").renames_of("actor_rollout_ref.actor.checkpoint.contents") == ()
    assert load_release("0.4.1").renames_of("actor_rollout_ref.actor.checkpoint.contents")


def test_notice_ships_with_the_data():
    text = (data.DATA_DIR / "NOTICE").read_text()
    assert "Apache License, Version 2.0" in text and "Bytedance" in text


# --- entry points and config resolution -----------------------------------------------------

def test_entry_points_and_unresolved():
    assert entry_module(Launch(script="verl/trainer/main_ppo.py", span=SourceText(b"x").span(0, 1))) == PPO
    a = analyze(["trainer.nnodes=1"], module="recipe.dapo.main_dapo")
    assert a.config is None and "recipe" in a.unresolved
    a = analyze(["trainer.nnodes=1"], config_path="/home/me/configs")
    assert a.config is None and "no ppo_trainer.yaml in /home/me/configs" in a.unresolved
    a = analyze(["trainer.nnodes=1"], config_path="config")
    assert a.config is not None
    a = analyze(["trainer.nnodes=1"], config_name=Unknown(reason="$CFG"))
    assert a.unresolved and a.config is None


@pytest.mark.parametrize("module,name", [
    ("verl.experimental.fully_async_policy.fully_async_main", "fully_async_ppo_trainer"),
    ("verl.experimental.one_step_off_policy.main_ppo", "one_step_off_ppo_trainer"),
    ("verl.trainer.sft_trainer", "sft_trainer_engine"),
    ("verl.trainer.main_generation_server", "ppo_trainer"),
])
def test_other_entry_points(module, name):
    a = analyze(["trainer.nnodes=1"], module=module)
    assert a.config is not None and a.config_name == name and not a.problems


def test_config_name_missing_is_vl208():
    a = analyze(["trainer.nnodes=1"], config_name="nope", version="0.7.0")
    assert [p.code for p in a.problems] == ["VL208"] and a.unresolved is None


def test_an_entry_point_other_releases_have_says_so():
    a = analyze(["model.partial_pretrain=x"], module="verl.trainer.fsdp_sft_trainer")
    assert a.problems == [] and a.config is None
    assert a.absent_module == (f"verl.trainer.fsdp_sft_trainer does not exist in verl {NEWEST} "
                               "(verl 0.4.0–0.7.0 have it)")  # VL211
    a = analyze(["a=1"], module="verl.trainer.no_such_thing")
    assert a.absent_module == f"verl.trainer.no_such_thing does not exist in verl {NEWEST}"
    # a module only later releases have: the script probably runs a newer verl (VL004, not VL211)
    a = analyze(["a=1"], module="verl.trainer.sft_trainer", version="0.5.0")
    assert a.absent_module is None and "verl 0.6.0–0.9.1 have it" in a.unresolved


def test_config_dir_may_hold_what_is_not_bundled():
    """`--config-dir` adds the user's folder to Hydra's search path: a config name or group
    option that is not bundled may be there, so the launch is unresolved (VL004), not VL208."""
    a = analyze(["trainer.nnodes=1"], config_name="collabllm_trainer",
                config_dirs=["recipe/collabllm/config"])
    assert a.problems == [] and "--config-dir recipe/collabllm/config" in a.unresolved
    a = analyze(["actor=my_actor", "trainer.nnodes=1"], config_dirs=["./cfg"])
    assert a.problems == [] and "actor=my_actor" in a.unresolved
    # a bundled config name with bundled options is still checked
    a = analyze(["trainer.nnode=1"], config_name="ppo_trainer", config_dirs=["./cfg"])
    assert [p.code for p in a.problems] == ["VL201"] and a.unresolved is None
    # `hydra.searchpath` adds folders too: `+my_backend=remote` may be a group from there
    a = analyze(["hydra.searchpath=[file://cfg]", "+my_backend=remote", "my_backend.url=x"])
    assert a.problems == [] and "my_backend=remote may be a config group" in a.unresolved


def test_megatron_config_name_on_old_release():
    a = analyze(["actor_rollout_ref.actor.megatron.tensor_model_parallel_size=2"],
                config_name="ppo_megatron_trainer", version="0.6.0")
    assert not a.problems
    assert a.config.value("actor_rollout_ref.actor.megatron.tensor_model_parallel_size") == 2


def test_unknown_group_value_is_unresolved():
    a = analyze(["model_engine=x"], unknown={"model_engine": "$ENGINE"})
    assert a.config is None and "model_engine" in a.unresolved


# --- problems -------------------------------------------------------------------------------

def test_a_dot_for_an_underscore_is_the_first_suggestion():
    """Scripts from a verl branch wrote `actor.kl_loss.coef`; releases have `kl_loss_coef`."""
    a = analyze(["actor_rollout_ref.actor.kl_loss.coef=0.001",
                 "actor_rollout_ref.actor.optim_lr=1e-6"])
    assert [p.suggestions[0] for p in a.problems] == [
        "actor_rollout_ref.actor.kl_loss_coef", "actor_rollout_ref.actor.optim.lr"]


def test_all_problems_are_collected_with_fixes():
    a = analyze(["actor_rollout_ref.actor.learning_rate=1",
                 "actor_rollout_ref.rollout.engine_kwargs.vllm.x=1",
                 "+trainer.nnodes=2",
                 "actor_rollout_ref.actor.checkpoint.contents=[model]",
                 "trainer.logger=a,b"])
    assert [p.code for p in a.problems] == ["VL207", "VL201", "VL202", "VL203", "VL204"]
    by = {p.code: p for p in a.problems}
    assert by["VL201"].suggestions == ["actor_rollout_ref.actor.optim.lr"]
    assert by["VL202"].fix.edits[0].replacement == "+"
    assert by["VL203"].fix.edits[0].replacement == ""
    assert by["VL204"].fix.applicability == "safe" and by["VL204"].since == "0.4.1"
    assert by["VL202"].hydra_message.startswith("Could not override")


def test_a_rename_whose_new_key_is_set_already_says_drop_it():
    a = analyze(["actor_rollout_ref.rollout.update_weights_bucket_megabytes=512",
                 "actor_rollout_ref.rollout.checkpoint_engine.update_weights_bucket_megabytes=512"])
    (p,) = [p for p in a.problems if p.code == "VL204"]
    # the same value on both: renaming would set the key twice, so the fix only drops this one
    assert p.message.endswith("remove this one")
    assert [e.replacement for e in p.fix.edits] == [""] and p.fix.title.startswith("Remove")
    a = analyze(["actor_rollout_ref.rollout.update_weights_bucket_megabytes=512",
                 "actor_rollout_ref.rollout.checkpoint_engine.update_weights_bucket_megabytes=256"])
    (p,) = [p for p in a.problems if p.code == "VL204"]
    assert p.fix is None  # different values: which one the user meant is theirs to say


def test_a_suggestion_the_launch_deletes_is_not_set_already_and_not_renamed_onto():
    a = analyze(["actor_rollout_ref.actor.optim.weight_decay=0.1",
                 "actor_rollout_ref.actor.optim.weight_decay_=0.1"])
    (p,) = [p for p in a.problems if p.code == "VL201"]
    assert "sets it already" in p.message and p.fix.title.startswith("Remove")
    a = analyze(["~actor_rollout_ref.actor.optim.weight_decay",
                 "actor_rollout_ref.actor.optim.weight_decay_=0.1"])
    (p,) = [p for p in a.problems if p.code == "VL201"]
    # `~key` deletes it: nothing sets it, and a plain rename would set a deleted key
    assert "already" not in p.message and p.fix is None


def test_a_rename_chain_through_a_shared_key_keeps_the_role():
    """0.5.0 folded actor/ref/rollout `profiler.discrete` into `actor_rollout_ref.profiler`, 0.6.0
    moved it back per role: the ref's key goes to the ref's new key, not the actor's."""
    a = analyze(["actor_rollout_ref.rollout.name=vllm", "actor_rollout_ref.ref.profiler.discrete=True",
                 "actor_rollout_ref.actor.profiler.discrete=True"])
    assert [(p.key, p.new_key) for p in a.problems if p.code == "VL204"] == [
        ("actor_rollout_ref.ref.profiler.discrete",
         "actor_rollout_ref.ref.profiler.tool_config.nsys.discrete"),
        ("actor_rollout_ref.actor.profiler.discrete",
         "actor_rollout_ref.actor.profiler.tool_config.nsys.discrete")]


def test_inherited_transformer_config_append_needs_double_plus():
    a = analyze(["model_engine=megatron",
                 "+actor_rollout_ref.ref.megatron.override_transformer_config.attention_backend=x"])
    (p,) = a.problems
    assert p.code == "VL203" and p.fix.edits[0].replacement == "++"
    a = analyze(["model_engine=megatron",
                 "++actor_rollout_ref.ref.megatron.override_transformer_config.attention_backend=x"])
    assert not a.problems
    r = a.config.get("actor_rollout_ref.ref.megatron.override_transformer_config.attention_backend")
    assert r.value == "x" and r.origin.kind == "script"


def test_plus_under_dataclass_non_field_is_vl201_from_verl():
    a = analyze(["+actor_rollout_ref.actor.optim.warmup_ratio=0.1"])
    (p,) = a.problems
    assert p.code == "VL201" and p.rejected_by == "verl" and p.kind == "not-a-field"
    assert not analyze(["+actor_rollout_ref.rollout.engine_kwargs.vllm.anything=1"]).problems


def test_key_below_a_list_is_a_type_problem_not_a_crash():
    """`trainer.logger` is a list: Hydra refuses a non-int index below it (every prefix)."""
    for word in ("trainer.logger.wandb=1", "+trainer.logger.wandb=1", "++trainer.logger.wandb=1",
                 "~trainer.logger.wandb"):
        (p,) = analyze([word]).problems
        assert (p.code, p.key) == ("VL206", "trainer.logger.wandb"), word
        assert "index 'wandb' is not an int" in p.message


def test_index_past_the_end_of_a_list_is_unknown_even_with_double_plus():
    """A list does not grow: `++trainer.logger.5.x=1` fails in Hydra (it was an IndexError here)."""
    (p,) = analyze(["++trainer.logger.5.x=1"]).problems
    assert (p.code, p.key) == ("VL201", "trainer.logger.5.x")
    assert not analyze(["++trainer.logger.0.x=1"]).problems  # an item is replaced by a dict


def test_unknown_values_never_guess():
    a = analyze(["+trainer.nnodes=x", "trainer.n_gpus_per_node=x"],
                unknown={"nnodes": "$N", "trainer.nnodes": "$N", "trainer.n_gpus_per_node": "$G"})
    assert not a.problems
    assert isinstance(a.config.value("trainer.n_gpus_per_node"), Unknown)


def test_a_node_set_to_an_unknown_is_never_judged_later():
    """An earlier override set the node to a value the script cannot know: whether Hydra takes
    a later '+', '~' or a key below it depends on that value (null, a dict…): nothing is said."""
    def problems(words):
        first = launch(words)
        first.overrides[0] = replace(first.overrides[0], value=Unknown(reason="$E"),
                                     text=Unknown(reason="$E"))
        return analyze_launch(load_release(NEWEST), first).problems

    for later in ("+trainer.newkey=3", "~trainer.newkey=3", "trainer.newkey.sub=3"):
        assert not problems(["++trainer.newkey=x", later]), later
    assert not problems(["trainer.total_epochs=x", "+trainer.total_epochs=3"])  # null allows '+'
    (p,) = problems(["++trainer.newkey=x", "trainer.other.sub=3"])  # elsewhere: still known
    assert p.code == "VL201"
    assert not analyze(["~trainer.nnodes=x"], unknown={"trainer.nnodes": "$N"}).problems
    assert not analyze(["+trainer.nnodes=x"], unknown={"trainer.nnodes": "$N"}).problems


# --- effective config -----------------------------------------------------------------------

def test_ref_inherits_remove_padding_from_actor():
    a = analyze(["model_engine=megatron", "actor_rollout_ref.actor.megatron.use_remove_padding=False"])
    r = a.config.get("actor_rollout_ref.ref.megatron.use_remove_padding")
    assert r.value is False and r.origin.kind == "inherited"
    assert r.origin.from_key == "actor_rollout_ref.actor.megatron.use_remove_padding"
    assert r.inherited_origin.kind == "script" and r.inherited_origin.span.line == 1
    assert "inherited from actor_rollout_ref.actor.megatron.use_remove_padding, set at line 1" \
        == r.describe()


def test_inheritance_before_070_is_absent():
    a = analyze(["actor_rollout_ref.actor.megatron.use_remove_padding=False"],
                config_name="ppo_megatron_trainer", version="0.6.0")
    r = a.config.get("actor_rollout_ref.ref.megatron.use_remove_padding")
    assert r is None or r.origin.kind != "inherited"


def test_interpolated_strings_and_defaults():
    a = analyze(["trainer.project_name=p", "trainer.experiment_name=e"])
    r = a.config.get("trainer.default_local_dir")
    assert r.value == "checkpoints/p/e" and r.origin.kind == "inherited"
    assert a.config.get("actor_rollout_ref.rollout.name").value == "???"
    assert "actor_rollout_ref.rollout.name" in a.missing
    assert "actor_rollout_ref.actor.optim.lr" in a.config
    assert list(a.config.keys("trainer.n"))
    assert all(k.startswith("actor_rollout_ref.ref.") for k in a.config.keys("actor_rollout_ref.ref."))


def test_inheriting_from_below_an_unknown_is_unknown():
    """`actor_rollout_ref.actor=$A`: the critic's `${oc.select:actor…use_dynamic_bsz,false}`
    may find the key in $A; its oc.select default is a guess."""
    a = analyze(["actor_rollout_ref.actor=x"], unknown={"actor_rollout_ref.actor": "$A"})
    r = a.config.get("critic.use_dynamic_bsz")
    assert isinstance(r.value, Unknown)
    assert r.describe() == "inherited from actor_rollout_ref.actor, set at line 1"
    for config in (a.config, analyze(["actor_rollout_ref.actor=x"],
                                     unknown={"actor_rollout_ref.actor": "$A"}).config):
        if config is not a.config:
            list(config.keys())  # flattened: the same answer
        r = config.get("actor_rollout_ref.actor.ppo_mini_batch_size")  # under $A, not absent
        assert isinstance(r.value, Unknown) and r.describe() == "set at line 1"


def test_keys_through_inherited_dicts():
    a = analyze(["model_engine=megatron",
                 "actor_rollout_ref.actor.megatron.override_transformer_config.recompute_method=uniform"])
    key = "actor_rollout_ref.ref.megatron.override_transformer_config.recompute_method"
    assert key in set(a.config.keys("actor_rollout_ref.ref.megatron."))
    assert a.config.get(key).value == "uniform"
    assert a.config.get(key).origin.kind == "inherited"


# --- cache ----------------------------------------------------------------------------------

def test_disk_cache_is_atomic_and_keyed(tmp_path, monkeypatch):
    monkeypatch.setenv("VERL_LINT_CACHE_DIR", str(tmp_path))
    cache.cache_root.cache_clear()
    try:
        cache.store("ns", "k1", {"a": 1})
        assert cache.load("ns", "k1") == {"a": 1}
        assert cache.load("ns", "k2") is cache.MISS
        (path,) = (tmp_path / "0.1.0" / "ns").glob("*.pickle")
        path.write_bytes(b"garbage")
        assert cache.load("ns", "k1") is cache.MISS  # corrupt → miss, never a crash
        assert not list((tmp_path / "0.1.0" / "ns").glob(".tmp-*"))
    finally:
        cache.cache_root.cache_clear()


def test_unbundled_group_override_composes_with_hydra_then_hits_disk(tmp_path):
    """actor@actor_rollout_ref.actor=megatron_actor is not precomposed: the first process
    composes it with Hydra and caches it; a second process must not import hydra."""
    code = (
        "import sys\n"
        "from verl_lint.verl.release import load_release\n"
        "from verl_lint.verl.configs import composed\n"
        "rel = load_release('0.9.1')\n"
        "t = composed(rel, rel.entry_point('verl.trainer.main_ppo'), 'ppo_trainer',"
        " ('actor@actor_rollout_ref.actor=megatron_actor',))\n"
        "assert isinstance(t, dict), t\n"
        "print('hydra' in sys.modules)\n"
    )
    env = {"VERL_LINT_CACHE_DIR": str(tmp_path), "PATH": "/usr/bin:/bin"}
    first = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    second = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert first.returncode == 0, first.stderr
    assert first.stdout.strip() == "True" and second.stdout.strip() == "False"


def test_warm_lint_does_not_import_hydra(tmp_path):
    script = tmp_path / "run.sh"
    script.write_text("#!/bin/bash\npython3 -m verl.trainer.main_ppo model_engine=megatron "
                      "actor_rollout_ref.rollout.name=vllm trainer.logger=console "
                      "actor_rollout_ref.actor.optim.lr=1e-6\n")
    code = ("import sys\nfrom verl_lint.cli import main\n"
            "try:\n    main(['check', '--format', 'concise', sys.argv[1]])\n"
            "except SystemExit:\n    pass\n"
            "print('HYDRA' if 'hydra' in sys.modules else 'NOHYDRA')\n")
    env = {"VERL_LINT_CACHE_DIR": str(tmp_path / "c"), "PATH": "/usr/bin:/bin"}
    out = subprocess.run([sys.executable, "-c", code, str(script)], env=env,
                         capture_output=True, text=True)
    assert out.stdout.strip().endswith("NOHYDRA"), out.stdout + out.stderr


def test_cache_safe_under_concurrent_writers(tmp_path):
    """Pre-commit runs hooks in parallel: writers racing on one entry never expose half a file."""
    code = (
        "import os, sys\n"
        "os.environ['VERL_LINT_CACHE_DIR'] = sys.argv[1]\n"
        "from verl_lint.verl import cache\n"
        "value = {'tree': list(range(20000))}\n"
        "for i in range(60):\n"
        "    cache.store('ns', 'same-key', value)\n"
        "    got = cache.load('ns', 'same-key')\n"
        "    assert got is cache.MISS or got == value, 'torn read'\n"
        "print('ok')\n"
    )
    procs = [subprocess.Popen([sys.executable, "-c", code, str(tmp_path)], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for _ in range(4)]
    outs = [p.communicate(timeout=120) for p in procs]
    assert all(p.returncode == 0 and out.strip() == "ok" for p, (out, _) in zip(procs, outs)), outs
    assert not list(tmp_path.rglob(".tmp-*"))


def test_generator_reads_dataclass_fields_with_ast():
    """The miner (scripts/build_verl_data.py and trees on disk): fields of `_target_`
    dataclasses, inherited, without import."""
    from verl_lint.verl.mine import release as mod

    files = {
        "verl/base_config.py": b"import collections\nfrom dataclasses import dataclass\n"
                               b"@dataclass\nclass BaseConfig(collections.abc.Mapping):\n"
                               b"    _target_: str = ''\n",
        "verl/workers/config/optimizer.py": (
            b"from dataclasses import dataclass, field\nfrom typing import ClassVar\n"
            b"from verl.base_config import BaseConfig\n"
            b"@dataclass\nclass OptimizerConfig(BaseConfig):\n    lr: float = 1e-3\n"
            b"    _frozen: ClassVar[set] = set()\n"
            b"@dataclass\nclass FSDPOptimizerConfig(OptimizerConfig):\n"
            b"    override_optimizer_config: dict = field(default_factory=dict)\n"
            b"class NotADataclass:\n    x: int = 1\n"),
    }
    got = mod.dataclass_fields(files, {"verl.workers.config.FSDPOptimizerConfig",
                                       "verl.workers.config.NotADataclass",
                                       "verl.workers.config.Missing"})
    assert got == {"verl.workers.config.FSDPOptimizerConfig": {
        "_target_": "str", "lr": "float", "override_optimizer_config": "dict"}}
