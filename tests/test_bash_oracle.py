"""The bash differential oracle (`python -m verl_lint.dev.bash_oracle`): verl-lint's reading of
every fixture and of verl's own scripts equals what bash passes, with recording shims."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from verl_lint.dev import bash_oracle
from verl_lint.evaluate.model import Unknown

ROOT = Path(__file__).parent.parent
CORPUS = ROOT.parent / "shared" / "corpus" / "verl-head"

pytestmark = pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")


def _check(paths) -> None:
    results = bash_oracle.check_paths([str(p) for p in paths])
    assert results
    bad = [r for r in results if r.disagreements]
    assert not bad, bash_oracle.report(bad)


def test_fixtures_agree_with_bash():
    _check([ROOT / "fixtures"])


@pytest.mark.skipif(not CORPUS.is_dir(), reason="../shared/corpus is not available")
def test_verl_corpus_agrees_with_bash():
    _check([CORPUS])


def _script(tmp_path: Path, text: str) -> Path:
    p = tmp_path / "run.sh"
    p.write_text(text)
    return p


def test_shims_record_argv_and_line(tmp_path):
    text = ("#!/bin/bash\nset -u\nX='a b'\nnohup python3 -m verl.trainer.main_ppo \\\n"
            "  k=\"$X\" 'q=[\"x\",1]' $'t=\\t' &\nwait\n")
    run = bash_oracle.run_bash(text.encode(), "run.sh", {}, "gpu")
    assert run.status == 0
    assert run.records == [(4, ["nohup", "python3", "-m", "verl.trainer.main_ppo", "k=a b",
                                'q=["x",1]', "t=\t"])]


def test_device_probe_answers_the_scenario(tmp_path):
    text = ("DEVICE=${DEVICE:-$(python3 -c 'import torch_npu' >/dev/null 2>&1 && echo npu || "
            "echo gpu)}\npython3 -m verl.trainer.main_ppo trainer.device=$DEVICE\n")
    for device in ("gpu", "npu"):
        run = bash_oracle.run_bash(text.encode(), "run.sh", {}, device)
        assert run.records[-1][1][-1] == f"trainer.device={device}"


def test_unbound_variable_stop_is_read(tmp_path):
    run = bash_oracle.run_bash(b"set -u\necho ok\necho \"$MISSING\"\n", "run.sh", {}, None)
    assert run.abort == ("MISSING", 3, "unbound variable")
    run = bash_oracle.run_bash(b': "${NEED:?set NEED}"\n', "run.sh", {}, None)
    assert run.abort == ("NEED", 1, "set NEED")


def test_a_misread_is_a_disagreement(tmp_path, monkeypatch):
    """The oracle fails when verl-lint's reading is wrong: feed it a wrong value."""
    path = _script(tmp_path, "python3 -m verl.trainer.main_ppo a=1 b=2\n")
    real = bash_oracle.read_script

    def wrong(text, p, pins, label):
        reading = real(text, p, pins, label)
        o = reading.launches[0].overrides[1]
        reading.launches[0].overrides[1] = type(o)(**{**{s: getattr(o, s) for s in
                                                        o.__slots__}, "text": "b=3"})
        return reading

    monkeypatch.setattr(bash_oracle, "read_script", wrong)
    result = bash_oracle.check_script(path)
    assert result.disagreements == 1
    assert "verl-lint `b=3`, bash `b=2` (wrong value)" in bash_oracle.report([result])


def test_match_semantics():
    u = Unknown(reason="x")
    assert bash_oracle.match(["a=1", u, ...], ["a=1", "b=2", "c=3", "d=4"])
    assert bash_oracle.match([..., "a=1"], ["a=1"])
    assert not bash_oracle.match(["a=1", u], ["a=1"])  # a missing word
    assert not bash_oracle.match(["a=1"], ["a=1", "b=2"])  # an extra word
    assert not bash_oracle.match(["b=2", "a=1"], ["a=1", "b=2"])  # order counts


def test_command_line_exit_status(tmp_path, capsys):
    ok = _script(tmp_path, "python3 -m verl.trainer.main_ppo a=1 \"$@\"\n")
    assert bash_oracle.main([str(ok)]) == 0
    out = capsys.readouterr().out
    assert "launch line 1 verl.trainer.main_ppo: agree: 1 overrides agree, 1 …" in out
