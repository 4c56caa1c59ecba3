"""The server's lint step in process, without a client: what it publishes and what it logs
(with the fake rules of test_engine)."""

from __future__ import annotations

import functools
import inspect
import time

from lsprotocol import types
from test_engine import fakes  # noqa: F401 - fixture

from verl_lint import engine
from verl_lint.lsp.server import VerlLintServer
from verl_lint.settings import clear_caches


def lint(tmp_path, text: str):
    """Lint `text` as run.sh in a project selecting only the fake rules: (published diagnostic
    codes, logged messages)."""
    clear_caches()
    (tmp_path / ".verl-lint.toml").write_text('select = ["VL9"]\n')
    uri = (tmp_path / "run.sh").as_uri()
    ls = VerlLintServer()
    init = ls.protocol.lsp_initialize(types.InitializeParams(
        capabilities=types.ClientCapabilities()))
    if inspect.isgenerator(init):  # pygls 2 runs its handlers as generators
        list(init)
    ls.workspace.put_text_document(types.TextDocumentItem(uri=uri, language_id="shellscript",
                                                          version=1, text=text))
    sent: list = []
    ls.text_document_publish_diagnostics = sent.append
    ls.window_log_message = sent.append
    ls.lint(uri)
    clear_caches()
    (published,) = [p for p in sent if isinstance(p, types.PublishDiagnosticsParams)]
    logged = [p.message for p in sent if isinstance(p, types.LogMessageParams)]
    return [str(d.code) for d in published.diagnostics], logged


def test_what_the_engine_could_not_lint_is_logged(fakes, tmp_path, monkeypatch):
    """As `check` prints an `error:` line: a crashing rule's error reaches the editor's log,
    and the other rules' findings are still published."""
    monkeypatch.delenv("VERL_LINT_DEBUG", raising=False)
    codes, logged = lint(tmp_path, "bad\ncrash\n")
    assert codes == ["VL901"]
    assert any("internal error in rule VL903 (fake-crash)" in m for m in logged), logged


def test_a_file_over_the_time_budget_does_not_hang_the_server(fakes, tmp_path, monkeypatch):
    monkeypatch.setattr(engine, "lint_with_budget",
                        functools.partial(engine.lint_with_budget, timeout=0.2))
    started = time.monotonic()
    codes, logged = lint(tmp_path, "slow\n")
    assert time.monotonic() - started < 4
    assert codes == [] and any("time budget" in m for m in logged), logged
