"""The evaluate stage: scenarios, variable resolution, launches and their exact override lists."""

from __future__ import annotations

from pathlib import Path

import pytest

from verl_lint.evaluate import Unknown, evaluate_script, infer_scenarios
from verl_lint.shell import parse_script
from verl_lint.source import SourceText

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "scripts"
U = "<?>"  # an Unknown value in the expected lists


def runs_of(text: str, **kw):
    return evaluate_script(parse_script(SourceText(text.encode())), **kw)


def fixture_runs(name: str, **kw):
    return evaluate_script(parse_script(SourceText((FIXTURES / name).read_bytes())), **kw)


def overrides(run, launch: int = 0) -> list[str]:
    return [f"{o.prefix}{o.key}={U if isinstance(o.value, Unknown) else o.value}"
            for o in run.launches[launch].overrides]


def values(text: str, **kw) -> dict[str, object]:
    """key → value of the single launch of a one-scenario script."""
    (run,) = runs_of(text, **kw)
    return {o.key: o.value for o in run.launches[0].overrides}


def launch_line(*overrides_: str) -> str:
    return "python3 -m verl.trainer.main_ppo " + " ".join(overrides_) + "\n"


# ---- the fixture scripts: exact override lists per scenario -------------------------------------

MEGATRON_DATA = [
    "algorithm.adv_estimator=grpo", f"data.train_files={U}", f"data.val_files={U}",
    "data.train_batch_size=256", "data.max_prompt_length=1024", "data.max_response_length=8192",
    "data.filter_overlong_prompts=True", "data.truncation=error",
]
MEGATRON_ACTOR = [
    "actor_rollout_ref.model.path=Qwen/Qwen3.5-35B-A3B", "actor_rollout_ref.actor.optim.lr=1e-6",
    "actor_rollout_ref.actor.ppo_mini_batch_size=64",
    "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=1",
    "actor_rollout_ref.actor.megatron.use_remove_padding=False",
    "actor_rollout_ref.actor.megatron.tensor_model_parallel_size=2",
]
MEGATRON_ACTOR_TAIL = [
    "actor_rollout_ref.actor.use_kl_loss=True", "actor_rollout_ref.actor.kl_loss_coef=0.01",
    "++actor_rollout_ref.actor.megatron.override_transformer_config.recompute_method=uniform",
]
MEGATRON_ROLLOUT = [
    "actor_rollout_ref.rollout.name=vllm", "actor_rollout_ref.rollout.n=5",
    "actor_rollout_ref.rollout.tensor_model_parallel_size=4",
    "actor_rollout_ref.rollout.gpu_memory_utilization=0.6",
    "actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu=1",
]
MEGATRON_REF = [
    "actor_rollout_ref.ref.megatron.tensor_model_parallel_size=2",
    "actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu=1",
]


def megatron_trainer(device: str, per_node: int) -> list[str]:
    return ["trainer.critic_warmup=0", 'trainer.logger=["console","wandb"]',
            "trainer.project_name=GRPO-Qwen3.5",
            f"trainer.experiment_name=qwen3_5_35b_megatron_{device}",
            f"trainer.n_gpus_per_node={per_node}", "trainer.nnodes=2", "trainer.save_freq=20",
            "trainer.test_freq=5", "trainer.total_epochs=15"]


def test_megatron_fixture_two_device_scenarios():
    gpu, npu = fixture_runs("run_qwen3_5_35b_megatron.sh")
    assert (gpu.scenario.label, npu.scenario.label) == ("DEVICE=gpu", "DEVICE=npu")
    assert (gpu.scenario.device, npu.scenario.device) == ("gpu", "npu")
    assert overrides(gpu) == (
        MEGATRON_DATA + MEGATRON_ACTOR
        + ["actor_rollout_ref.actor.megatron.pipeline_model_parallel_size=2",
           "actor_rollout_ref.actor.megatron.expert_model_parallel_size=2"]
        + MEGATRON_ACTOR_TAIL
        + ["actor_rollout_ref.actor.megatron.override_transformer_config."
           "recompute_granularity=full"]
        + MEGATRON_ROLLOUT + MEGATRON_REF + megatron_trainer("gpu", 8))
    assert overrides(npu) == (
        MEGATRON_DATA + MEGATRON_ACTOR
        + ["actor_rollout_ref.actor.megatron.pipeline_model_parallel_size=4",
           "actor_rollout_ref.actor.megatron.expert_model_parallel_size=4"]
        + MEGATRON_ACTOR_TAIL
        + ["actor_rollout_ref.actor.megatron.vanilla_mbridge=False",
           "actor_rollout_ref.actor.megatron.param_offload=True"]
        + MEGATRON_ROLLOUT
        + ["+actor_rollout_ref.rollout.engine_kwargs.vllm.mm_processor_cache_gb=0"]
        + MEGATRON_REF + ["actor_rollout_ref.ref.megatron.vanilla_mbridge=False"]
        + megatron_trainer("npu", 16) + ["trainer.device=npu"])
    for run in (gpu, npu):
        (launch,) = run.launches
        assert launch.module == "verl.trainer.main_ppo" and launch.launcher == "python"
        assert (launch.config_path, launch.config_name) == ("config", "ppo_megatron_trainer.yaml")
        assert [p.reason for p in launch.passthrough] == [
            '"$@": the caller may add arguments here']
        assert run.nounset
    assert gpu.visible_devices == "0,1,2,3,4,5,6,7"
    assert npu.visible_devices == ",".join(str(i) for i in range(16))


