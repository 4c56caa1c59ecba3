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
from typing import Any
from urllib.parse import unquote

import attrs
from lsprotocol import types
from pygls.exceptions import JsonRpcInvalidParams
from pygls.lsp.server import LanguageServer
from pygls.protocol import LanguageServerProtocol
from pygls.uris import to_fs_path

from verl_lint import __version__
from verl_lint.diagnostics import Diagnostic
from verl_lint.fixes import (engine_lint, file_suppression_edit, fix_source,
                             suppression_edit)
from verl_lint.lsp.convert import Positions, to_lsp_diagnostic, workspace_edit
from verl_lint.lsp.insight import Insight
from verl_lint.settings import CONFIG_FILES
from verl_lint.source import SourceText

log = logging.getLogger(__name__)

DEBOUNCE_SECONDS = 0.15
CONFIG_POLL_SECONDS = 1.0  # how often configuration files are looked at (clients that cannot watch)
SHELL_LANGUAGES = {"shellscript", "sh", "bash"}
FIX_ALL_KIND = f"{types.CodeActionKind.SourceFixAll.value}.verl-lint"


def is_script_document(uri: str, language_id: str | None, text: str | bytes) -> bool:
    """Whether a document is a shell script: by the editor's language, the file name, or the
    shebang test `check` uses for files without an extension."""
    from verl_lint.discovery import is_shell_shebang

    if language_id in SHELL_LANGUAGES or uri.endswith((".sh", ".bash")):
        return True
    return is_shell_shebang(text[:128] if isinstance(text, bytes) else encode_text(text[:128]))


def encode_text(text: str) -> bytes:
    """A document's text as UTF-8. JSON can carry a lone surrogate (`"\\ud800"`), which UTF-8
    cannot: it becomes U+FFFD, one UTF-16 unit like the surrogate, so columns stay right."""
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace").encode("utf-8")


def config_stamp(path: str) -> tuple:
    """What the configuration of a file depends on: every configuration file that could apply
    (its folder and each parent), with its size and mtime. Cheap (a few stat calls), so it is
    taken on every lint and polled: a file created, edited or removed changes it."""
    stamp = []
    directory = os.path.dirname(os.path.abspath(path))
    while True:
        for name in CONFIG_FILES:
            try:
                info = os.stat(os.path.join(directory, name))
            except OSError:
                continue
            stamp.append((directory, name, info.st_mtime_ns, info.st_size, info.st_ino))
        parent = os.path.dirname(directory)
        if parent == directory:
            return tuple(stamp)
        directory = parent


@attrs.define
class _Rejected:
    """A request whose params do not fit its method's type (`line: -1`): answered -32602."""

    id: Any
    method: str
    jsonrpc: str = "2.0"


class Protocol(LanguageServerProtocol):
    """pygls drops a request whose params fail validation without an answer (the client then
    waits for ever); answer it with InvalidParams instead."""

    def structure_message(self, data: dict[str, Any]):
        try:
            return super().structure_message(data)
        except JsonRpcInvalidParams:
            if isinstance(data, dict) and "id" in data and "method" in data:
                return _Rejected(id=data["id"], method=str(data["method"]))
            raise

    def _execute_handler(self, msg_id, handler, callback, args=None, kwargs=None):
        """pygls keeps the future of every generator or async handler it runs under its id,
        and only a request's answer removes it: each notification (didChange runs pygls'
        generator handler) left one behind, ~1.8 KB a re-lint for ever. Forget it once done."""
        super()._execute_handler(msg_id, handler, callback, args, kwargs)
        future = self._request_futures.get(msg_id)
        if future is not None:
            def forget(done, futures=self._request_futures) -> None:
                if futures.get(msg_id) is done:
                    del futures[msg_id]

            future.add_done_callback(forget)

    def handle_message(self, message) -> None:
        if isinstance(message, _Rejected):
            self._send_response(message.id, error=types.ResponseError(
                code=JsonRpcInvalidParams.CODE,
                message=f"invalid params for {message.method}"))
            return
        super().handle_message(message)


