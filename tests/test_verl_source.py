"""The verl a launch is judged against: a vendored/modified verl tree in the workspace, a recipe
over verl's configs, `--config-path` folders on disk, and the order sources are chosen in."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from verl_lint.engine import lint_file
from verl_lint.settings import SettingsResolver
from verl_lint.verl import data
from verl_lint.verl.mine.release import converted_nodes, hydra_main, registries
from verl_lint.verl.choice import choose_version
from verl_lint.verl.release import load_release
from verl_lint.verl.sources import Workspace

FIXTURES = Path(__file__).parent.parent / "fixtures" / "workspaces"

FORK_SCRIPT = """\
#!/usr/bin/env bash
set -xeuo pipefail
python3 -m verl.trainer.main_ppo \\
    algorithm.adv_estimator=my_est \\
    data.train_files="$HOME/data/gsm8k/train.parquet" \\
    data.val_files="$HOME/data/gsm8k/test.parquet" \\
    data.train_batch_size=256 \\
    actor_rollout_ref.model.path=Qwen/Qwen2.5-7B-Instruct \\
    actor_rollout_ref.actor.ppo_mini_batch_size=64 \\
    actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=4 \\
    +actor_rollout_ref.actor.my_field=1 \\
    actor_rollout_ref.rollout.name=vllm \\
    actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu=8 \\
    actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu=8 \\
    trainer.my_fork_flag=true \\
    trainer.n_gpus_per_node=8 \\
    trainer.nnodes=1
python3 -m verl.trainer.main_ppo --config-name=my_fork_trainer \\
    actor_rollout_ref.rollout.name=vllm \\
    my_section.x=2
"""


def _stub_dataclasses(root: Path, meta: dict, extra: dict[str, dict[str, str]]) -> None:
    """Python files declaring every `_target_` dataclass with the release's fields (never
    executed: the miner reads them with `ast`), plus a fork's own fields."""
    by_module: dict[str, list[str]] = {}
    for target, fields in meta["dataclasses"].items():
        module, _, name = target.rpartition(".")
        body = [f"    {f}: {ann!s} = None" for f, ann in {**fields, **extra.get(target, {})}.items()]
        by_module.setdefault(module, []).append(
            "@dataclass\nclass " + name + ":\n" + ("\n".join(body) or "    pass") + "\n")
    for module, classes in by_module.items():
        path = root / (module.replace(".", "/") + ".py")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("from dataclasses import dataclass\n\n" + "\n".join(classes))


@pytest.fixture
def fork(tmp_path: Path) -> Path:
    """A research repository with a modified vendored verl (0.9.1's configs and dataclass
    fields) that adds a key, a config name, an advantage estimator and a dataclass field."""
    repo = tmp_path / "fork"
    (repo / ".git").mkdir(parents=True)
    for rel, text in data.config_files("0.9.1").items():
        (repo / rel).parent.mkdir(parents=True, exist_ok=True)
        (repo / rel).write_text(text)
    cfg = repo / "verl/trainer/config"
    ppo = (cfg / "ppo_trainer.yaml").read_text()
    assert "\ntrainer:\n" in ppo
    (cfg / "ppo_trainer.yaml").write_text(ppo.replace("\ntrainer:\n", "\ntrainer:\n  my_fork_flag: false\n", 1))
    (cfg / "my_fork_trainer.yaml").write_text("defaults:\n  - ppo_trainer\n  - _self_\n\nmy_section:\n  x: 1\n")
    (repo / "verl/version").mkdir(parents=True)
    (repo / "verl/version/version").write_text("0.9.1.dev0\n")
    (repo / "verl/trainer/main_ppo.py").write_text(
        "import hydra\n\n@hydra.main(config_path='config', config_name='ppo_trainer', version_base=None)\n"
        "def main(config):\n    pass\n")
    meta = data.release_meta("0.9.1")
    _stub_dataclasses(repo, meta, {"verl.workers.config.FSDPActorConfig": {"my_field": "int"}})
    (repo / "verl/utils").mkdir(parents=True, exist_ok=True)
    (repo / "verl/utils/config.py").write_text(
        "def check(config):\n    return omega_conf_to_dataclass(config.actor_rollout_ref.actor)\n")
    (repo / "verl/trainer/ppo").mkdir(parents=True, exist_ok=True)
    (repo / "verl/trainer/ppo/core_algos.py").write_text(
        "@register_adv_est('my_est')\ndef compute_my_est(*args):\n    return args\n")
    (repo / "examples").mkdir()
    (repo / "examples/run_fork.sh").write_text(FORK_SCRIPT)
    return repo