def test_megatron_fixture_provenance():
    gpu, _ = fixture_runs("run_qwen3_5_35b_megatron.sh")
    by_key = {o.key: o for o in gpu.launches[0].overrides}
    pp = by_key["actor_rollout_ref.actor.megatron.pipeline_model_parallel_size"]
    assert pp.array == "ACTOR" and pp.variables == ("PP",)
    assert [s.line for s in pp.fed_by] == [12]  # `PP=2` in the gpu branch
    assert pp.key_span.line == 56 and pp.value_span is None  # the value is `${PP}`
    logger = by_key["trainer.logger"]
    src = (FIXTURES / "run_qwen3_5_35b_megatron.sh").read_bytes()
    assert src[logger.key_span.start:logger.key_span.end] == b"trainer.logger"
    assert src[logger.value_span.start:logger.value_span.end] == b"'[\"console\",\"wandb\"]'"
    granularity = by_key[
        "actor_rollout_ref.actor.megatron.override_transformer_config.recompute_granularity"]
    assert granularity.span.line == 90 and granularity.array == "ACTOR"


def test_inline_chain_fixture():
    (run,) = fixture_runs("run_qwen2_5_7b_grpo_fsdp.sh")
    assert run.scenario.label == "" and not run.nounset
    ov = overrides(run)
    assert len(ov) == 37
    assert ov[:4] == ["algorithm.adv_estimator=grpo", f"data.train_files={U}",
                      f"data.val_files={U}", "data.train_batch_size=1024"]
    assert 'trainer.logger=["console","wandb"]' in ov
    assert "trainer.project_name=verl_grpo_example_gsm8k" in ov
    assert ov[-1] == "trainer.total_epochs=15"
    assert run.launches[0].passthrough[0].span.line == 47


def test_function_wrapper_fixture():
    gpu, npu = fixture_runs("run_qwen3_32b_gspo_npu.sh")
    for run, dev, per_node in ((gpu, "gpu", 8), (npu, "npu", 16)):
        ov = overrides(run)
        assert ov[-2:] == ["trainer.save_freq=100", "trainer.test_freq=10"]  # "$@" of the call
        assert f"trainer.n_gpus_per_node={per_node}" in ov
        assert f"trainer.device={dev}" in ov
        assert "actor_rollout_ref.actor.ppo_max_token_len_per_gpu=20480" in ov
        assert "data.train_files=/data/dataset/dapo-math-17k.parquet" in ov
        assert run.launches[0].passthrough == []
    assert gpu.scenario.label == "DEVICE=gpu"


def test_torchrun_fixture():
    (run,) = fixture_runs("run_sft_torchrun.sh")
    (launch,) = run.launches
    assert (launch.module, launch.launcher) == ("verl.trainer.sft_trainer", "torchrun")
    assert overrides(run) == [
        f"data.train_files={U}", f"data.val_files={U}", "data.micro_batch_size_per_gpu=4",
        "data.max_length=2048", "model.path=Qwen/Qwen2.5-0.5B-Instruct",
        "model.use_remove_padding=true", "optim.lr=1e-4",
        "engine.ulysses_sequence_parallel_size=2", "trainer.default_local_dir=/tmp/sft_ckpt",
        "trainer.project_name=gsm8k-sft",
        "trainer.experiment_name=gsm8k-sft-qwen-2.5-0.5b-instruct",
        'trainer.logger=["console"]', "trainer.total_epochs=2", "trainer.n_gpus_per_node=8"]


def test_ray_job_fixture():
    (run,) = fixture_runs("run_dapo_ray_job.sh")
    (launch,) = run.launches
    assert launch.launcher == "ray"
    by_key = {o.key: o.value for o in launch.overrides}
    assert by_key["actor_rollout_ref.actor.ppo_max_token_len_per_gpu"] == "45056"
    assert by_key["actor_rollout_ref.rollout.max_num_batched_tokens"] == "22528"
    assert isinstance(by_key["trainer.experiment_name"], Unknown)  # $(date …)
    assert by_key["trainer.save_freq"] == "-1"
    assert len(launch.overrides) == 33


def test_uv_fixture_recovers_tree_sitter_failures():
    (run,) = fixture_runs("run_qwen2_5_3b_ppo_uv.sh")
    (launch,) = run.launches
    assert launch.launcher == "uv"
    ov = overrides(run)
    assert ov[:6] == ["algorithm.adv_estimator=gae", "data.train_files=/data/gsm8k/train.parquet",
                      "data.val_files=[/data/gsm8k/test.parquet]", "data.train_batch_size=256",
                      "data.max_prompt_length=512", "data.max_response_length=2048"]
    # the `# comment` idiom inside the chain adds no word and does not cut the command
    assert ov[6] == "actor_rollout_ref.model.path=Qwen/Qwen2.5-3B-Instruct"
    assert ov[-1] == "trainer.total_epochs=15" and len(ov) == 23


# ---- scenarios ------------------------------------------------------------------------------------

