"""What an editor relies on, with Neovim's capabilities (no file watching, codeAction/resolve
for edits): `verl-lint server --stdio` driven over stdio by pytest-lsp."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest
import pytest_lsp
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient
from test_lsp import BAD, SERVER, Doc, codes, start, workspace  # noqa: F401 - fixture

pytestmark = pytest.mark.asyncio(loop_scope="module")


@pytest_lsp.fixture(scope="module", config=ClientServerConfig(server_command=SERVER))
async def client(lsp_client: LanguageClient, workspace: Path):
    lsp_client.init_result = await start(lsp_client, workspace, "neovim", configPollMs=100)
    yield
    await lsp_client.shutdown_session()


def identifier(doc: Doc) -> types.TextDocumentIdentifier:
    return types.TextDocumentIdentifier(uri=doc.uri)


async def hover_text(client: LanguageClient, doc: Doc, needle: str, delta: int = 0) -> str:
    hover = await client.text_document_hover_async(types.HoverParams(
        text_document=identifier(doc), position=doc.position(needle, delta)))
    return hover.contents.value


async def complete(client: LanguageClient, doc: Doc, needle: str) -> list[types.CompletionItem]:
    result = await client.text_document_completion_async(types.CompletionParams(
        text_document=identifier(doc), position=doc.position(needle, len(needle))))
    return result.items if result is not None else []


async def test_fix_all_is_resolvable(client: LanguageClient, workspace):
    """Neovim resolves an action without an edit only if the server says it can."""
    options = client.init_result.capabilities.code_action_provider
    assert options.resolve_provider is True
    doc = Doc(client, workspace / "fix_all.sh", BAD)
    await doc.open()
    actions = await client.text_document_code_action_async(types.CodeActionParams(
        text_document=identifier(doc), range=types.Range(start=types.Position(line=0, character=0),
                                                         end=types.Position(line=0, character=0)),
        context=types.CodeActionContext(diagnostics=[],
                                        only=[types.CodeActionKind.SourceFixAll])))
    (action,) = actions
    resolved = await client.code_action_resolve_async(action)
    assert "VL203" not in codes(await doc.change(doc.apply(resolved.edit)))


async def test_cursor_in_the_indentation_gets_the_line_fixes(client: LanguageClient, workspace):
    doc = Doc(client, workspace / "indent.sh", BAD)
    diag = next(d for d in await doc.open() if d.code == "VL203")
    line = diag.range.start.line
    assert diag.range.start.character == 4  # `    +actor_rollout_ref.rollout.n=8`
    cursor = types.Position(line=line, character=1)
    actions = await client.text_document_code_action_async(types.CodeActionParams(
        text_document=identifier(doc), range=types.Range(start=cursor, end=cursor),
        context=types.CodeActionContext(diagnostics=[])))
    assert "Disable VL203 for this command" in [a.title for a in actions]
    fix = next(a for a in actions if a.is_preferred)
    assert "    actor_rollout_ref.rollout.n=8 \\\n" in doc.apply(fix.edit)


async def test_code_actions_follow_the_diagnostics_the_client_sends(client: LanguageClient,
                                                                     workspace):
    """A client may send the line's diagnostics with a range elsewhere (a cursor past the end
    of a wrapped line): the sent diagnostics decide."""
    doc = Doc(client, workspace / "sent.sh", BAD)
    diag = next(d for d in await doc.open() if d.code == "VL203")
    elsewhere = types.Position(line=0, character=0)
    actions = await client.text_document_code_action_async(types.CodeActionParams(
        text_document=identifier(doc), range=types.Range(start=elsewhere, end=elsewhere),
        context=types.CodeActionContext(diagnostics=[diag],
                                        only=[types.CodeActionKind.QuickFix])))
    assert [a.diagnostics[0].range for a in actions] == [diag.range] * len(actions)
    assert "Disable VL203 for this command" in [a.title for a in actions]


async def wait_for(doc: Doc, predicate, timeout: float = 10) -> list[types.Diagnostic]:
    deadline = time.monotonic() + timeout
    while True:
        diags = await asyncio.wait_for(doc.diagnostics(), max(0.1, deadline - time.monotonic()))
        if predicate(diags):
            return diags


@pytest.mark.parametrize("name, text, edited", [
    (".verl-lint.toml", 'ignore = ["VL203"]\n', 'ignore = ["VL202"]  # edited\n'),
    ("pyproject.toml", '[tool.verl-lint]\nignore = ["VL203"]\n',
     '[project]\nname = "x"\n\n[tool.verl-lint]\nignore = ["VL202"]\n'),
])
async def test_config_created_or_edited_applies_without_a_watcher(client: LanguageClient,
                                                                  workspace, name, text, edited):
    """Neovim on Linux does not watch files: a config file written by any program still
    applies to the open document at once, and so does an edit of it."""
    sub = workspace / name.strip(".").replace(".", "_")
    sub.mkdir()
    doc = Doc(client, sub / "run.sh", BAD)
    assert {"VL202", "VL203"} <= set(codes(await doc.open()))
    (sub / name).write_text(text)
    after = await wait_for(doc, lambda d: "VL203" not in codes(d))
    assert "VL202" in codes(after)
    (sub / name).write_text(edited)
    after = await wait_for(doc, lambda d: "VL202" not in codes(d))
    assert "VL203" in codes(after)


async def test_hover_on_a_value_shows_the_effective_value(client: LanguageClient, workspace):
    doc = Doc(client, workspace / "hover_value.sh", BAD)
    await doc.open()
    text = await hover_text(client, doc, "tensor_model_parallel_size=2", len(
        "tensor_model_parallel_size="))
    assert "actor_rollout_ref.rollout.tensor_model_parallel_size" in text
    assert "Effective value: `2` (set at line 18)" in text


async def test_hover_on_an_unknown_key_says_so(client: LanguageClient, workspace):
    source = BAD.replace("    trainer.nnodes=1 \\",
                         "    actor_rollout_ref.rollout.no_such_knob=3 \\\n    trainer.nnodes=1 \\")
    doc = Doc(client, workspace / "hover_unknown.sh", source)
    await doc.open()
    text = await hover_text(client, doc, "no_such_knob", 2)
    assert "Unknown key" in text and "no_such_knob" in text
    assert "Effective value" not in text and "verl default" not in text


async def test_hover_names_the_verl_source_and_config_judged_against(client: LanguageClient,
                                                                     workspace):
    doc = Doc(client, workspace / "hover_source.sh", "# verl==0.8.0\n" + BAD)
    await doc.open()
    text = await hover_text(client, doc, "trainer.nnodes", 2)
    assert "Judged against verl 0.8.0 (bundled, script header)" in text
    assert "the release data bundled with verl-lint" in text
    assert "config `verl/trainer/config/ppo_trainer.yaml`" in text


async def test_completion_after_key_equals_offers_the_values(client: LanguageClient, workspace):
    source = BAD.replace("    trainer.nnodes=1 \\", "    algorithm.use_kl_in_reward= \\\n"
                         "    actor_rollout_ref.rollout.name=sg \\\n    trainer.nnodes=1 \\")
    doc = Doc(client, workspace / "complete_value.sh", source)
    await doc.open()
    items = await complete(client, doc, "use_kl_in_reward=")
    assert [i.label for i in items] == ["true", "false"]
    assert next(i for i in items if i.label == "false").preselect  # verl's default
    items = await complete(client, doc, "rollout.name=sg")
    assert [i.label for i in items] == ["sglang"]
    assert items[0].text_edit.new_text == "sglang"
    assert items[0].text_edit.range.start == doc.position("rollout.name=sg", len("rollout.name="))


async def test_no_completion_outside_a_launch(client: LanguageClient, workspace):
    source = BAD.replace("set -xeuo pipefail\n", "set -xeuo pipefail\n"
                         "echo actor_rollout_ref.ro\nNAME=algorithm.use_kl_in_reward=\n")
    doc = Doc(client, workspace / "complete_outside.sh", source)
    await doc.open()
    assert await complete(client, doc, "echo actor_rollout_ref.ro") == []
    assert await complete(client, doc, "NAME=algorithm.use_kl_in_reward=") == []


async def test_key_completions_carry_type_default_and_docs(client: LanguageClient, workspace):
    source = BAD.replace("    trainer.nnodes=1 \\",
                         "    actor_rollout_ref.rollout.tensor_mo \\\n    trainer.nnodes=1 \\")
    doc = Doc(client, workspace / "complete_docs.sh", source)
    await doc.open()
    items = await complete(client, doc, "actor_rollout_ref.rollout.tensor_mo")
    item = next(i for i in items if i.label == "tensor_model_parallel_size")
    assert item.detail == "int · default: 2"
    assert "TP size for rollout" in item.documentation.value