def _lint(path: Path, **cli):
    settings = SettingsResolver(cli or None)(path)
    report = lint_file(path, settings)
    assert report.error is None, report.error
    return report


def _codes(report) -> list[tuple[int, str]]:
    return sorted((d.span.line, d.code) for d in report.diagnostics
                  if d.code in ("VL201", "VL205", "VL208", "VL004"))


def test_vendored_fork_lints_clean_and_upstream_reports_exactly_its_changes(fork, monkeypatch):
    monkeypatch.chdir(fork)
    script = fork / "examples/run_fork.sh"
    own = _lint(script)
    assert own.version.kind == "workspace" and own.version.path == str(fork.resolve())
    assert own.version.tree_version == "0.9.1.dev0" and own.version.version == "0.9.1"
    assert _codes(own) == []
    upstream = _lint(script, verl_version="0.9.1")
    assert upstream.version.kind == "bundled"
    # the estimator, the dataclass field, the key and the config name the fork added
    assert _codes(upstream) == [(4, "VL205"), (11, "VL201"), (15, "VL201"), (18, "VL208")]


def test_a_second_run_reads_the_mined_tree_from_the_cache(fork, monkeypatch, tmp_path):
    """Mining is keyed by the tree's content: an edit is mined again, an unchanged tree not."""
    from verl_lint.verl import configs
    from verl_lint.verl.mine import release as miner

    monkeypatch.setenv("VERL_LINT_CACHE_DIR", str(tmp_path / "cache"))
    from verl_lint.verl import cache

    cache.cache_root.cache_clear()
    calls = []
    real = miner.mine_release
    monkeypatch.setattr(miner, "mine_release", lambda files: calls.append(1) or real(files))
    try:
        configs._TREES.clear()
        configs.tree_release(fork, "0.9.1")
        configs._TREES.clear()  # a new process: memory is empty, the disk cache is not
        configs.tree_release(fork, "0.9.1")
        assert calls == [1]
        (fork / "verl/trainer/ppo/core_algos.py").write_text("@register_adv_est('other')\ndef f(): pass\n")
        configs._TREES.clear()
        rel = configs.tree_release(fork, "0.9.1")
        assert calls == [1, 1] and "other" in rel.registries["algorithm.adv_estimator"]
    finally:
        cache.cache_root.cache_clear()


def test_recipe_over_ppo_trainer_gets_full_key_checks(monkeypatch):
    repo = FIXTURES / "recipe_repo"
    monkeypatch.chdir(repo)
    report = _lint(repo / "scripts/run_x_qwen3_8b.sh")
    assert report.version.source == "REQUIRED_VERL.txt" and report.version.version == "0.9.1"
    found = sorted((d.span.line, d.code) for d in report.diagnostics if d.code.startswith("VL2"))
    # `+` on a key the recipe's config already has, and a key neither config has
    assert found == [(10, "VL203"), (18, "VL201")]
    assert not [d for d in report.diagnostics if d.code == "VL004"]


CONFIG_PATH_SCRIPT = """\
#!/usr/bin/env bash
set -xeuo pipefail
PROJECT_DIR="$(pwd)"
SCRIPT_DIR="$(cd "$(dirname "$0")" && pwd)"
python3 -m verl.trainer.main_ppo --config-path="$PROJECT_DIR/examples/x/config" \\
    --config-name=x_trainer \\
    actor_rollout_ref.rollout.name=vllm \\
    +data.x_key=1 \\
    data.nope=2
python3 -m verl.trainer.main_ppo --config-path="$SCRIPT_DIR/config" --config-name=local \\
    actor_rollout_ref.rollout.name=vllm \\
    local.y=3
"""