def test_scenarios_pinned_by_device_and_set():
    (npu,) = fixture_runs("run_qwen3_5_35b_megatron.sh", device="npu")
    assert npu.scenario.label == "DEVICE=npu" and npu.scenario.pins == (("DEVICE", "npu"),)
    (gpu,) = fixture_runs("run_qwen3_5_35b_megatron.sh", pins={"DEVICE": "gpu", "TP": "4"})
    assert gpu.scenario.label == "DEVICE=gpu"
    assert "actor_rollout_ref.actor.megatron.tensor_model_parallel_size=4" in overrides(gpu)


def test_scenarios_from_if_branches_and_probe_only():
    # the else branch is the gpu run: it is linted too, not only the branch the test names
    text = 'if [ "$DEVICE" = npu ]; then X=16; else X=8; fi\n' + launch_line("a.n=$X")
    runs = runs_of(text)
    assert [r.scenario.label for r in runs] == ["DEVICE=gpu", "DEVICE=npu"]
    assert [overrides(r) for r in runs] == [["a.n=8"], ["a.n=16"]]
    text = ("DEVICE=${DEVICE:-$(python3 -c 'import torch_npu' 2>/dev/null && echo npu || "
            "echo gpu)}\n" + launch_line("trainer.device=$DEVICE"))
    gpu, npu = runs_of(text)
    assert overrides(gpu) == ["trainer.device=gpu"] and overrides(npu) == ["trainer.device=npu"]


@pytest.mark.parametrize("script, labels", [
    ('case "${DEVICE:-gpu}" in\n  npu) X=16 ;;\n  *) X=8 ;;\nesac\n', ["gpu", "npu"]),
    ('DEVICE=${DEVICE:-cpu}\ncase "$DEVICE" in\n  npu) X=16 ;;\n  *) X=8 ;;\nesac\n', ["npu", "cpu"]),
    ('if [ "$DEVICE" = gpu ]; then X=8; fi\n', ["gpu"]),  # the other device could be anything
])
def test_the_untested_way_through_a_device_block_is_a_scenario(script, labels):
    runs = runs_of(script + launch_line("a.n=$X"))
    assert [r.scenario.label for r in runs] == [f"DEVICE={v}" for v in labels]


def test_glob_operands_are_not_device_values():
    # `[[ $DEVICE == n* ]]` is a pattern, as `n*)` in a case is: no scenario DEVICE=n*
    text = ('if [[ "$DEVICE" == n* ]]; then X=1; elif [ "$DEVICE" = gpu ]; then X=2; fi\n'
            + launch_line("a.x=$X"))
    assert [s.label for s in infer_scenarios(parse_script(SourceText(text.encode())))[0]] == [
        "DEVICE=gpu"]


def test_a_probe_that_does_not_print_the_device_name_stays_unknown():
    # `import torch_npu && echo 1 || echo 0` prints 1 or 0, not npu or gpu
    text = ('IS_NPU=$(python3 -c "import torch_npu" 2>/dev/null && echo 1 || echo 0)\n'
            'case "$DEVICE" in gpu) N=8 ;; npu) N=16 ;; esac\n' + launch_line("a.is=$IS_NPU"))
    runs = runs_of(text)
    assert [r.scenario.label for r in runs] == ["DEVICE=gpu", "DEVICE=npu"]
    for run in runs:
        assert isinstance(run.launches[0].overrides[0].value, Unknown)


def test_no_device_branches_single_scenario():
    scenarios, var = infer_scenarios(parse_script(SourceText(launch_line("a=1").encode())))
    assert [s.label for s in scenarios] == [""] and var is None


def test_hardcoded_device_is_one_scenario():
    text = "DEVICE=npu\ncase $DEVICE in gpu) X=1 ;; npu) X=2 ;; esac\n" + launch_line("a.x=$X")
    (run,) = runs_of(text)
    assert run.scenario.label == "" and overrides(run) == ["a.x=2"]


@pytest.mark.parametrize("value, taken", [
    ("abc", "glob"),  # only the unquoted `a*` is a wildcard
    ("a*", "quoted"),  # a quoted `"a*"` matches the two characters
    ("a?", "escaped"),  # so does an escaped `a\?`
    ("x", "star"),  # `*` matches anything; a quoted `"*"` does not
])
def test_case_patterns_glob_only_where_unquoted(value, taken):
    text = (f"MODE='{value}'\n"
            'case "$MODE" in\n'
            '  "a*") B=quoted ;;\n'
            "  a\\?) B=escaped ;;\n"
            '  "*") B=star-literal ;;\n'
            "  a*) B=glob ;;\n"
            "  *) B=star ;;\n"
            "esac\n" + launch_line("a.b=$B"))
    assert values(text)["a.b"] == taken


def test_a_case_with_continued_matching_may_run_every_arm():
    """`;;&` tests the next patterns too: B is set here in bash, so it must not read as unset."""
    text = ("set -u\nX=ab\ncase \"$X\" in\n  a*) A=1 ;;&\n  *b) B=2 ;;\nesac\n"
            + launch_line("a.b=$B"))
    (run,) = runs_of(text)
    assert isinstance(values(text)["a.b"], Unknown)
    assert not [u for u in run.var_uses if u.name == "B" and u.state == "unset"]


def test_quoted_variable_in_a_case_pattern_matches_itself():
    text = ("PAT='g*'\nDEVICE=gpu\n"
            'case "$DEVICE" in "$PAT") X=quoted ;; $PAT) X=glob ;; esac\n' + launch_line("a.x=$X"))
    assert values(text)["a.x"] == "glob"


