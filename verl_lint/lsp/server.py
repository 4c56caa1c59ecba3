"""The language server (`verl-lint server`): pygls over stdio.

Diagnostics are the CLI's (same engine, same settings file); they are published on open and,
debounced, on change. Quick fixes come from each Diagnostic's Fix plus suppression directives;
hover and completion come from `Insight`.
"""

from __future__ import annotations

import asyncio
import logging
import os
from dataclasses import dataclass, field
from pathlib import Path

from lsprotocol import types
from pygls.lsp.server import LanguageServer
from pygls.uris import to_fs_path

from verl_lint import __version__
from verl_lint.diagnostics import Diagnostic
from verl_lint.fixes import (engine_lint, file_suppression_edit, fix_source,
                             suppression_edit)
from verl_lint.lsp.convert import Positions, overlaps, to_lsp_diagnostic, workspace_edit
from verl_lint.lsp.insight import Insight
from verl_lint.settings import CONFIG_FILES
from verl_lint.source import SourceText

log = logging.getLogger(__name__)

DEBOUNCE_SECONDS = 0.15
SHELL_LANGUAGES = {"shellscript", "sh", "bash"}
FIX_ALL_KIND = f"{types.CodeActionKind.SourceFixAll.value}.verl-lint"


def is_script_document(uri: str, language_id: str | None, text: str) -> bool:
    """Whether an open document is a shell script: by the editor's language, the file name, or
    the shebang test `check` uses for files without an extension."""
    from verl_lint.discovery import is_shell_shebang

    if language_id in SHELL_LANGUAGES or uri.endswith((".sh", ".bash")):
        return True
    return is_shell_shebang(text[:128].encode("utf-8"))


@dataclass
class DocState:
    """The last lint of one document version."""

    version: int | None
    path: str
    source: SourceText
    settings: object
    diagnostics: list[Diagnostic]
    chosen_version: str | None = None
    _insight: Insight | None = field(default=None, repr=False)

    @property
    def insight(self) -> Insight:
        if self._insight is None:
            self._insight = Insight(self.source, self.settings, self.chosen_version)
        return self._insight