@dataclass(frozen=True)
class Snapshot:
    """A document's text as the server sees it: the open buffer, or a safely read file."""

    data: bytes
    version: int | None
    language_id: str | None
    opened: bool


@dataclass
class DocState:
    """The last lint of one document version."""

    version: int | None
    path: str
    source: SourceText
    settings: object
    diagnostics: list[Diagnostic]
    chosen_version: object = None  # the VersionChoice the lint used
    stamp: tuple = ()  # config_stamp() when linted
    _insight: Insight | None = field(default=None, repr=False)

    @property
    def insight(self) -> Insight:
        if self._insight is None:
            self._insight = Insight(self.source, self.settings, self.chosen_version)
        return self._insight


class VerlLintServer(LanguageServer):
    def __init__(self) -> None:
        super().__init__("verl-lint", __version__, protocol_cls=Protocol)
        self.states: dict[str, DocState] = {}
        self.pending: dict[str, asyncio.Task] = {}
        self.debounce = DEBOUNCE_SECONDS
        self.poll = CONFIG_POLL_SECONDS
        self._settings: dict[tuple, object] = {}
        self._poller: asyncio.Task | None = None  # held: the loop keeps only weak references

    # --- settings --------------------------------------------------------------------------

    def settings_for(self, path: str, stamp: tuple):
        """The closest pyproject.toml/.verl-lint.toml's Settings, for this `config_stamp`: a
        configuration file created, edited or removed gives a new stamp and a fresh load."""
        from verl_lint.settings import Settings, SettingsError, clear_caches, find_config, \
            load_settings

        key = (os.path.dirname(os.path.abspath(path)), stamp)
        if key not in self._settings:
            clear_caches()  # settings.py caches discovered and parsed files by path
            if len(self._settings) > 64:  # old stamps of edited files: never asked again
                self._settings.clear()
            try:
                self._settings[key] = load_settings(Path(path), {},
                                                    config_file=find_config(Path(path)))
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

    async def poll_config(self) -> None:
        """Re-lint an open document whose configuration files changed. Editors that watch
        files report it sooner (workspace/didChangeWatchedFiles); Neovim on Linux does not
        watch, and a file written by another program is not saved in the editor."""
        while True:
            await asyncio.sleep(self.poll)
            for uri, state in list(self.states.items()):
                try:
                    if self.states.get(uri) is state and self.opened(uri) and \
                            config_stamp(state.path) != state.stamp:
                        self.lint(uri)
                except Exception:  # the poll must outlive one bad document
                    log.exception("re-lint after a configuration change failed for %s", uri)

    # --- documents -------------------------------------------------------------------------

    def opened(self, uri: str) -> bool:
        return unquote(uri) in self.workspace.text_documents

    def snapshot(self, uri: str) -> Snapshot | None:
        """The open document's text; for a document the client did not open, the file's, if it
        is a regular file within `check`'s size limit (never `get_text_document`, which reads
        any path whole, a FIFO or /dev/zero included)."""
        doc = self.workspace.text_documents.get(unquote(uri))
        if doc is not None:
            return Snapshot(encode_text(doc.source), doc.version, doc.language_id, True)
        from verl_lint.fileio import read_bounded

        path = to_fs_path(uri) if uri.startswith("file:") else None
        data = read_bounded(Path(path))[0] if path else None  # as `check` reads files
        return None if data is None else Snapshot(data, None, None, False)

    def document_path(self, uri: str) -> str:
        path = to_fs_path(uri)
        return path if path else os.path.join(os.getcwd(), uri.rsplit("/", 1)[-1])

    # --- linting ---------------------------------------------------------------------------

    def lint(self, uri: str, snap: Snapshot | None = None) -> DocState | None:
        """Lint the document's current text; an open document's result is kept and published."""
        from verl_lint.engine import lint_with_budget

        snap = snap or self.snapshot(uri)
        if snap is None or not is_script_document(uri, snap.language_id, snap.data):
            return None
        path = self.document_path(uri)
        source = SourceText(snap.data, path)
        stamp = config_stamp(path)
        settings = self.settings_for(path, stamp)
        if settings.is_excluded(Path(path)):  # as `check --force-exclude` (pre-commit) does
            if snap.opened:
                self.states.pop(uri, None)
                self.text_document_publish_diagnostics(types.PublishDiagnosticsParams(
                    uri=uri, version=snap.version, diagnostics=[]))
            return None
        previous = self.states.get(uri)
        if previous is not None and previous.source.data == source.data and \
                previous.settings is settings:  # e.g. an undo back to the linted text
            previous.version, previous.stamp = snap.version, stamp
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
        state = DocState(version=snap.version, path=path, source=source, settings=settings,
                         diagnostics=list(report.diagnostics), stamp=stamp,
                         chosen_version=getattr(report, "version", None))
        if snap.opened:  # a file the client did not open is linted per request, not kept
            self.states[uri] = state
            self.publish(uri, state)
        return state

    def publish(self, uri: str, state: DocState) -> None:
        pos = self.positions(state.source)
        self.text_document_publish_diagnostics(types.PublishDiagnosticsParams(
            uri=uri, version=state.version,
            diagnostics=[to_lsp_diagnostic(d, pos, uri) for d in state.diagnostics]))

    def current(self, uri: str) -> DocState | None:
        """The state for the document's current text (linting now if a change is pending)."""
        state = self.states.get(uri)
        doc = self.workspace.text_documents.get(unquote(uri))
        if state is not None and doc is not None and state.version == doc.version:
            return state
        task = self.pending.pop(uri, None)
        if task is not None:  # this lint makes the debounced one redundant
            task.cancel()
        return self.lint(uri)

    def schedule(self, uri: str) -> None:
        task = self.pending.pop(uri, None)
        if task is not None:
            task.cancel()
        self.pending[uri] = asyncio.get_running_loop().create_task(self._later(uri))

    async def _later(self, uri: str) -> None:
        await asyncio.sleep(self.debounce)
        self.pending.pop(uri, None)
        if self.opened(uri):
            self.lint(uri)

    def relint_all(self) -> None:
        for uri in list(self.states):
            if self.opened(uri):
                self.lint(uri)

    def positions(self, source: SourceText) -> Positions:
        return Positions(source, self.workspace.position_encoding or "utf-16")