# ---- values ----------------------------------------------------------------------------------------

def test_parameter_expansion_operators():
    text = ("E=\nS=set\n" + launch_line(
        "a=${U:-d}", "b=${E:-d}", "c=${E-d}", "d=${S:+alt}", "e=${U:+alt}", "f=${N:=new}",
        "g=$N", "h=${#S}", "i=${S/e/E}", "j=${S^^}", "k=${S:1:2}", "l=${P%.yaml}"))
    v = values("P=ppo.yaml\n" + text)
    assert v == {"a": "d", "b": "d", "c": "", "d": "alt", "e": "", "f": "new", "g": "new",
                 "h": "3", "i": "sEt", "j": "SET", "k": "et", "l": "ppo"}


def test_arithmetic():
    v = values("A=7\nB=2\n" + launch_line(
        "a=$((1024 * 8))", "b=$(( (A + B) * 2 ))", "c=$((A / B))", "d=$((-A / B))",
        "e=$((A % B))", "f=$((A ** B))", "g=$((A > B ? A : B))", "h=$((0x10 + 010))",
        "i=$((UNSET_VAR + 1))", "j=$((A / 0))"))
    assert [v[k] for k in "abcdefgh"] == ["8192", "18", "3", "-3", "1", "49", "7", "24"]
    assert isinstance(v["i"], Unknown) and isinstance(v["j"], Unknown)


def test_names_in_subscripts_and_substring_bounds_are_variables():
    # bash evaluates `A[i]` and `${X:OFF:LEN}` arithmetically: `i` is the variable, not 0
    text = ("for i in 0 1 2; do A[i]=a$i=1; done\nB[k]=b=1\nX=abcdef\nOFF=2\nLEN=1\n"
            + launch_line('"${A[@]}"', '"${B[@]}"', "s=${X:OFF:LEN+1}", "u=${X:NOPE}"))
    (run,) = runs_of(text)
    launch = run.launches[0]
    assert overrides(run)[:4] == ["a0=1", "a1=1", "a2=1", "s=cd"]
    assert isinstance(launch.overrides[4].value, Unknown)  # $NOPE is not set
    assert [p.reason for p in launch.passthrough] == ["index k of B"]  # $k is not set either
    assert {"OFF", "LEN", "NOPE"} <= {u.name for u in run.var_uses}


def test_unknowns_are_never_guessed():
    v = values("for i in $(seq 3); do L=$i; done\n" + launch_line(
        "a=$(hostname)", "b=$NOT_SET", "c=$HOME/x", "d=$L", "e=~/data", "f=${oc.env:HOME}"))
    for k in "abcdef":
        assert isinstance(v[k], Unknown), k
    assert "not set by the script" in v["b"].reason
    assert "bad substitution" in v["f"].reason


def test_tilde_in_an_unquoted_default_word_is_the_home_directory():
    """Bash tilde-expands the word of `${X:-~/a}` and `${X:+~/a}` unless it is double-quoted."""
    v = values("C=${C:-~/ckpt}\nY=1\n" + launch_line(
        'a="${C}"', "b=${NOPE:-~/x}", 'c="${NOPE:-~/x}"', "d=${Y:+~/y}", "e=${NOPE:-x~/z}"))
    assert isinstance(v["a"], Unknown) and isinstance(v["b"], Unknown)
    assert isinstance(v["d"], Unknown)
    assert v["c"] == "~/x" and v["e"] == "x~/z"


def test_backslash_newline_inside_a_word_joins_it_and_a_lone_escaped_blank_is_a_word():
    text = ("ARGS=(\n  a.x=1 \\  # note\n  a.y=2\n)\n"
            "python3 -m verl.trainer.main_ppo a.path=/models/\\\nQwen2.5-7B \\\n"
            '  "${ARGS[@]}"\n')
    (run,) = runs_of(text)
    assert [o.text for o in run.launches[0].overrides] == [
        "a.path=/models/Qwen2.5-7B", "a.x=1", " ", "a.y=2"]


def test_a_quoted_default_is_one_word_where_the_expansion_is_unquoted():
    v = values(launch_line("trainer.logger=${LOGGER:-\"['console', 'wandb']\"}",
                           "b=${NOPE:-a b}x"))
    assert v["trainer.logger"] == "['console', 'wandb']"
    assert v["b"] == "a"  # an unquoted default splits


def test_a_sourced_env_file_may_change_what_is_set_a_toolchain_file_does_not():
    v = values("TP=3\nPP=2\nsource /usr/local/Ascend/ascend-toolkit/set_env.sh\n"
               "source ~/miniconda3/bin/activate verl\n" + launch_line("a.pp=$PP", "a.x=$X") +
               "source ./env.sh\n" + launch_line("a.tp=$TP"))
    assert v["a.pp"] == "2" and isinstance(v["a.x"], Unknown)  # never set: unknown either way
    for own in ("./env.sh", "./cuda_env.sh"):  # a file of the script's own may set anything
        runs = runs_of(f"TP=3\nsource {own}\n" + launch_line("a.tp=$TP"))
        assert isinstance(runs[0].launches[0].overrides[0].value, Unknown)