def test_config_path_from_pwd_and_the_script_folder(tmp_path, monkeypatch):
    repo = tmp_path / "proj"
    (repo / ".git").mkdir(parents=True)
    (repo / "examples/x/config").mkdir(parents=True)
    (repo / "examples/x/config/x_trainer.yaml").write_text(
        "hydra:\n  searchpath:\n    - pkg://verl.trainer.config\ndefaults:\n  - ppo_trainer\n"
        "  - _self_\ndata:\n  x_key: 0\n")
    (repo / "scripts/config").mkdir(parents=True)
    (repo / "scripts/config/local.yaml").write_text(
        "hydra:\n  searchpath:\n    - file://verl/trainer/config\ndefaults:\n  - ppo_trainer\n"
        "  - _self_\nlocal:\n  y: 1\n")
    script = repo / "scripts/run.sh"
    script.write_text(CONFIG_PATH_SCRIPT)
    monkeypatch.chdir(repo)  # `$(pwd)` is where the user starts the script
    report = _lint(script, verl_version="0.9.1")
    found = sorted((d.span.line, d.code) for d in report.diagnostics if d.code.startswith(("VL2", "VL004")))
    assert found == [(8, "VL203"), (9, "VL201")]
    monkeypatch.chdir(tmp_path)  # started elsewhere: `$(pwd)` holds no such config
    report = _lint(script, verl_version="0.9.1")
    found = sorted((d.span.line, d.code) for d in report.diagnostics if d.code.startswith(("VL2", "VL004")))
    assert found == [(6, "VL004")]  # at its --config-name
    assert "the folder verl-lint runs in" in report.diagnostics[0].help


def test_show_json_names_the_verl_source_and_config(fork, monkeypatch):
    from click.testing import CliRunner

    from verl_lint.cli import main

    monkeypatch.chdir(fork)
    out = CliRunner().invoke(main, ["show", "--format", "json", "examples/run_fork.sh"])
    assert out.exit_code == 0, out.output
    launch = json.loads(out.output)["scenarios"][0]["launches"][0]
    assert launch["verl"]["kind"] == "workspace" and launch["verl"]["version"] == "0.9.1.dev0"
    assert launch["verl"]["path"] == str(fork.resolve())
    assert launch["config"]["name"] == "ppo_trainer"
    assert launch["config"]["entry_point"] == "verl/trainer/main_ppo.py:3"


def test_source_order(tmp_path, monkeypatch, fork):
    monkeypatch.setattr("verl_lint.verl.sources.installed_tree", lambda: None)
    monkeypatch.setattr("verl_lint.verl.sources.installed_verl_version", lambda: None)
    ws = Workspace(script_dir=fork / "examples", project_root=fork, cwd=tmp_path)
    assert choose_version(cli="0.8.0", workspace=ws).kind == "bundled"
    assert choose_version(workspace=ws).kind == "workspace"
    c = choose_version(verl_source=str(tmp_path / "nope"), workspace=ws)
    assert c.kind == "workspace" and "is not a verl tree" in c.problem
    c = choose_version(verl_source=str(fork / "verl"))  # the package folder itself works too
    assert (c.kind, c.source, c.path) == ("workspace", "verl-source", str(fork.resolve()))
    lone = Workspace(script_dir=tmp_path, project_root=tmp_path, cwd=tmp_path)
    (tmp_path / "REQUIRED_VERL.txt").write_text("verl==0.8.0\n")
    assert choose_version(workspace=lone).source == "REQUIRED_VERL.txt"
    (tmp_path / "REQUIRED_VERL.txt").write_text("verl>=0.6.0\n")  # a lower bound pins nothing
    assert choose_version(workspace=lone).source == "newest bundled"
    (tmp_path / "REQUIRED_VERL.txt").write_text("verl==0.8.0\n")
    assert choose_version(script_text="# verl==0.7.1\n", workspace=lone).source == "script header"


def test_miners_read_code_without_importing():
    src = textwrap.dedent("""\
        from hydra import main
        @main(config_path="cfg", config_name="t.yaml", version_base=None)
        def run(c): ...
        """).encode()
    assert hydra_main(src) == ("cfg", "t", 2)
    files = {
        "verl/workers/w.py": b"def f(self, config):\n"
                             b"    a = omega_conf_to_dataclass(self.config.actor)\n"
                             b"    b = omega_conf_to_dataclass(config.get('profiler'))\n"
                             b"    c = omega_conf_to_dataclass(local_name)\n",
        "verl/trainer/ppo/core_algos.py": b"class AdvantageEstimator(str, Enum):\n    GAE = 'gae'\n"
                                          b"@register_adv_est(AdvantageEstimator.GAE)\ndef g(): ...\n"
                                          b"@register_policy_loss('gspo')\ndef p(): ...\n",
        "verl/workers/reward_manager/dapo.py": b"@register('dapo')\nclass D: ...\n",
    }
    assert [c["node"] for c in converted_nodes(files)] == ["actor", "profiler"]
    regs = registries(files)
    assert regs["algorithm.adv_estimator"] == {"gae": "verl/trainer/ppo/core_algos.py:3"}
    assert set(regs) == {"algorithm.adv_estimator", "reward.reward_manager.name",
                         "actor_rollout_ref.actor.policy_loss.loss_mode"}


