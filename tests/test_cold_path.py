"""The cold path's shortcuts give what the direct computation gives (issue 17)."""

from __future__ import annotations

import difflib
from pathlib import Path

from hypothesis import example, given, settings
from hypothesis import strategies as st

from verl_lint.verl import suggest

# key names: few letters and many `_`, so acronyms, dropped words and near spellings all occur
_NAMES = st.one_of(
    st.lists(st.sampled_from(["a", "b", "ab", "ba", "c", "", "lr"]), min_size=1, max_size=5)
    .map("_".join),
    st.text(alphabet="ab_cd", max_size=12))


def _reference_similarity(a: str, b: str) -> float:
    """`leaf_similarity` as it was written before its shortcuts."""
    def acronym(name: str) -> str:
        return "".join(p[0] for p in name.split("_") if p)

    def subsequence(short: list[str], long: list[str]) -> bool:
        it = iter(long)
        return len(short) >= 2 and all(p in it for p in short)

    if a == b:
        return 1.0
    score = 0.0
    if a and b and 2.0 * min(len(a), len(b)) / (len(a) + len(b)) >= 0.75 and \
            difflib.SequenceMatcher(None, a, b).quick_ratio() >= 0.75:
        score = difflib.SequenceMatcher(None, a, b).ratio()
    if (len(a) >= 2 and acronym(b) == a) or (len(b) >= 2 and acronym(a) == b):
        score = max(score, 0.95)
    pa, pb = a.split("_"), b.split("_")
    if subsequence(pa, pb) or subsequence(pb, pa):
        score = max(score, 0.9)
    return score


@settings(max_examples=400, deadline=None)
@given(_NAMES.filter(bool), _NAMES.filter(bool))
def test_leaf_similarity_equals_the_direct_computation(a, b):
    assert suggest.leaf_similarity.__wrapped__(a, b) == _reference_similarity(a, b)


def test_leaf_similarity_on_verl_names():
    pairs = [("lr", "learning_rate"), ("tensor_parallel_size", "tensor_model_parallel_size"),
             ("ppo_mini_batch", "ppo_mini_batch_size"), ("log_prob_micro_batch_size",
                                                         "log_prob_micro_batch_size_per_gpu"),
             ("tp", "tensor_parallel"), ("gpu_memory_utilisation", "gpu_memory_utilization")]
    for a, b in pairs + [(b, a) for a, b in pairs]:
        assert suggest.leaf_similarity.__wrapped__(a, b) == _reference_similarity(a, b) > 0.8


# near spellings of a few verl names: many candidates score within reach of the best
_SEGMENT = st.sampled_from(["actor", "ref", "rollout", "lr", "learning_rate", "micro_batch",
                            "micro_batch_size", "micro_batch_sizes", "micro_bach_size",
                            "ppo_micro_batch_size", "log_prob_micro_batch_size", "megatron",
                            "fsdp_config", "tp", "tp_size", "param_offload", "offload_param"])
_TREES = st.recursive(st.integers(0, 3), lambda inner: st.dictionaries(_SEGMENT, inner,
                                                                        max_size=5), max_leaves=30)


@settings(max_examples=500, deadline=None)
@given(_TREES.filter(lambda t: isinstance(t, dict)), st.lists(_SEGMENT, min_size=1, max_size=4),
       st.integers(1, 5))
def test_closest_keys_in_a_tree_equal_scoring_every_candidate(tree, key_parts, limit):
    """Candidates whose bound is out of reach are not scored; with a bound no candidate is
    out of reach of, every one is: the same suggestions."""
    key = ".".join(key_parts)
    pruned = suggest._closest_in_tree(key, tree, limit)
    saved = suggest._ratio_bound
    suggest._ratio_bound = lambda a, b: 10.0
    try:
        assert pruned == suggest._closest_in_tree(key, tree, limit)
    finally:
        suggest._ratio_bound = saved


_LAUNCH = """#!/bin/bash
# verl==0.9.1
set -xeuo pipefail
python3 -m verl.trainer.main_ppo \\
    data.train_batch_size=1024 \\
    actor_rollout_ref.actor.ppo_mini_batch_size=256 \\
    actor_rollout_ref.actor.ppo_micro_batch_sizes=8 \\
    actor_rollout_ref.rollout.name=vllm \\
    trainer.total_epochs=2
"""