def test_declare_attributes_keyed_arrays_and_unset_elements():
    v = values("declare -l ENGINE=VLLM\ndeclare -i GPUS=4*2\nlocal_x=1\n"
               "declare -A OPT=([lr]=a.lr=1)\nB=([0]=b.x=1 [1]=b.y=2)\n"
               "C=(c.x=1 c.y=2 c.z=3)\nunset 'C[0]'\n"
               + launch_line("a.e=$ENGINE", "a.g=$GPUS", '"${OPT[@]}"', '"${B[@]}"',
                             '"${C[@]}"'))
    assert (v["a.e"], v["a.g"], v["b.x"], v["b.y"]) == ("vllm", "8", "1", "2")
    assert "c.x" not in v and (v["c.y"], v["c.z"]) == ("2", "3")
    assert v["a.lr"] == "1"  # an associative array of one key: its order is no question


def test_a_star_expansion_joins_with_the_scripts_ifs():
    v = values("G=(0 1 2 3)\nIFS=,\nexport CUDA_VISIBLE_DEVICES=\"${G[*]}\"\nunset IFS\n"
               "E=\"${G[*]}\"\n" + launch_line('"a.e=$E"', "a.c=$CUDA_VISIBLE_DEVICES"))
    assert (v["a.c"], v["a.e"]) == ("0,1,2,3", "0 1 2 3")


def unset_uses(text: str) -> set[str]:
    return {u.name for run in runs_of(text) for u in run.var_uses
            if u.state == "unset" and not u.has_default}


def test_required_variable_guards_make_it_set_after_them():
    """Past `: "${X:?msg}"` or `if [ -z "$X" ]; then exit 1; fi` bash guarantees X is set."""
    text = ('set -u\n: "${MODEL:?export MODEL}"\n'
            'if [[ -z ${DATA:-} ]]; then echo "DATA?" >&2; exit 1; fi\n'
            'if [ -n "$CKPT" ]; then R=$CKPT; fi\n'
            + launch_line("a.m=$MODEL", "a.d=$DATA/x", "a.r=${R:-none}"))
    v = values(text)
    assert isinstance(v["a.m"], Unknown) and isinstance(v["a.d"], Unknown)
    assert isinstance(v["a.r"], Unknown)  # maybe the CKPT branch ran
    assert unset_uses(text) == {"CKPT"}  # the test itself still reads an unset CKPT


def test_arithmetic_commands_and_c_style_loops_assign():
    text = ("set -u\nTP=3\n(( TP += 1 ))\nlet \"PP = 2\"\n"
            "for ((seed = 0; seed < 3; seed++)); do\n" + launch_line(
                "a.tp=$TP", "a.pp=$PP", "a.s=$seed") + "done\n")
    v = values(text)
    assert all(isinstance(v[k], Unknown) for k in ("a.tp", "a.pp", "a.s"))
    assert unset_uses(text) == set()


def test_quoting_concatenation_and_splitting():
    v = values("X='a b'\nL='[\"console\",\"wandb\"]'\n" + launch_line(
        '"q=$X"', "r=${X}_x", "s=$L", "t='${oc.env:HOME}'", 'u="${X}"-"tail"'))
    assert v["q"] == "a b" and v["s"] == '["console","wandb"]' and v["t"] == "${oc.env:HOME}"
    assert v["u"] == "a b-tail"
    assert v["r"] == "a" and "b_x" in v  # unquoted: split into two words


def test_arrays_appends_and_elements():
    text = ("A=(x.a=1 \"x.b=2 3\")\nA+=(x.c=3)\nA[3]=x.d=4\nB=(\"${A[@]}\" y=1)\n"
            + launch_line('"${B[@]}"', "n=${#A[@]}", "first=${A[0]}"))
    (run,) = runs_of(text)
    assert overrides(run) == ["x.a=1", "x.b=2 3", "x.c=3", "x.d=4", "y=1", "n=4", "first=x.a=1"]
    o = run.launches[0].overrides
    assert (o[0].array, o[0].span.line) == ("A", 1)
    assert o[4].array == "B"


def test_operators_on_whole_arrays_act_on_the_elements():
    # bash counts, slices and tests the elements; it does not operate on their joined text
    text = ('E=("" "")\nN=()\nC=(x=1 y=2)\nf() {\n  python3 -m verl.trainer.main_ppo '
            '"${@:2}" argc=${#@} "${C[@]:1}" "${E[@]:-d=1}" "${N[@]-e=1}" "${N[@]:+h=1}" '
            '"${C[@]:-j=1}" "${C[*]:0:1}" "${C[@]#x}"\n}\nf p a=1 b=2\n')
    (run,) = runs_of(text)
    assert overrides(run) == ["a=1", "b=2", "argc=3", "y=2", "=None", "=None", "e=1",
                              "x=1", "y=2", "x=1"]
    assert [p.reason for p in run.launches[0].passthrough] == [
        "override key only known at run time: ${C[@]#x} is not evaluated element by element"]


def test_function_wrapper_with_local_and_return_value():
    text = ("run() {\n  local tp=${1:-2}\n  shift\n  python3 -m verl.trainer.main_ppo a.tp=$tp "
            '"$@"\n}\nrun 8 b=1 c=2\n')
    (run,) = runs_of(text)
    assert overrides(run) == ["a.tp=8", "b=1", "c=2"]