def test_only_nodes_verl_converts_reject_extra_keys():
    """verl reads `reward` with `.get()` (its DAPO scripts pass `+reward.reward_kwargs.*`); it
    builds `actor_rollout_ref.actor` (and what is below it) into dataclasses."""
    rel = load_release("0.9.1")
    assert rel.converts(("reward",)) is None
    assert rel.converts(("actor_rollout_ref", "actor", "optim")) is not None
    from test_verl_knowledge import analyze

    a = analyze(["+reward.reward_kwargs.overlong_buffer_len=512", "+actor_rollout_ref.actor.nope=1"])
    assert [(p.code, p.key) for p in a.problems] == [("VL201", "actor_rollout_ref.actor.nope")]


def test_bundled_data_lists_converted_nodes_with_evidence():
    meta = data.release_meta("0.9.1")
    assert all(":" in c["evidence"] for c in meta["converted"])
    assert "verl.trainer.main_ppo_sync" in data.release_meta("0.8.0")["modules"]
    assert "verl.trainer.main_ppo_sync" not in meta["modules"]


def test_conversions_are_per_entry_point():
    """The generation server never builds the rollout's dataclass from `reward`, and main_eval
    converts nothing: sites only count for the entry points whose code can reach them."""
    meta = data.release_meta("0.9.1")["entry_points"]
    assert meta["verl.trainer.main_eval"]["converts"] == {}
    assert "rollout" in meta["verl.trainer.main_ppo"]["converts"]
    assert "rollout" not in meta["verl.trainer.main_generation_server"]["converts"]
    rel = load_release("0.9.1")
    ev = rel.entry_point("verl.trainer.main_eval")
    assert rel.converts(("actor_rollout_ref", "actor"), ev) is None
    assert rel.converts(("actor_rollout_ref", "actor"), rel.entry_point("verl.trainer.main_ppo"))


def test_verl_source_on_the_command_line(fork, tmp_path, monkeypatch):
    from click.testing import CliRunner

    from verl_lint.cli import main

    monkeypatch.chdir(tmp_path)
    outside = tmp_path / "run.sh"
    outside.write_text((fork / "examples/run_fork.sh").read_text())
    args = ["check", "--format", "json", "--exit-zero", str(outside)]
    upstream = json.loads(CliRunner().invoke(main, args).output)
    own = json.loads(CliRunner().invoke(main, [*args, "--verl-source", str(fork)]).output)
    codes = {d["code"] for d in upstream["diagnostics"]}
    assert {"VL201", "VL208"} <= codes
    assert not {"VL201", "VL205", "VL208"} & {d["code"] for d in own["diagnostics"]}
    assert own["files"][0]["verl"]["kind"] == "workspace"
    assert upstream["files"][0]["verl"] == {"kind": "bundled", "path": None, "version": "0.9.1",
                                            "knowledge": "0.9.1", "chosen_by": "newest bundled"}


OWN_PACKAGE_SCRIPT = """\
#!/usr/bin/env bash
set -xeuo pipefail
python3 -m mytool.trainer.main_ppo \\
    actor_rollout_ref.rollout.name=vllm \\
    mytool.alpha=0.3 \\
    mytool.beta=1
python3 -m mytool.tools.prepare --input data.parquet --ratio=0.1
"""


def test_a_package_of_its_own_with_its_own_config(tmp_path, monkeypatch):
    """`python3 -m mytool.trainer.main_ppo` with `mytool/trainer/config/*.yaml`; a module without
    `@hydra.main` (an argparse helper) is not a Hydra launch: nothing to check or report."""
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    (repo / "mytool/trainer/config").mkdir(parents=True)
    (repo / "mytool/tools").mkdir(parents=True)
    (repo / "mytool/trainer/main_ppo.py").write_text(
        "import hydra\n@hydra.main(config_path='config', config_name='mytool_trainer', version_base=None)\n"
        "def main(cfg):\n    pass\n")
    (repo / "mytool/trainer/config/mytool_trainer.yaml").write_text(
        "hydra:\n  searchpath:\n    - pkg://verl.trainer.config\ndefaults:\n  - ppo_trainer\n"
        "  - _self_\nmytool:\n  alpha: 0.1\n")
    (repo / "mytool/tools/prepare.py").write_text("import argparse\nargparse.ArgumentParser()\n")
    (repo / "run.sh").write_text(OWN_PACKAGE_SCRIPT)
    monkeypatch.chdir(repo)
    report = _lint(repo / "run.sh", verl_version="0.9.1")
    found = sorted((d.span.line, d.code) for d in report.diagnostics
                   if d.code.startswith(("VL2", "VL004")))
    assert found == [(6, "VL201")]  # mytool.beta: not in the package's config


