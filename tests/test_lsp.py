"""End to end: `verl-lint server` driven by a real LSP client over stdio (pytest-lsp)."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import pytest
import pytest_lsp
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities

ROOT = Path(__file__).resolve().parents[1]
BAD = (ROOT / "fixtures" / "corpus" / "bug_hydra_prefixes.sh").read_text()
SERVER = [sys.executable, "-c", "import sys; from verl_lint.cli import main; sys.exit(main())",
          "server", "--stdio"]
TIMEOUT = 60  # the first lint composes verl's config (cached on disk afterwards)

pytestmark = pytest.mark.asyncio(loop_scope="module")


@pytest.fixture(scope="module")
def workspace(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("ws")


@pytest_lsp.fixture(scope="module", config=ClientServerConfig(server_command=SERVER))
async def client(lsp_client: LanguageClient, workspace: Path):
    registrations: list[types.Registration] = []

    @lsp_client.feature(types.CLIENT_REGISTER_CAPABILITY)
    def register(params: types.RegistrationParams) -> None:
        registrations.extend(params.registrations)

    lsp_client.registrations = registrations
    await start(lsp_client, workspace, "visual-studio-code")
    yield
    await lsp_client.shutdown_session()


async def start(client: LanguageClient, workspace: Path, editor: str,
                **options: int) -> types.InitializeResult:
    """Initialize a session as `editor` (a pytest-lsp client name) would, in `workspace`."""
    return await client.initialize_session(types.InitializeParams(
        capabilities=client_capabilities(editor), root_uri=workspace.as_uri(),
        workspace_folders=[types.WorkspaceFolder(uri=workspace.as_uri(), name="ws")],
        initialization_options={"debounceMs": 20, **options}))


class Doc:
    """One open document: its text, version, and the diagnostics last published for it."""

    def __init__(self, client: LanguageClient, path: Path, text: str) -> None:
        self.client, self.path, self.uri, self.text, self.version = \
            client, path, path.as_uri(), text, 1
        path.write_text(text)

    async def open(self) -> list[types.Diagnostic]:
        self.client.text_document_did_open(types.DidOpenTextDocumentParams(
            text_document=types.TextDocumentItem(uri=self.uri, language_id="shellscript",
                                                 version=1, text=self.text)))
        return await self.diagnostics()

    async def diagnostics(self) -> list[types.Diagnostic]:
        async def wait():
            while True:
                await self.client.wait_for_notification(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
                if self.uri in self.client.diagnostics:
                    return self.client.diagnostics.pop(self.uri)

        if self.uri in self.client.diagnostics:
            return self.client.diagnostics.pop(self.uri)
        return await asyncio.wait_for(wait(), TIMEOUT)

    async def change(self, text: str) -> list[types.Diagnostic]:
        self.text, self.version = text, self.version + 1
        self.client.diagnostics.pop(self.uri, None)
        self.client.text_document_did_change(types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=self.uri,
                                                                version=self.version),
            content_changes=[types.TextDocumentContentChangeWholeDocument(text=text)]))
        return await self.diagnostics()

    def apply(self, edit: types.WorkspaceEdit) -> str:
        """The text after a WorkspaceEdit (as a client applies it: last edit first)."""
        if edit.document_changes:
            change = edit.document_changes[0]
            assert change.text_document.version == self.version
            edits = change.edits
        else:
            edits = edit.changes[self.uri]
        lines = self.text.splitlines(keepends=True)
        starts = [0]
        for line in lines:
            starts.append(starts[-1] + len(line))

        def index(pos: types.Position) -> int:  # the test texts are ASCII: UTF-16 == str index
            return starts[pos.line] + pos.character

        text = self.text
        for e in sorted(edits, key=lambda e: (e.range.start.line, e.range.start.character),
                        reverse=True):
            text = text[:index(e.range.start)] + e.new_text + text[index(e.range.end):]
        return text

    def position(self, needle: str, delta: int = 0) -> types.Position:
        at = self.text.index(needle) + delta
        line = self.text.count("\n", 0, at)
        return types.Position(line=line, character=at - (self.text.rfind("\n", 0, at) + 1))


def codes(diags: list[types.Diagnostic]) -> list[str]:
    return sorted(str(d.code) for d in diags)


async def test_open_publishes_diagnostics_with_docs_links(client: LanguageClient, workspace):
    doc = Doc(client, workspace / "open.sh", BAD)
    diags = await doc.open()
    append = [d for d in diags if d.code == "VL203"]
    assert append, codes(diags)
    d = append[0]
    assert d.range.start == doc.position("+actor_rollout_ref.rollout.n=8")  # the `+key` token
    assert d.source == "verl-lint"
    assert d.code_description.href.endswith("#vl203-append-existing-key")


async def test_quick_fix_gives_a_clean_relint(client: LanguageClient, workspace):
    doc = Doc(client, workspace / "fix.sh", BAD)
    diag = next(d for d in await doc.open() if d.code == "VL203")
    actions = await client.text_document_code_action_async(types.CodeActionParams(
        text_document=types.TextDocumentIdentifier(uri=doc.uri), range=diag.range,
        context=types.CodeActionContext(diagnostics=[diag])))
    titles = [a.title for a in actions]
    assert "Disable VL203 for this command" in titles and "Disable VL203 for this file" in titles
    fix = next(a for a in actions if a.is_preferred)
    fixed = doc.apply(fix.edit)
    assert "    actor_rollout_ref.rollout.n=8 \\\n" in fixed
    after = await doc.change(fixed)
    assert diag.range.start.line not in [d.range.start.line for d in after if d.code == "VL203"]
    assert codes(after).count("VL203") == 1  # the other `+` is another finding


async def test_fix_all_source_action_leaves_only_unfixable_findings(client: LanguageClient,
                                                                    workspace):
    doc = Doc(client, workspace / "fix_all.sh", BAD)
    before = await doc.open()
    actions = await client.text_document_code_action_async(types.CodeActionParams(
        text_document=types.TextDocumentIdentifier(uri=doc.uri),
        range=types.Range(start=types.Position(line=0, character=0),
                          end=types.Position(line=0, character=0)),
        context=types.CodeActionContext(diagnostics=[],
                                        only=[types.CodeActionKind.SourceFixAll])))
    assert [a.kind for a in actions] == ["source.fixAll.verl-lint"] and actions[0].edit is None
    resolved = await client.code_action_resolve_async(actions[0])
    after = await doc.change(doc.apply(resolved.edit))
    assert {"VL202", "VL203"} <= set(codes(before))
    assert "VL202" not in codes(after) and "VL203" not in codes(after)


async def test_disable_for_this_command_silences_the_finding(client: LanguageClient, workspace):
    doc = Doc(client, workspace / "disable.sh", BAD)
    diag = next(d for d in await doc.open() if d.code == "VL203")
    actions = await client.text_document_code_action_async(types.CodeActionParams(
        text_document=types.TextDocumentIdentifier(uri=doc.uri), range=diag.range,
        context=types.CodeActionContext(diagnostics=[diag])))
    action = next(a for a in actions if a.title == "Disable VL203 for this command")
    silenced = doc.apply(action.edit)
    assert "# verl-lint: disable=VL203\npython3 -m verl.trainer.main_ppo" in silenced
    after = await doc.change(silenced)
    assert "VL203" not in codes(after) and "VL002" not in codes(after)


async def test_hover_on_key_shows_effective_value_and_default(client: LanguageClient, workspace):
    doc = Doc(client, workspace / "hover.sh", BAD)
    await doc.open()
    hover = await client.text_document_hover_async(types.HoverParams(
        text_document=types.TextDocumentIdentifier(uri=doc.uri),
        position=doc.position("rollout.tensor_model_parallel_size=2", 3)))
    text = hover.contents.value
    assert "actor_rollout_ref.rollout.tensor_model_parallel_size" in text
    assert "`2`" in text and "set at line 18" in text
    assert "verl default:" in text


async def test_hover_on_suppression_code_shows_the_rule(client: LanguageClient, workspace):
    text = BAD.replace("python3 -m", "# verl-lint: disable=VL203\npython3 -m")
    doc = Doc(client, workspace / "hover_code.sh", text)
    await doc.open()
    hover = await client.text_document_hover_async(types.HoverParams(
        text_document=types.TextDocumentIdentifier(uri=doc.uri),
        position=doc.position("VL203", 2)))
    assert "append-existing-key" in hover.contents.value


async def test_completion_offers_next_key_segments(client: LanguageClient, workspace):
    text = BAD.replace("    trainer.nnodes=1 \\",
                       "    actor_rollout_ref.ro \\\n    trainer.nnodes=1 \\")
    doc = Doc(client, workspace / "complete.sh", text)
    await doc.open()
    result = await client.text_document_completion_async(types.CompletionParams(
        text_document=types.TextDocumentIdentifier(uri=doc.uri),
        position=doc.position("actor_rollout_ref.ro \\", len("actor_rollout_ref.ro"))))
    labels = [i.label for i in result.items]
    assert "rollout" in labels and "actor" not in labels
    item = result.items[labels.index("rollout")]
    assert item.text_edit.new_text == "rollout"


async def test_completion_adds_plus_for_dict_fields(client: LanguageClient, workspace):
    typed = "    actor_rollout_ref.rollout.engine_kwargs."
    text = BAD.replace("    trainer.nnodes=1 \\", typed + " \\\n    trainer.nnodes=1 \\")
    doc = Doc(client, workspace / "complete_plus.sh", text)
    await doc.open()
    result = await client.text_document_completion_async(types.CompletionParams(
        text_document=types.TextDocumentIdentifier(uri=doc.uri),
        position=doc.position(typed, len(typed))))
    item = next(i for i in result.items if i.label == "vllm")
    assert item.text_edit.new_text == "vllm."
    plus = item.additional_text_edits[0]
    assert plus.new_text == "+" and plus.range.start == doc.position(typed, 4)


async def test_settings_file_changes_are_picked_up(client: LanguageClient, workspace):
    watched = [r for r in client.registrations
               if r.method == types.WORKSPACE_DID_CHANGE_WATCHED_FILES]
    assert watched, "the server asks to be told about configuration file changes"
    sub = workspace / "configured"
    sub.mkdir()
    doc = Doc(client, sub / "run.sh", BAD)
    assert "VL203" in codes(await doc.open())
    config = sub / ".verl-lint.toml"
    config.write_text('ignore = ["VL203"]\n')
    client.workspace_did_change_watched_files(types.DidChangeWatchedFilesParams(changes=[
        types.FileEvent(uri=config.as_uri(), type=types.FileChangeType.Created)]))
    assert "VL203" not in codes(await doc.diagnostics())


async def test_columns_are_utf16(client: LanguageClient, workspace):
    text = BAD.replace("    +actor_rollout_ref.rollout.n=8 \\",
                       "    trainer.experiment_name='模型😀' +actor_rollout_ref.rollout.n=8 \\")
    doc = Doc(client, workspace / "utf16.sh", text)
    diag = next(d for d in await doc.open() if d.code == "VL203")
    line = text.splitlines()[diag.range.start.line]
    plus = line.index("+actor_rollout_ref.rollout.n")
    # the `+key` token; the emoji before it is two UTF-16 units
    assert diag.range.start.character == len(line[:plus].encode("utf-16-le")) // 2 == plus + 1


async def test_unused_suppression_quick_fix_removes_it(client: LanguageClient, workspace):
    text = BAD.replace("python3 -m", "# verl-lint: disable=VL108\npython3 -m")
    doc = Doc(client, workspace / "unused.sh", text)
    diag = next(d for d in await doc.open() if d.code == "VL002")
    assert list(diag.tags) == [types.DiagnosticTag.Unnecessary]
    actions = await client.text_document_code_action_async(types.CodeActionParams(
        text_document=types.TextDocumentIdentifier(uri=doc.uri), range=diag.range,
        context=types.CodeActionContext(diagnostics=[diag])))
    assert [a.title for a in actions if a.kind == types.CodeActionKind.QuickFix] == \
        ["Remove unused suppression"]
    after = await doc.change(doc.apply(actions[0].edit))
    assert doc.text == BAD and "VL002" not in codes(after)