def test_assignments_before_a_function_call_hold_during_the_call():
    text = ("run() {\n  python3 -m verl.trainer.main_ppo a.n=$N\n}\n"
            "N=4 CUDA_VISIBLE_DEVICES=0,1 run\n" + launch_line("b.n=${N:-unset}"))
    (run,) = runs_of(text)
    assert overrides(run, 0) == ["a.n=4"] and overrides(run, 1) == ["b.n=unset"]
    assert [u.state for u in run.var_uses if u.name == "N"] == ["set", "unset"]
    # exported to the function's commands, as bash does
    assert (run.visible_devices, run.visible_devices_from) == ("0,1", "CUDA_VISIBLE_DEVICES")


def test_positional_parameters_after_a_passthrough_are_unknown():
    # `main "$@"`: the caller's words stand for any number of arguments
    text = ('main() {\n  local tp=${1:-2} n=${2:-1}\n  python3 -m verl.trainer.main_ppo '
            'a.tp=$tp a.n=$n a.argc=$# a.three=${3:-3}\n}\nmain x "$@"\n')
    v = values(text)
    assert v["a.tp"] == "x"
    for k in ("a.n", "a.argc", "a.three"):
        assert isinstance(v[k], Unknown), k
    # `shift` past them: how many words went is unknown, so are the rest
    (run,) = runs_of('f() {\n  shift 2\n  python3 -m verl.trainer.main_ppo b=$1 "$@"\n}\n'
                     'f "$@" c=1 d=2\n')
    (launch,) = run.launches
    assert [(o.key, isinstance(o.value, Unknown)) for o in launch.overrides] == [("b", True)]
    assert len(launch.passthrough) == 1


def test_unknown_branch_merges():
    text = ('if [ -f /etc/x ]; then A=1; B=1; ARR+=(z=1); else A=2; B=1; fi\n'
            + launch_line("a=$A", "b=$B", '"${ARR[@]}"'))
    (run,) = runs_of(text)
    launch = run.launches[0]
    assert [o.key for o in launch.overrides] == ["a", "b"]
    assert isinstance(launch.overrides[0].value, Unknown) and launch.overrides[1].value == "1"
    assert "only" in launch.passthrough[0].reason


def test_source_taints_defaults():
    v = values("source ./env.sh\n" + launch_line("a=${TP:-2}"))
    assert isinstance(v["a"], Unknown) and "env.sh" in v["a"].reason


# ---- variable uses ------------------------------------------------------------------------------------

def test_var_uses_states_and_notes():
    text = ("set -u\ncase ${DEVICE} in\n  gpu) GPU_ONLY=1 ;;\n  npu) : ;;\nesac\n"
            + launch_line("a=$GPU_ONLY", "b=${MISSING}", "c=$HOME", "d=${DEFAULTED:-1}"))
    gpu, npu = runs_of(text)
    uses = {u.name: u for u in npu.var_uses}
    assert uses["GPU_ONLY"].state == "unset" and "gpu" in uses["GPU_ONLY"].note
    assert uses["GPU_ONLY"].nounset
    assert uses["MISSING"].state == "unset" and not uses["MISSING"].has_default
    assert uses["HOME"].state == "environment"
    assert uses["DEFAULTED"].has_default
    # under `set -u` a DEVICE nothing assigns stops the run unless the caller exports it: the
    # scenario assumed it (issue 14); pinned by the user (--device) it comes from outside
    assert uses["DEVICE"].state == "unset"
    (pinned,) = runs_of(text, device="npu")
    assert {u.name: u.state for u in pinned.var_uses}["DEVICE"] == "environment"
    assert {u.name: u.state for u in gpu.var_uses}["GPU_ONLY"] == "set"
    (known,) = runs_of(launch_line("a=$CLUSTER_ENV"), known_env=frozenset({"CLUSTER_ENV"}))
    assert known.var_uses[0].state == "environment"


def test_maybe_state_for_partially_assigned_variables():
    text = "if [ -n \"${X:-}\" ]; then Y=1; fi\n" + launch_line("y=$Y")
    (run,) = runs_of(text)
    use = [u for u in run.var_uses if u.name == "Y"][0]
    assert use.state == "maybe" and "only" in use.note


def test_nounset_only_when_every_path_sets_it():
    # `set -u` in one arm of an unknown branch may not be in force: say so only when it is
    for setup in ('if [ -n "$STRICT" ]; then set -u; fi\n', '[ -n "$STRICT" ] && set -u\n',
                  'set -u\nif [ -n "$LAX" ]; then set +u; fi\n'):
        (run,) = runs_of(setup + launch_line("a=$MISSING"))
        assert not run.nounset, setup
        assert not [u for u in run.var_uses if u.name == "MISSING"][0].nounset, setup
    (run,) = runs_of('if [ -n "$X" ]; then set -u; else set -u; fi\n' + launch_line("a=$M"))
    assert run.nounset and [u for u in run.var_uses if u.name == "M"][0].nounset


# ---- launch detection -----------------------------------------------------------------------------------