class VerlLintServer(LanguageServer):
    def __init__(self) -> None:
        super().__init__("verl-lint", __version__)
        self.states: dict[str, DocState] = {}
        self.pending: dict[str, asyncio.Task] = {}
        self.debounce = DEBOUNCE_SECONDS
        self._settings: dict[tuple, object] = {}

    # --- settings --------------------------------------------------------------------------

    def settings_for(self, path: str):
        """The closest pyproject.toml/.verl-lint.toml's Settings, reloaded when that file
        changes: keyed by its path and mtime, so an edit is seen even by a client that does not
        report file changes (a new config file needs that report: see `config_changed`)."""
        from verl_lint.settings import Settings, SettingsError, clear_caches, find_config, \
            load_settings

        found = find_config(Path(path))
        try:
            stamp = found.stat().st_mtime_ns if found is not None else None
        except OSError:
            stamp = None
        key = (str(found), stamp)
        if key not in self._settings:
            clear_caches()  # settings.py caches parsed files by path; this one is new or changed
            try:
                self._settings[key] = load_settings(Path(path), {}, config_file=found)
            except (SettingsError, ValueError) as exc:
                self.window_show_message(types.ShowMessageParams(
                    type=types.MessageType.Error, message=f"verl-lint: {exc}"))
                self._settings[key] = Settings()
        return self._settings[key]

    def config_changed(self) -> None:
        """A configuration file appeared, changed or went away: reload and re-lint."""
        from verl_lint.settings import clear_caches

        clear_caches()
        self._settings.clear()
        self.relint_all()

    # --- linting ---------------------------------------------------------------------------

    def is_script(self, uri: str) -> bool:
        doc = self.workspace.get_text_document(uri)
        return is_script_document(uri, doc.language_id, doc.source)

    def document_path(self, uri: str) -> str:
        path = to_fs_path(uri)
        return path if path else os.path.join(os.getcwd(), uri.rsplit("/", 1)[-1])

    def lint(self, uri: str) -> DocState | None:
        """Lint the document's current text and publish the result."""
        from verl_lint.engine import lint_with_budget

        doc = self.workspace.get_text_document(uri)
        path = self.document_path(uri)
        source = SourceText(doc.source.encode("utf-8"), path)
        settings = self.settings_for(path)
        if settings.is_excluded(Path(path)):  # as `check --force-exclude` (pre-commit) does
            self.states.pop(uri, None)
            self.text_document_publish_diagnostics(types.PublishDiagnosticsParams(
                uri=uri, version=doc.version, diagnostics=[]))
            return None
        previous = self.states.get(uri)
        if previous is not None and previous.source.data == source.data and \
                previous.settings is settings:  # e.g. an undo back to the linted text
            previous.version = doc.version
            self.publish(uri, previous)
            return previous
        try:  # within the per-file time budget, as `check`
            report = lint_with_budget(source, settings, path=path)
        except Exception as exc:  # keep serving; the user sees why this file has no findings
            log.exception("lint failed for %s", uri)
            self.window_log_message(types.LogMessageParams(
                type=types.MessageType.Error, message=f"verl-lint failed on {path}: {exc}"))
            return None
        if report.error is not None:  # what `check` prints as an `error:` line
            self.window_log_message(types.LogMessageParams(
                type=types.MessageType.Error, message=f"verl-lint: {path}: {report.error}"))
        version = getattr(report, "version", None)
        state = DocState(version=doc.version, path=path, source=source, settings=settings,
                         diagnostics=list(report.diagnostics),
                         chosen_version=getattr(version, "version", None))
        self.states[uri] = state
        self.publish(uri, state)
        return state

    def publish(self, uri: str, state: DocState) -> None:
        pos = self.positions(state.source)
        self.text_document_publish_diagnostics(types.PublishDiagnosticsParams(
            uri=uri, version=state.version,
            diagnostics=[to_lsp_diagnostic(d, pos, uri) for d in state.diagnostics]))

    def current(self, uri: str) -> DocState | None:
        """The state for the document's current version (linting now if a change is pending)."""
        state = self.states.get(uri)
        doc = self.workspace.get_text_document(uri)
        if state is None or state.version != doc.version:
            task = self.pending.pop(uri, None)
            if task is not None:  # this lint makes the debounced one redundant
                task.cancel()
            state = self.lint(uri)
        return state

    def schedule(self, uri: str) -> None:
        task = self.pending.pop(uri, None)
        if task is not None:
            task.cancel()
        self.pending[uri] = asyncio.get_running_loop().create_task(self._later(uri))

    async def _later(self, uri: str) -> None:
        await asyncio.sleep(self.debounce)
        self.pending.pop(uri, None)
        if uri in self.workspace.text_documents:
            self.lint(uri)

    def relint_all(self) -> None:
        for uri in list(self.states):
            if uri in self.workspace.text_documents:
                self.lint(uri)

    def positions(self, source: SourceText) -> Positions:
        return Positions(source, self.workspace.position_encoding or "utf-16")


server = VerlLintServer()


@server.feature(types.INITIALIZE)
def initialize(ls: VerlLintServer, params: types.InitializeParams) -> None:
    options = params.initialization_options or {}
    if isinstance(options, dict) and "debounceMs" in options:
        ls.debounce = max(0.0, float(options["debounceMs"]) / 1000)


@server.feature(types.INITIALIZED)
async def initialized(ls: VerlLintServer, params: types.InitializedParams) -> None:
    caps = ls.client_capabilities.workspace
    watch = caps.did_change_watched_files if caps else None
    if watch is None or not watch.dynamic_registration:
        return  # configuration is still re-read when its mtime changes (settings_for)
    try:
        await ls.client_register_capability_async(types.RegistrationParams(registrations=[
            types.Registration(
                id="verl-lint-config", method=types.WORKSPACE_DID_CHANGE_WATCHED_FILES,
                register_options=types.DidChangeWatchedFilesRegistrationOptions(watchers=[
                    types.FileSystemWatcher(glob_pattern=f"**/{name}") for name in CONFIG_FILES
                ]),
            )
        ]))
    except Exception:  # the client declined; not fatal
        log.warning("could not register configuration file watchers", exc_info=True)