def test_a_cold_lint_imports_no_pydantic_yaml_or_hydra(tmp_path):
    """Linting without the result cache (the verl caches warm, as after a first run) loads
    the knowledge base's rules in their plain form: no pydantic (≈ 40 ms of every start), and
    neither PyYAML nor Hydra for the bundled configs."""
    script = tmp_path / "run.sh"
    script.write_text(_LAUNCH)
    runs = [_check_loading(tmp_path / "cache", {"pydantic", "yaml", "hydra", "omegaconf"},
                           "--no-cache", "--format", "concise", str(script))
            for _ in range(2)]
    assert "VL201" in runs[1].stdout, runs[1].stdout + runs[1].stderr  # it did lint
    assert runs[0].stdout == runs[1].stdout
    assert "LOADED []" in runs[1].stderr, runs[1].stderr


def _check_loading(cache: Path, modules: set[str], *args: str):
    """`verl-lint check *args` in a new process with `cache` as its cache folder; its stderr
    ends with `LOADED [...]`: which of `modules` (or their packages) it imported."""
    import os
    import subprocess
    import sys

    env = dict(os.environ, VERL_LINT_CACHE_DIR=str(cache))
    env.pop("VERL_LINT_NO_CACHE", None)
    probe = ("import sys; from verl_lint.cli import main\n"
             "try:\n    main()\nexcept SystemExit:\n    pass\n"
             f"print('LOADED', sorted({{m for m in sys.modules if m in {modules!r} or "
             f"m.split('.')[0] in {modules!r}}}), file=sys.stderr)")
    return subprocess.run([sys.executable, "-c", probe, "check", *args], capture_output=True,
                          text=True, env=env)


def test_enum_index_gives_the_first_entry_naming_a_key():
    """`enum_for`/`enum_separator` look a key up in an index of enums.json: the entry found
    is the first one whose `key` or `also_applies_to` names it, as a scan finds."""
    from verl_lint.verl import data
    from verl_lint.verl.release import _enum_entries

    entries = data.enums()
    keys = {k for e in entries for k in (e["key"], *e.get("also_applies_to", ()))}
    assert len(keys) > 10
    for key in keys | {"trainer.not_an_enum"}:
        scan = next((e for e in entries if key == e["key"] or key in e.get("also_applies_to", ())),
                    None)
        assert _enum_entries().get(key) is scan, key


def test_device_blocks_are_the_device_cases_and_ifs_in_order():
    from verl_lint.rules.shell._shell import device_blocks
    from verl_lint.shell import parse_script
    from verl_lint.source import SourceText

    text = ('case "$DEVICE" in\n  npu) export HCCL_X=1 ;;\n  *) export NCCL_X=1 ;;\nesac\n'
            'if [ "$DEVICE" = npu ]; then A=1; fi\necho done\n')
    one, two = (parse_script(SourceText(t.encode())) for t in (text, "echo hi\n" + text))
    first = device_blocks(one)
    assert [type(b).__name__ for b in first] == ["Case", "If"]
    assert [b.span.start for b in device_blocks(two)] == [b.span.start + 8 for b in first]
    assert device_blocks(one) == first


@given(st.binary(max_size=60).map(lambda b: b.replace(b"\x00", b"\n")))
def test_line_starts_are_the_offsets_after_each_newline(data):
    from verl_lint.source import SourceText

    expected = [0] + [i + 1 for i, byte in enumerate(data) if byte == 0x0A]
    assert list(SourceText(data).line_starts) == expected


def test_is_group_answers_as_group_options_does():
    from verl_lint.verl.release import load_release

    release = load_release("0.9.1")
    for entry in release.entry_points.values():
        folders = (entry.config_dir, *entry.search)
        names = {g for d in folders for g in release.dir_index(d)[0]}
        assert names
        for name in names | {"trainer", "trainer.nnodes", "hydra", "hydra/launcher", "nope/x"}:
            assert release.is_group(entry, name) == (
                name.startswith("hydra/") or name == "hydra" or
                release.group_options(entry, name) is not None), name


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from([b"a", b"}", b"{", b"$", b"${", b"'", b'"', b"\\", b"`", b"(",
                                 b")", b"((", b"#", b" ", b"x_1", b"\n", b"\xc3\xa9"]),
                max_size=25).map(b"".join), st.integers(0, 3))
def test_skips_jump_plain_runs_as_stepping_byte_by_byte_does(data, cut):
    """`skip_double`, `skip_parens` and `skip_brace` jump over runs of bytes they have nothing
    to do with; with the jumps disabled (patterns that match nothing) they step byte by byte:
    the same ends from every start."""
    import re

    from verl_lint.shell import lexer

    end = max(0, len(data) - cut)

    def ends() -> list[int]:
        out = []
        for i in range(end):
            out.append(lexer.skip_double(data, i, end))
            out += [lexer.skip_parens(data, i, end, arith) for arith in (False, True)]
            out += [lexer.skip_brace(data, i, end, dq) for dq in (False, True)]
        return out

    fast = ends()
    names = ("_DOUBLE_PLAIN", "_PARENS_PLAIN", "_BRACE_PLAIN", "_BRACE_PLAIN_DQ")
    saved = {n: getattr(lexer, n) for n in names}
    for n in names:
        setattr(lexer, n, re.compile(rb"(?!)"))
    try:
        assert fast == ends()
    finally:
        for n, rx in saved.items():
            setattr(lexer, n, rx)