@pytest.mark.parametrize("line, module, launcher", [
    ("python -m verl.trainer.main_ppo a=1", "verl.trainer.main_ppo", "python"),
    ("python3 -u -m verl.trainer.main_ppo a=1", "verl.trainer.main_ppo", "python"),
    ("$PYTHON -m verl.trainer.main_ppo a=1", "verl.trainer.main_ppo", "python"),
    ("exec python3 -m recipe.dapo.main_dapo a=1", "recipe.dapo.main_dapo", "python"),
    ("nohup python3 -m verl.trainer.main_ppo a=1 > log 2>&1 &", "verl.trainer.main_ppo", "python"),
    ("python3 -m verl.trainer.main_ppo a=1 2>&1 | tee log", "verl.trainer.main_ppo", "python"),
    ("CUDA_VISIBLE_DEVICES=0 python3 -m my_pkg.main_train a=1", "my_pkg.main_train", "python"),
    ("torchrun --nnodes 1 --nproc_per_node=8 -m verl.trainer.sft_trainer a=1",
     "verl.trainer.sft_trainer", "torchrun"),
    ("python -m torch.distributed.run --nproc_per_node 2 -m verl.trainer.sft_trainer a=1",
     "verl.trainer.sft_trainer", "torchrun"),
    ("ray job submit --address=x --runtime-env-json='{}' -- python3 -m verl.trainer.main_ppo a=1",
     "verl.trainer.main_ppo", "ray"),
    ("uv run --frozen --extra vllm python -m verl.trainer.main_ppo a=1",
     "verl.trainer.main_ppo", "uv"),
    ("env A=1 B=2 python3 -m verl.trainer.main_ppo a=1", "verl.trainer.main_ppo", "python"),
    # options whose values are only known at run time do not hide the launch
    ('torchrun --standalone --nnodes=1 --nproc_per_node="${N}" -m verl.trainer.sft_trainer a=1',
     "verl.trainer.sft_trainer", "torchrun"),
    ("torchrun --nnodes ${NNODES} --node_rank=$RANK $EXTRA -m verl.trainer.sft_trainer a=1",
     "verl.trainer.sft_trainer", "torchrun"),
    ("python3 -m torch.distributed.run --nproc_per_node=$N -m verl.trainer.sft_trainer a=1",
     "verl.trainer.sft_trainer", "torchrun"),
    ("ray job submit --address=$ADDR -- python3 -m verl.trainer.main_ppo a=1",
     "verl.trainer.main_ppo", "ray"),
    ("uv run --with $PKG python -m verl.trainer.main_ppo a=1", "verl.trainer.main_ppo", "uv"),
    ("env A=$X python3 -X$OPT -m verl.trainer.main_ppo a=1", "verl.trainer.main_ppo", "python"),
])
def test_launch_forms(line, module, launcher):
    (run,) = runs_of(line + "\n")
    (launch,) = run.launches
    assert (launch.module, launch.launcher) == (module, launcher)
    assert [(o.key, o.value) for o in launch.overrides] == [("a", "1")]


def test_unknown_word_that_may_be_the_script_is_no_launch():
    (run,) = runs_of("torchrun $ARGS main_ppo.py a=1\npython3 $SCRIPT -m verl.trainer.main_ppo a=1\n")
    assert run.launches == []


def test_torchrun_corpus_script_has_its_launch():
    path = FIXTURES.parent / "corpus" / "torchrun_sft.sh"
    (run,) = evaluate_script(parse_script(SourceText(path.read_bytes())))
    (launch,) = run.launches
    assert (launch.module, launch.launcher) == ("verl.trainer.sft_trainer", "torchrun")
    assert len(launch.overrides) == 15 and len(launch.passthrough) == 1


def test_script_path_launch_and_non_verl_commands():
    (run,) = runs_of("python3 verl/trainer/main_ppo.py a=1\npython3 -m pip install x\n"
                     "python3 tools/convert.py a=1\npython3 -c 'print(1)'\necho python3 -m verl.x\n")
    (launch,) = run.launches
    assert launch.script == "verl/trainer/main_ppo.py" and launch.module is None


def test_config_dir_flags():
    (run,) = runs_of(launch_line("--config-dir", "recipe/x/config", "-cd=/etc/cfg",
                                 "--config-name=x", "a.b=1"))
    launch = run.launches[0]
    assert launch.config_dirs == ["recipe/x/config", "/etc/cfg"]
    assert [o.key for o in launch.overrides] == ["a.b"]


def test_config_flags_and_prefixes():
    (run,) = runs_of(launch_line("--config-path=/cfg", "--config-name", "grpo.yaml", "+a.b=1",
                                 "++c=2", "~d", "~e=3", "model_engine=megatron", "--multirun"))
    launch = run.launches[0]
    assert (launch.config_path, launch.config_name) == ("/cfg", "grpo.yaml")
    assert launch.config_name_span.line == 1
    assert launch.config_dirs == []
    assert [(o.prefix, o.key, o.value) for o in launch.overrides] == [
        ("+", "a.b", "1"), ("++", "c", "2"), ("~", "d", None), ("~", "e", "3"),
        ("", "model_engine", "megatron")]


def test_unknown_key_is_a_passthrough():
    (run,) = runs_of("EXTRA=$(cat extra.txt)\n" + launch_line("$EXTRA", "${P}.lr=1", "a=1"))
    launch = run.launches[0]
    assert [o.key for o in launch.overrides] == ["a"]
    assert len(launch.passthrough) == 2