@server.feature(types.TEXT_DOCUMENT_DID_OPEN)
def did_open(ls: VerlLintServer, params: types.DidOpenTextDocumentParams) -> None:
    if ls.is_script(params.text_document.uri):
        ls.lint(params.text_document.uri)


@server.feature(types.TEXT_DOCUMENT_DID_CHANGE)
def did_change(ls: VerlLintServer, params: types.DidChangeTextDocumentParams) -> None:
    if ls.is_script(params.text_document.uri):
        ls.schedule(params.text_document.uri)


@server.feature(types.TEXT_DOCUMENT_DID_SAVE)
def did_save(ls: VerlLintServer, params: types.DidSaveTextDocumentParams) -> None:
    if params.text_document.uri.endswith(CONFIG_FILES):
        ls.config_changed()


@server.feature(types.TEXT_DOCUMENT_DID_CLOSE)
def did_close(ls: VerlLintServer, params: types.DidCloseTextDocumentParams) -> None:
    uri = params.text_document.uri
    task = ls.pending.pop(uri, None)
    if task is not None:
        task.cancel()
    if ls.states.pop(uri, None) is not None:
        ls.text_document_publish_diagnostics(types.PublishDiagnosticsParams(uri=uri,
                                                                            diagnostics=[]))


@server.feature(types.WORKSPACE_DID_CHANGE_WATCHED_FILES)
def did_change_watched(ls: VerlLintServer, params: types.DidChangeWatchedFilesParams) -> None:
    if any(change.uri.endswith(CONFIG_FILES) for change in params.changes):
        ls.config_changed()


# --- code actions ------------------------------------------------------------------------------


def _wanted(kind: str, only: list[str] | None) -> bool:
    return not only or any(kind == k or kind.startswith(f"{k}.") for k in only)


@server.feature(types.TEXT_DOCUMENT_CODE_ACTION, types.CodeActionOptions(
    code_action_kinds=[types.CodeActionKind.QuickFix, FIX_ALL_KIND]))
def code_action(ls: VerlLintServer, params: types.CodeActionParams):
    uri = params.text_document.uri
    state = ls.current(uri) if ls.is_script(uri) else None
    if state is None:
        return None
    only = [str(k.value if hasattr(k, "value") else k) for k in params.context.only or []]
    pos = ls.positions(state.source)
    actions: list[types.CodeAction] = []
    if _wanted(types.CodeActionKind.QuickFix.value, only):
        for diag in state.diagnostics:
            if overlaps(pos.range(diag.span.start, diag.span.end), params.range):
                actions.extend(_quick_fixes(state, diag, uri, pos))
    if _wanted(FIX_ALL_KIND, only) and any(
            d.fix is not None and d.fix.applicability == "safe" for d in state.diagnostics):
        action = types.CodeAction(title="verl-lint: fix all safe findings", kind=FIX_ALL_KIND,
                                  data={"uri": uri, "version": state.version})
        # fixing re-lints until stable: only pay for it when the user picks the action
        actions.append(action if _can_resolve(ls) else _resolve_fix_all(ls, action))
    return actions


def _can_resolve(ls: VerlLintServer) -> bool:
    text_doc = ls.client_capabilities.text_document
    support = text_doc.code_action.resolve_support if text_doc and text_doc.code_action else None
    return support is not None and "edit" in support.properties


@server.feature(types.CODE_ACTION_RESOLVE)
def resolve_code_action(ls: VerlLintServer, action: types.CodeAction) -> types.CodeAction:
    return _resolve_fix_all(ls, action) if action.kind == FIX_ALL_KIND else action