server = VerlLintServer()


def _initialization_option(params: types.InitializeParams, name: str) -> float | None:
    options = params.initialization_options
    value = options.get(name) if isinstance(options, dict) else None
    return max(0.0, float(value) / 1000) if isinstance(value, (int, float)) else None


@server.feature(types.INITIALIZE)
def initialize(ls: VerlLintServer, params: types.InitializeParams) -> None:
    debounce = _initialization_option(params, "debounceMs")
    ls.debounce = ls.debounce if debounce is None else debounce
    poll = _initialization_option(params, "configPollMs")
    ls.poll = ls.poll if poll is None else max(poll, 0.05)


@server.feature(types.INITIALIZED)
async def initialized(ls: VerlLintServer, params: types.InitializedParams) -> None:
    ls._poller = asyncio.get_running_loop().create_task(ls.poll_config())
    caps = ls.client_capabilities.workspace
    watch = caps.did_change_watched_files if caps else None
    if watch is None or not watch.dynamic_registration:
        return  # the poll alone sees configuration changes
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
    ls.lint(params.text_document.uri)


@server.feature(types.TEXT_DOCUMENT_DID_CHANGE)
def did_change(ls: VerlLintServer, params: types.DidChangeTextDocumentParams) -> None:
    uri = params.text_document.uri
    doc = ls.workspace.text_documents.get(unquote(uri))
    if doc is not None and is_script_document(uri, doc.language_id, doc.source):
        ls.schedule(uri)


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
    code_action_kinds=[types.CodeActionKind.QuickFix, FIX_ALL_KIND], resolve_provider=True))