def test_spans_of_inline_overrides():
    text = launch_line("a.b=1", "'c.d=x y'", '+e="[1,2]"')
    (run,) = runs_of(text)
    src = text.encode()
    got = [(src[o.key_span.start:o.key_span.end], src[o.value_span.start:o.value_span.end])
           for o in run.launches[0].overrides]
    assert got == [(b"a.b", b"1"), (b"c.d", b"x y'"), (b"e", b'"[1,2]"')]


# ---- hostile scripts: bounded time and memory ------------------------------------------------------
def _doubling(line: str, n: int = 40) -> str:
    return "X=a\nARR=(a b)\n" + (line + "\n") * n + launch_line("data.x=$X", '"${ARR[@]}"')


@pytest.mark.parametrize("script", [
    _doubling('X="$X$X"'),
    _doubling("X+=$X"),
    _doubling('ARR+=("${ARR[@]}")'),
    _doubling('ARR=("${ARR[@]}" "${ARR[@]}")'),
    _doubling('X="${X//a/aa}"'),
    _doubling('X="${X}${X}"; Y="${X#a}${X%%a}${X##*b}"'),
    "X=$((2**999999999))\nY=$((1<<999999999))\n" + launch_line("a=$X", "b=$Y"),
    # exponential arithmetic references and nested unrolled loops
    "".join(f"V{k}=\"{'+'.join([f'V{k + 1}'] * 50)}\"\n" for k in range(12))
    + launch_line("a=$((V0))"),
    "".join(f"for i{k} in 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16; do\n" for k in range(8))
    + "X=1\n" + "done\n" * 8 + launch_line("a=$X"),
])
def test_hostile_scripts_finish_fast_with_bounded_memory(script):
    import time
    import tracemalloc

    tracemalloc.start()
    t0 = time.process_time()
    try:
        runs_of(script)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert time.process_time() - t0 < 5
    assert peak < 64 * 1024 * 1024


def test_too_long_values_are_unknown():
    v = values(_doubling('X="$X$X"', 20))  # 1 MiB
    assert v["data.x"] == Unknown(reason="value too long")
    v = values(_doubling('X="$X$X"', 10))  # 1 KiB: still known
    assert v["data.x"] == "a" * 1024


@pytest.mark.parametrize("piece", ["\\ ", "a", "'x'", "$A"])
def test_words_of_many_pieces_expand_in_linear_time(piece):
    import time

    model = parse_script(SourceText(("A=1\n" + launch_line("a=" + piece * 8000)).encode()))
    t0 = time.process_time()
    (run,) = evaluate_script(model)
    assert time.process_time() - t0 < 0.5  # quadratic took 4.6 s
    assert len(run.launches[0].overrides[0].value) == 8000


def test_visible_devices_only_from_the_scenarios_own_variable():
    text = ('export CUDA_VISIBLE_DEVICES=0,1\n'
            'case "$DEVICE" in gpu) N=2 ;; npu) N=4 ;; esac\n' + launch_line("a.n=$N"))
    gpu, npu = runs_of(text)
    assert (gpu.visible_devices, gpu.visible_devices_from) == ("0,1", "CUDA_VISIBLE_DEVICES")
    # a CUDA list does not restrict NPUs: the NPU scenario sees no list at all
    assert (npu.visible_devices, npu.visible_devices_from) == (None, None)


@pytest.mark.parametrize("test, mode, expected", [
    ('[ "${MODE:-fast}" = fast ]', "MODE=\n", "1"),      # empty → the default → taken
    ('[ "${MODE:-fast}" = fast ]', "MODE=slow\n", "2"),
    ('[ "${MODE-fast}" = fast ]', "MODE=\n", "2"),       # `-`: set but empty stays empty
    ('[ -n "${MODE:-x}" ]', "MODE=\n", "1"),
])
def test_if_test_on_a_variable_with_a_default_compares_the_expanded_value(test, mode, expected):
    """bash compares the word's value: a `${X:-d}` default takes part (it used to look up
    bare X, so `MODE=` took the else branch where bash takes the then branch)."""
    text = (f"#!/bin/bash\n{mode}if {test}; then\n  a=1\nelse\n  a=2\nfi\n"
            + launch_line("trainer.nnodes=$a"))
    assert values(text)["trainer.nnodes"] == expected
    # bash agrees
    import subprocess
    script = f"{mode}if {test}; then a=1; else a=2; fi; echo $a"
    assert subprocess.run(["bash", "-c", script], capture_output=True, text=True).stdout.strip() \
        == expected


def test_if_test_on_an_unassigned_variable_stays_undecided():
    # `[ -n "${X:-}" ]` asks about the environment: both branches may run
    text = ('#!/bin/bash\nif [ "${MODE:-fast}" = fast ]; then\n  a=1\nelse\n  a=2\nfi\n'
            + launch_line("trainer.nnodes=$a"))
    assert isinstance(values(text)["trainer.nnodes"], Unknown)


def test_scenario_device_is_the_canonical_device_name():
    # the label keeps the script's spelling (it is the pinned value); rules read `device`
    text = 'case "$DEVICE" in\n  GPU) X=1 ;;\n  Ascend) X=2 ;;\nesac\n' + launch_line("a.x=$X")
    runs = runs_of(text)
    assert [(r.scenario.label, r.scenario.device) for r in runs] == [
        ("DEVICE=GPU", "gpu"), ("DEVICE=Ascend", "npu")]
    assert [overrides(r) for r in runs] == [["a.x=1"], ["a.x=2"]]