def test_enum_lists_apply_only_to_the_releases_they_were_read_from():
    """A list read from verl 0.9.1's code says nothing about 0.7.0 (rollout_rs had other names
    then); `null` is listed as Hydra spells it; a comma-separated field is split."""
    assert load_release("0.9.1").enum_for("skip.rollout.action") is not None
    assert load_release("0.8.0").enum_for("skip.rollout.action") is None
    assert load_release("0.7.0").enum_for("algorithm.rollout_correction.rollout_rs") is None
    allowed = load_release("0.9.1").enum_for("algorithm.rollout_correction.rollout_rs")[0]
    assert "null" in allowed and None not in allowed
    assert load_release("0.9.1").enum_separator("algorithm.rollout_correction.rollout_rs") == ","


def test_the_installed_verl_is_found_through_its_metadata(fork, monkeypatch):
    """The installed distribution's files, located by its metadata: the tree is read, the
    package is never imported."""
    from importlib import metadata

    from verl_lint.verl import sources

    class Dist:
        def locate_file(self, rel):
            return fork / rel

    monkeypatch.setattr(metadata, "distribution", lambda name: Dist() if name == "verl" else None)
    monkeypatch.setattr(sources, "may_be_installed", lambda: True)  # no verl on this sys.path
    sources.installed_tree.cache_clear()
    try:
        c = choose_version(workspace=Workspace(script_dir=None, project_root=None, cwd=fork))
        assert (c.kind, c.source, c.path) == ("installed", "installed verl", str(fork.resolve()))
    finally:
        sources.installed_tree.cache_clear()


def test_an_edited_workspace_config_is_read_again_in_the_same_process(tmp_path, monkeypatch):
    """An editor session lints the same script again after the recipe's YAML changed: the
    folder's hash follows the files, so the new key is known at once."""
    import shutil

    repo = tmp_path / "recipe_repo"
    shutil.copytree(FIXTURES / "recipe_repo", repo)
    (repo / ".git").mkdir()
    monkeypatch.chdir(repo)
    script = repo / "scripts/run_x_qwen3_8b.sh"
    before = [d.span.line for d in _lint(script).diagnostics if d.code == "VL201"]
    cfg = repo / "recipe/x/config/x_trainer.yaml"
    cfg.write_text(cfg.read_text() + "\nactor_rollout_ref:\n  actor:\n    x_temperature: 1.0\n")
    after = [d.span.line for d in _lint(script).diagnostics if d.code == "VL201"]
    assert before == [18] and after == []


def test_a_config_dir_found_on_disk_is_searched_not_unresolved(tmp_path, monkeypatch):
    repo = tmp_path / "proj"
    (repo / ".git").mkdir(parents=True)
    (repo / "cfg").mkdir()
    (repo / "cfg/mine.yaml").write_text("defaults:\n  - ppo_trainer\n  - _self_\nmine:\n  k: 1\n")
    script = repo / "run.sh"
    script.write_text('#!/usr/bin/env bash\nHERE="$(cd "$(dirname "$0")" && pwd)"\n'
                      'python3 -m verl.trainer.main_ppo --config-dir "$HERE/cfg" --config-name=mine \\\n'
                      '    actor_rollout_ref.rollout.name=vllm mine.k=2 mine.nope=3\n'
                      'python3 -m verl.trainer.main_ppo --config-dir "$ELSEWHERE/cfg" --config-name=mine \\\n'
                      '    actor_rollout_ref.rollout.name=vllm\n')
    monkeypatch.chdir(repo)
    report = _lint(script, verl_version="0.9.1")
    found = sorted((d.span.line, d.code) for d in report.diagnostics
                   if d.code.startswith(("VL2", "VL004")))
    assert found == [(4, "VL201"), (5, "VL004")]  # mine.nope checked; $ELSEWHERE unknown
