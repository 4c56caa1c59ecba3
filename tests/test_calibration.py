"""Issue 15: rule severities and verdicts calibrated against verl's code, with the regression
fixtures cut from verl's own scripts (`fixtures/rules/`; the expected files do not hold the
severity, so it is checked here)."""

from __future__ import annotations

from pathlib import Path

import pytest

from verl_lint.diagnostics import Severity

from test_rule_fixtures import ROOT, lint_text


def findings(case: str, code: str | None = None):
    script = ROOT / f"{case}.sh"
    code = code or case.split("/", 1)[0]
    report = lint_text(script.read_text(encoding="utf-8"), script, ["--extend-select", code])
    assert report.error is None, report.error
    return [d for d in report.diagnostics if d.code == code]


def severities(case: str, code: str | None = None) -> list[tuple[int, Severity]]:
    return [(d.span.line, d.severity) for d in findings(case, code)]


# ---- VL106: info unless the script's own known value is split ------------------------------

def test_vl106_caller_arguments_and_unknown_elements_are_info():
    got = dict(severities("VL106/bad_unquoted_arrays"))
    assert got[16] == Severity.INFO  # DATA: $HOME values, nothing known to split
    assert got[18] == Severity.INFO  # `$@`: only what a caller passes could split


def test_vl106_known_element_with_a_space_is_a_warning():
    got = dict(severities("VL106/bad_unquoted_arrays"))
    assert got[17] == Severity.WARNING  # "trainer.logger=['console', 'wandb']" splits in two


def test_vl106_brace_word_is_a_warning():
    assert {s for _, s in severities("VL106/bad_brace_expansion")} == {Severity.WARNING}


def test_vl106_sliced_arguments_are_info_and_keep_the_fix():
    (d,) = findings("VL106/bad_sliced_arguments")
    assert d.severity == Severity.INFO and d.fix is not None


# ---- VL209: a dead value the run uses anyway is redundant, not a wrong run ------------------

def test_vl209_grad_clip_equal_to_clip_grad_is_info():
    assert severities("VL209/bad_grad_clip_redundant_091") == [(22, Severity.INFO)]


def test_vl209_grad_clip_that_differs_is_a_warning():
    assert severities("VL209/bad_grad_clip_080") == [(11, Severity.WARNING)]


def test_vl209_legacy_reward_manager_other_than_the_default_is_a_warning():
    assert {s for _, s in severities("VL209/bad_legacy_reward_091")} == {Severity.WARNING}


def test_vl209_never_read_grad_offload_before_its_removal():
    assert severities("VL209/bad_grad_offload_never_read_090") == [
        (15, Severity.INFO), (25, Severity.WARNING)]  # param_offload True / False decides


# ---- VL204: renamed, removed, removed after verl had stopped reading it ---------------------

def _apply(text: str, diagnostics) -> str:
    data = text.encode()
    for e in sorted((e for d in diagnostics if d.fix for e in d.fix.edits),
                    key=lambda e: e.start, reverse=True):
        data = data[:e.start] + e.replacement.encode() + data[e.end:]
    return data.decode()


def _bash_ok(text: str) -> bool:
    import subprocess

    return subprocess.run(["bash", "-n"], input=text.encode(), capture_output=True).returncode == 0


def test_vl204_never_read_key_is_deleted_not_renamed():
    found = findings("VL204/bad_grad_offload_never_read_091")
    assert all("never had an effect" in d.message and "renamed" not in d.message for d in found)
    text = (ROOT / "VL204/bad_grad_offload_never_read_091.sh").read_text()
    fixed = _apply(text, found)
    assert "grad_offload" not in fixed.split("set -xeuo pipefail", 1)[1]
    assert fixed.rstrip().endswith("critic.megatron.param_offload=True")  # the chain still ends
    assert _bash_ok(fixed)
    path = ROOT / "VL204/fixed.sh"
    assert not [d for d in lint_text(fixed, path, ["--select", "VL204,VL104"]).diagnostics]


def test_vl204_new_key_already_set_deletes_the_old_only_when_equal():
    found = findings("VL204/bad_renamed_key_new_key_also_set")
    by_line = {d.span.line: d for d in found}
    assert by_line[12].fix is not None and by_line[15].fix is None  # 512 == 512; 3.0 != 2.0
    text = (ROOT / "VL204/bad_renamed_key_new_key_also_set.sh").read_text()
    fixed = _apply(text, found)
    assert "rollout.update_weights_bucket_megabytes" not in fixed and _bash_ok(fixed)
    assert "algorithm.rollout_is_threshold=3.0" in fixed