def _quick_fixes(state: DocState, diag: Diagnostic, uri: str, pos: Positions):
    lsp_diag = [to_lsp_diagnostic(diag, pos, uri)]

    def action(title: str, edits, preferred: bool = False) -> types.CodeAction:
        return types.CodeAction(title=title, kind=types.CodeActionKind.QuickFix,
                                diagnostics=lsp_diag, is_preferred=preferred or None,
                                edit=workspace_edit(uri, edits, pos, state.version))

    if diag.fix is not None:
        unsafe = " (unsafe)" if diag.fix.applicability == "unsafe" else ""
        yield action(f"{diag.fix.title}{unsafe}", diag.fix.edits,
                     preferred=diag.fix.applicability == "safe")
    if diag.code == "VL002":  # the fix above removes the unused directive
        return
    edit = suppression_edit(state.source, state.insight.model, diag.span, [diag.code])
    if edit is not None:
        yield action(f"Disable {diag.code} for this command", [edit])
    yield action(f"Disable {diag.code} for this file",
                 [file_suppression_edit(state.source, [diag.code])])


def _resolve_fix_all(ls: VerlLintServer, action: types.CodeAction) -> types.CodeAction:
    """Fill in the fix-all edit: the whole document replaced by its fixed text."""
    from verl_lint.diagnostics import Edit

    data = action.data if isinstance(action.data, dict) else {}
    uri = data.get("uri")
    state = ls.current(uri) if uri in ls.workspace.text_documents else None
    if state is None or state.version != data.get("version"):
        return action  # the document moved on; the client asks again
    result = fix_source(state.source, engine_lint(state.settings, state.path), path=state.path)
    if result.changed:
        whole = Edit(start=0, end=len(state.source.data),
                     replacement=result.fixed.decode("utf-8", "replace"))
        action.edit = workspace_edit(uri, [whole], ls.positions(state.source), state.version)
    return action


# --- hover and completion ----------------------------------------------------------------------


@server.feature(types.TEXT_DOCUMENT_HOVER)
def hover(ls: VerlLintServer, params: types.HoverParams) -> types.Hover | None:
    uri = params.text_document.uri
    state = ls.current(uri) if ls.is_script(uri) else None
    if state is None:
        return None
    pos = ls.positions(state.source)
    try:
        found = state.insight.hover(pos.offset(params.position))
    except Exception:  # pipeline stages still under construction must not kill the server
        log.exception("hover failed")
        return None
    if found is None:
        return None
    text, (start, end) = found
    return types.Hover(contents=types.MarkupContent(kind=types.MarkupKind.Markdown, value=text),
                       range=pos.range(start, end))


@server.feature(types.TEXT_DOCUMENT_COMPLETION,
                types.CompletionOptions(trigger_characters=[".", "+"]))
def completion(ls: VerlLintServer, params: types.CompletionParams):
    uri = params.text_document.uri
    state = ls.current(uri) if ls.is_script(uri) else None
    if state is None:
        return None
    pos = ls.positions(state.source)
    offset = pos.offset(params.position)
    try:
        found = state.insight.completions(offset)
    except Exception:
        log.exception("completion failed")
        return None
    if not found:
        return None
    items, seg_start = found
    word_start = state.insight.key_prefix(offset)[1]
    replace = pos.range(seg_start, offset)
    add_plus = [types.TextEdit(range=pos.range(word_start, word_start), new_text="+")]
    out = []
    for i, c in enumerate(items):
        if c.open_dict:
            detail = "dict: keys under it are added with +"
        else:
            detail = (f"default: {c.default!r}" if c.leaf else "group") + \
                (" (not in verl's YAML: added with +)" if c.needs_plus else "")
        out.append(types.CompletionItem(
            label=c.label, detail=detail, sort_text=f"{i:05d}",
            kind=types.CompletionItemKind.Field if c.leaf and not c.open_dict
            else types.CompletionItemKind.Module,
            text_edit=types.TextEdit(range=replace,
                                     new_text=c.label + ("." if c.open_dict else "")),
            additional_text_edits=add_plus if c.needs_plus else None))
    return types.CompletionList(is_incomplete=False, items=out)


def main() -> None:
    server.start_io()