def test_skip_brace_on_nested_and_quoted_words():
    from verl_lint.shell.lexer import skip_brace

    cases = {b'X:-${Y:-a}}b': 11, b"X:-'}'}b": 7, b'X:-"}"}b': 7, b"X:-\\}}b": 6,
             b"X:-`}`}b": 7, b"X": 1}
    for data, after in cases.items():
        assert skip_brace(data, 0, len(data), False) == after, data
    assert skip_brace(b"X:-'}'}b", 0, 8, True) == 5  # inside "…" a `'` does not quote


_SHELL_BITS = st.sampled_from([b"a", b"x=1", b" ", b"\t", b"\n", b"#", b"# c\n", b"'q'", b'"d $X"',
                               b"$", b"${X:-[1]}", b"${oc.env:HOME}", b"$((1+2))", b"$(ls)", b"`",
                               b"\\", b"\\\n", b"<<EOF\nbody\nEOF\n", b"<<'E' || {\n", b"E\n",
                               b"<>", b";", b"&", b"|", b"(", b")", b"}", b"\xc3\xa9"])


@settings(max_examples=400, deadline=None)
@given(st.lists(_SHELL_BITS, max_size=30).map(b"".join))
# a comment starts after each byte that ends a word: the jump must stop at every one
@example(b"(#<>")
@example(b")#<>")
@example(b"|#<>")
@example(b";#<>")
@example(b"&#<>")
@example(b" #<>")
def test_masking_skips_plain_runs_as_stepping_byte_by_byte_does(data):
    """`_mask_range` jumps over runs of bytes it has nothing to do with; with the jump
    disabled (a pattern that matches nothing) it steps byte by byte: the same result."""
    import re

    from verl_lint.shell import parser

    fast = parser.masked(data)
    saved = parser._MASK_PLAIN
    parser._MASK_PLAIN = re.compile(rb"(?!)")
    try:
        slow = parser.masked(data)
    finally:
        parser._MASK_PLAIN = saved
    assert fast == slow


@settings(max_examples=300, deadline=None)
@given(st.lists(_SHELL_BITS, max_size=25).map(b"".join),
       st.sampled_from(["none", "double", "heredoc"]))
def test_general_lexer_takes_literal_runs_as_one_character_at_a_time(data, mode):
    """`WordLexer.pieces` appends a run of plain ASCII at once; with that disabled it takes
    one character at a time: the same pieces."""
    import re

    from verl_lint.shell import lexer
    from verl_lint.source import SourceText, SpanFactory

    def lexed():
        return lexer.WordLexer(data, SpanFactory(SourceText(data))).pieces(0, len(data), mode)

    fast = lexed()
    saved = lexer._LITERAL_RUN
    lexer._LITERAL_RUN = re.compile(rb"(?!)")
    try:
        assert fast == lexed()
    finally:
        lexer._LITERAL_RUN = saved


def test_a_cold_lint_loads_neither_openssl_tempfile_nor_the_fixer(tmp_path):
    """A run with an empty result cache (it stores every entry) of a script whose finding has
    a deletion fix: the digests are BLAKE2's (`verl_lint.digest`: no `hashlib`, which loads
    OpenSSL), entries are written without `tempfile`, and the deletion is widened without
    importing `verl_lint.fixes` — ≈ 8 ms of imports in all, on the serial start of every run."""
    import shutil

    script = Path(__file__).parent.parent / "fixtures/rules/VL204/bad_grad_offload_never_read_091.sh"
    modules = {"hashlib", "_hashlib", "tempfile", "verl_lint.fixes", "difflib"}
    args = ("--verl-version", "0.9.1", "--format", "json", str(script))
    _check_loading(tmp_path / "cache", modules, *args)  # the verl and code caches filled
    for results in (tmp_path / "cache").glob("*/results"):
        shutil.rmtree(results)
    run = _check_loading(tmp_path / "cache", modules, *args)
    assert '"VL204"' in run.stdout and '"edits"' in run.stdout, run.stdout + run.stderr
    assert list((tmp_path / "cache").glob("*/results/*")), "the entry was stored"
    assert "LOADED []" in run.stderr, run.stderr


def test_digests_are_blake2b():
    import hashlib

    from verl_lint.digest import hexdigest

    for data in (b"", b"x", bytes(range(256)) * 40):
        assert hexdigest(data) == hashlib.blake2b(data, digest_size=20).hexdigest()