@pytest.mark.parametrize("tail", ["    c.d=2 \\\n    old.k=1\n", "    old.k=1 \\\n    c.d=2\n",
                                  "    c.d=2 old.k=1 \\\n    e.f=3\n"])
def test_vl204_delete_keeps_the_continuation_chain(tail):
    from types import SimpleNamespace

    from verl_lint.rules.overrides.renamed_override_key import _delete_word
    from verl_lint.source import SourceText

    text = "python3 -m verl.trainer.main_ppo \\\n" + tail + "echo done\n"
    src = SourceText(text.encode())
    at = text.index("old.k=1")
    ctx = SimpleNamespace(source=src, launch=SimpleNamespace(overrides=[]))
    fix = _delete_word(ctx, src.span(at, at + len("old.k=1")), "t")
    (e,) = fix.edits
    out = text[:e.start] + e.replacement + text[e.end:]
    assert "old.k" not in out

    def args(script: str) -> list[str]:  # what bash passes: the oracle
        import subprocess

        shim = "python3() { printf '<%s>' \"$@\"; echo; }\n"
        return subprocess.run(["bash", "-c", shim + script], capture_output=True,
                              text=True, check=True).stdout.splitlines()

    before, after = args(text), args(out)
    assert after == [before[0].replace("<old.k=1>", ""), "done"]


# ---- verl's own scripts at 0.9.1: the false classes are gone, the real ones stay ------------

CORPUS = Path(__file__).parent.parent.parent / "shared" / "corpus" / "verl-head"


@pytest.fixture(scope="module")
def corpus_findings():
    if not CORPUS.is_dir():
        pytest.skip("../shared/corpus/verl-head is not here")
    from verl_lint.cli.check import settings_for_args
    from verl_lint.engine import lint_source
    from verl_lint.source import SourceText

    out = []
    for path in sorted(CORPUS.rglob("*.sh")):
        settings = settings_for_args(["--verl-version", "0.9.1"], path)
        report = lint_source(SourceText(path.read_bytes(), str(path)), settings, path=str(path))
        out += [(path.relative_to(CORPUS).as_posix(), d) for d in report.diagnostics]
    return out


def _of(found, code, severity=None):
    return [(p, d) for p, d in found if d.code == code and (severity is None or
                                                             d.severity == severity)]


def test_corpus_false_classes_are_gone(corpus_findings):
    found = corpus_findings
    assert not _of(found, "VL105", Severity.WARNING)  # device-branch specialisations
    assert not _of(found, "VL106", Severity.WARNING)  # unquoted "$@": only a caller's words split
    assert not _of(found, "VL304")  # main_generation_server, veomni's $ACTOR_CONFIG
    assert not _of(found, "VL401")  # NPU MindSpeed THD; Megatron-Core 0.18 on 0.9.x
    assert all("legacy key" in d.message for _, d in _of(found, "VL209", Severity.WARNING))
    assert not [d for _, d in _of(found, "VL303") if "(verl default) is larger" in d.message]
    for _, d in _of(found, "VL204"):  # megatron.grad_offload: removed, never read; not renamed
        assert "never had an effect" in d.message and d.fix is not None


def test_corpus_real_findings_stay(corpus_findings):
    found = corpus_findings
    # EP×ETP×PP and rollout EP ≠ TP×DP (Megatron-Core; verl/workers/config/rollout.py:294-296)
    assert len(_of(found, "VL301")) >= 2 and len(_of(found, "VL302")) >= 2
    # per-rank mini batch 4 < micro 8 (verl/workers/engine/utils.py:124-127 @0.9.1)
    assert len(_of(found, "VL303")) >= 2
    # reward_model.reward_manager=dapo ignored by 0.9.1's main_ppo: the run uses naive
    assert len(_of(found, "VL209", Severity.WARNING)) >= 3
    # GSPO with token-level clip ratios; token-mean aggregation read from 0.9.1
    assert len(_of(found, "VL405", Severity.WARNING)) >= 3
    assert len(_of(found, "VL204")) >= 37  # the removed key makes Hydra refuse the launch
    assert len(_of(found, "VL209", Severity.INFO)) >= 17  # grad_clip=1.0: redundant


# ---- VL206: a scalar where a list belongs is a warning (verl's instantiate checks no types) ---

def test_vl206_scalar_for_a_list_is_a_warning_other_mismatches_errors():
    got = severities("VL206/bad_types")
    assert (16, Severity.WARNING) in got  # save_contents=model: the list is lost
    assert any(sev is Severity.ERROR for line, sev in got if line != 16)