def code_action(ls: VerlLintServer, params: types.CodeActionParams):
    uri = params.text_document.uri
    state = ls.current(uri)
    if state is None:
        return None
    only = [str(k.value if hasattr(k, "value") else k) for k in params.context.only or []]
    pos = ls.positions(state.source)
    actions: list[types.CodeAction] = []
    if _wanted(types.CodeActionKind.QuickFix.value, only):
        for diag in _asked_about(state, params, pos):
            actions.extend(_quick_fixes(state, diag, uri, pos))
    if _wanted(FIX_ALL_KIND, only) and any(
            d.fix is not None and d.fix.applicability == "safe" for d in state.diagnostics):
        action = types.CodeAction(title="verl-lint: fix all safe findings", kind=FIX_ALL_KIND,
                                  data={"uri": uri, "version": state.version})
        # fixing re-lints until stable: only pay for it when the user picks the action
        actions.append(action if _can_resolve(ls) else _resolve_fix_all(ls, action))
    return actions


def _asked_about(state: DocState, params: types.CodeActionParams, pos: Positions):
    """The findings a code action request is about: those the client sends in its context
    (matched by code and range), and every finding on a line the request's range touches, so a
    cursor anywhere on the line, its indentation too, gets the line's fixes."""
    def where(r: types.Range) -> tuple[int, int, int, int]:
        return (r.start.line, r.start.character, r.end.line, r.end.character)

    sent = {(str(d.code), where(d.range)) for d in params.context.diagnostics
            if d.source in (None, "verl-lint")}
    first, last = params.range.start.line, params.range.end.line
    for diag in state.diagnostics:
        r = pos.range(diag.span.start, diag.span.end)
        if (diag.code, where(r)) in sent or (r.start.line <= last and first <= r.end.line):
            yield diag


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
    state = ls.current(uri) if isinstance(uri, str) and ls.opened(uri) else None
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
    state = ls.current(uri)
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
                types.CompletionOptions(trigger_characters=[".", "+", "="]))
def completion(ls: VerlLintServer, params: types.CompletionParams):
    uri = params.text_document.uri
    state = ls.current(uri)
    if state is None:
        return None
    pos = ls.positions(state.source)
    offset = pos.offset(params.position)
    try:
        items = _value_items(state, pos, offset) or _key_items(state, pos, offset)
    except Exception:
        log.exception("completion failed")
        return None
    return types.CompletionList(is_incomplete=False, items=items) if items else None


def _value_items(state: DocState, pos: Positions, offset: int) -> list[types.CompletionItem]:
    found = state.insight.value_completions(offset)
    if not found:
        return []
    values, start = found
    replace = pos.range(start, offset)
    return [types.CompletionItem(
        label=v.label, detail=v.detail + (" · verl default" if v.default else ""),
        kind=types.CompletionItemKind.EnumMember, sort_text=f"{not v.default:d}{i:05d}",
        preselect=v.default or None, text_edit=types.TextEdit(range=replace, new_text=v.label))
        for i, v in enumerate(values)]


def _key_items(state: DocState, pos: Positions, offset: int) -> list[types.CompletionItem]:
    found = state.insight.completions(offset)
    if not found:
        return []
    keys, seg_start = found
    word_start = state.insight.key_prefix(offset)[1]
    replace = pos.range(seg_start, offset)
    add_plus = [types.TextEdit(range=pos.range(word_start, word_start), new_text="+")]
    out = []
    for i, c in enumerate(keys):
        if c.open_dict:
            detail = "dict: keys under it are added with +"
        else:
            detail = (f"{c.type} · default: {c.default!r}" if c.leaf else "group") + \
                (" (not in verl's YAML: added with +)" if c.needs_plus else "")
        out.append(types.CompletionItem(
            label=c.label, detail=detail, sort_text=f"{i:05d}",
            documentation=types.MarkupContent(kind=types.MarkupKind.Markdown,
                                              value=f"`{c.key}`" + (f"\n\n{c.doc}" if c.doc
                                                                    else "")),
            kind=types.CompletionItemKind.Field if c.leaf and not c.open_dict
            else types.CompletionItemKind.Module,
            text_edit=types.TextEdit(range=replace,
                                     new_text=c.label + ("." if c.open_dict else "")),
            additional_text_edits=add_plus if c.needs_plus else None))
    return out


def main() -> None:
    server.start_io()
