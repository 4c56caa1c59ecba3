r"""tree-sitter-bash → ScriptModel.

tree-sitter-bash rejects some scripts bash accepts (a file ending in a `\` continuation,
`${X:-["a"]}`, `${oc.env:HOME}`, `$(( (a + b) * 2 ))` inside `${…:-…}`, the `<>` redirect, the
`` `# comment` `` idiom in a continued command). When the first parse has errors, those spans are
rewritten to text of the same byte length (see `mask`) and the script is parsed again, so every
offset still points into the original text. Words are always lexed from the original bytes.
"""

from __future__ import annotations

import re
import signal
import threading
import time
from bisect import bisect_right
from dataclasses import replace
from functools import lru_cache
from typing import NamedTuple

from verl_lint.records import positional
from verl_lint.shell import patterns
from verl_lint.shell.lexer import (
    BT, DOL, DQ, NL, SQ, WordLexer, arithmetic_assignments, skip_brace, skip_dollar,
    skip_double, skip_escaped, skip_parens, skip_single,
)
from verl_lint.shell.model import (
    ArrayLiteral, Assignment, BranchRef, Case, CaseItem, Command, Comment, Condition, Function,
    Group, Heredoc, If, IfBranch, Loop, Other, ParseError, Piece, Pipeline, Redirect,
    ScriptModel, SetOptions, Unset, Word,
)
from verl_lint.source import SourceText, Span, SpanFactory

_SET_LETTERS = {"e": "errexit", "u": "nounset", "x": "xtrace", "v": "verbose", "f": "noglob",
                "a": "allexport", "C": "noclobber", "n": "noexec", "h": "hashall",
                "B": "braceexpand", "H": "histexpand", "P": "physical", "T": "functrace",
                "E": "errtrace", "b": "notify", "k": "keyword", "m": "monitor", "t": "onecmd"}
_SIMPLE_BRACE = re.compile(rb"[A-Za-z_][A-Za-z0-9_]*|[0-9]+|[@*#?$!-]")
_HEREDOC_DELIM = re.compile(rb"<<(-?)[ \t]*(?:'([^'\n]*)'|\"([^\"\n]*)\"|\\?([^\s;&|<>()]+))")
_DECLARERS = ("export", "local", "declare", "typeset", "readonly")


@lru_cache(maxsize=1)
def _parser():
    """One tree-sitter Parser per process."""
    from tree_sitter import Language, Parser

    return Parser(Language(_bash_grammar()))


@lru_cache(maxsize=1)
def _assignment_fields() -> tuple[int, int]:
    """tree-sitter-bash's ids of the `name` and `value` fields: a child by field id costs a
    quarter less than by name (no name to look up among the grammar's), twice an assignment."""
    language = _parser().language
    return language.field_id_for_name("name"), language.field_id_for_name("value")


def _bash_grammar():
    """tree-sitter-bash's grammar, from its compiled module loaded alone: the package's
    `__init__` imports `importlib.resources` (3–8 ms of CPU, the costliest import of a one-file
    run) for the query files verl-lint never reads."""
    import importlib.machinery
    import importlib.util

    try:
        package = importlib.util.find_spec("tree_sitter_bash")
        spec = importlib.machinery.PathFinder.find_spec("tree_sitter_bash._binding",
                                                        package.submodule_search_locations)
        binding = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(binding)
    except Exception:  # laid out otherwise (a frozen app, another version): the plain import
        import tree_sitter_bash as binding
    return binding.language()


_ALWAYS_IN_TIME = 16 * 1024  # bytes (verl's largest launch script: 15.4 KB)


def _parse(parser, data: bytes):
    """`parser.parse(data)` that stops when the per-file budget's alarm is due (None then).

    tree-sitter's C parse holds the GIL, so a SIGALRM handler cannot run during it (a 320 KB
    mutated script parses for 12 s). When an alarm is pending (ITIMER_REAL, the main thread:
    `engine.file_budget`), parse through a progress callback that cancels the parse once the
    alarm is due. SIGALRM is blocked meanwhile so its Python handler never runs inside the
    binding's callbacks (a SystemError there); unblocking delivers it, and the budget's own
    LintTimeout is raised at that point like anywhere else.

    A script under `_ALWAYS_IN_TIME` bytes parses as it is: the callback's Python calls were
    ≈ 70,000 instructions of a verl script's parse, and the slowest input known parses in a
    tenth of a second at that size (an array where a case pattern belongs: tree-sitter-bash's
    error recovery is quadratic in its length, 12 s at 250 KB). Past the budget then, the
    alarm raises when the parse returns."""
    due = _alarm_due() if len(data) >= _ALWAYS_IN_TIME else None
    if due is None:
        return parser.parse(data)
    blocked = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGALRM})
    try:
        tree = _parse_until(parser, data, due)
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, blocked)
    return tree


def _parse_until(parser, data: bytes, due: float):
    try:
        if not hasattr(parser, "timeout_micros"):  # py-tree-sitter 0.25+: a progress callback
            return parser.parse(_reader(data),
                                progress_callback=lambda _at, _error: time.monotonic() >= due)
        parser.timeout_micros = max(1, int((due - time.monotonic()) * 1e6))  # 0.23, 0.24
        try:
            return parser.parse(data)
        finally:
            parser.timeout_micros = 0
    except ValueError:  # the time is up ("Parsing failed"): the next parse must not resume it
        parser.reset()
        return None


_CHUNK = 4096


def _reader(data: bytes):
    """A read callback for `data`. The binding keeps every object it returns until the parse
    ends, and tree-sitter's error recovery re-reads a 320 KB file some 40,000 times a second:
    fresh 64 KB slices grew to 500 MB in 3 s (16 GB in a fuzz run), so reads at a chunk boundary
    (nearly all) return the same prepared chunks. A memoryview is never released (368 B a
    parse)."""
    chunks = [data[i:i + _CHUNK] for i in range(0, len(data), _CHUNK)]

    def read(at: int, _point) -> bytes:
        k, off = divmod(at, _CHUNK)
        if k >= len(chunks):
            return b""
        return chunks[k][off:] if off else chunks[k]
    return read


def _alarm_due() -> float | None:
    """The monotonic time the pending real-time alarm fires, if one is set for this thread."""
    if not hasattr(signal, "pthread_sigmask") or \
            threading.current_thread() is not threading.main_thread():
        return None
    delay = signal.getitimer(signal.ITIMER_REAL)[0]
    # a millisecond late: when the parse is cancelled the signal is already pending
    return time.monotonic() + delay + 0.001 if delay > 0 else None


def _dec(b: bytes) -> str:
    return b.decode("utf-8", errors="replace")


# ---------------------------------------------------------------------------------------------
# same-length rewrites for what tree-sitter-bash cannot parse


class Lifted(NamedTuple):
    """A here-document `mask` blanked out of the text though a command reads it: its operator
    [start, operator_end), its body [body_start, body_end) and its end delimiter (to `end`)."""

    start: int
    operator_end: int
    body_start: int
    body_end: int
    end: int


def masked(data: bytes) -> tuple[bytes, list[Lifted]]:
    """Rewrite spans tree-sitter-bash mis-parses into same-length text it parses the same way
    bash does: `${<complex>}` → `${____}`, `` `# …` `` → spaces, `<>` → `< `, the string
    comparison `\\<`/`\\>` of a test → `-a` (another binary operator), a trailing
    `\\` continuation at the end of the file → space, a here-document with no command
    (`<<EOF … EOF` on lines of its own, a block-comment idiom; bash reads and drops it) →
    blank lines, and a here-document with more of the command line after it → blanks; with
    the here-documents lifted out of commands (`parse_script` gives them back to their
    commands).

    A here-document's body starts at the next newline, whatever the rest of its line holds.
    tree-sitter-bash reads that rest its own way: a compound command that goes on after the body
    is a syntax error (`cmd <<'PY' || {⏎…⏎PY⏎  exit 1⏎}`, `if ! cmd <<'PY'; then⏎…`), so are
    `cat <<EOF; cmd` and `cmd <<EOF &`, and what follows `&&`, `||` or `|` is dropped from the
    tree. Blanking the operator, the body and the end delimiter leaves a line it reads as bash
    does."""
    out = bytearray(data)
    lifted: list[Lifted] = []
    _mask_range(data, out, 0, len(data), lifted)
    tail = data.rstrip()
    if tail.endswith(b"\\") and not tail.endswith(b"\\\\"):
        out[len(tail) - 1] = 0x20
    return bytes(out), lifted


# what `_mask_range` looks at: quotes, expansions, escapes, comments, here-documents, newlines
# and the bytes after which a word starts
_MASK_PLAIN = re.compile(rb"[^\n\\'\"$`#< \t;&|()]+")


def _mask_range(data: bytes, out: bytearray, i: int, end: int,
                lifted: list[Lifted] | None = None) -> None:
    """`lifted`: where to record the here-documents blanked for what follows them on their line
    (only at the top level: a `$(…)`'s commands are not statements of the model)."""
    pending: list[tuple] = []  # heredocs waiting for the next newline
    word_start = True
    while i < end:
        m = _MASK_PLAIN.match(data, i, end)
        if m is not None:  # bytes the loop would step over one by one, ending no word
            i = m.end()
            word_start = False
            if i >= end:
                break
        c = data[i]
        if c == NL:
            i += 1
            word_start = True
            for delim, strip, expands, op_start, op_end, bare, lift in pending:
                body_start = i
                i = _skip_heredoc_body(data, out, i, end, delim, strip, expands)
                if i is None:  # no end delimiter: bash reads to the end of the file (a warning)
                    out[op_start:op_end] = b" " * (op_end - op_start)
                    _blank(data, out, body_start, end)
                    i = end
                elif bare or lift:
                    out[op_start:op_end] = b" " * (op_end - op_start)
                    _blank(data, out, body_start, i)
                    if lift:
                        stop = i - 1 if data[i - 1:i] == b"\n" else i
                        body_end = max(body_start, data.rfind(b"\n", body_start, stop) + 1)
                        lifted.append(Lifted(op_start, op_end, body_start, body_end, stop))
            pending.clear()
            continue
        if c == ord("\\"):
            if data[i + 1:i + 2] in (b"<", b">") and data[i - 1:i] in (b" ", b"\t") and \
                    data[i + 2:i + 3] in (b" ", b"\t"):
                out[i:i + 2] = b"-a"  # `[ "$V" \< 0.9 ]`: an operator tree-sitter-bash rejects
            i += 2
            word_start = False
            continue
        if c == SQ:
            i = skip_single(data, i, end)
        elif c == DQ:
            i = skip_double(data, i, end, lambda d, j, e, dq: _mask_dollar(d, out, j, e, dq))
        elif c == DOL:
            i = _mask_dollar(data, out, i, end, False)
        elif c == BT:
            j = skip_escaped(data, i, end)
            if data[i + 1:i + 2] == b"#" and data[j - 1:j] == b"`" and j - 1 > i:
                out[i:j] = b" " * (j - i)
            i = j
        elif c == ord("#") and word_start:
            nl = data.find(b"\n", i, end)
            i = end if nl < 0 else nl
            continue
        elif c == ord("<"):
            m = _HEREDOC_DELIM.match(data, i)
            if m and data[i + 2:i + 3] != b"<" and data[i - 1:i] != b"<":
                delim = next(g for g in m.groups()[1:] if g is not None)
                expands = m.group(4) is not None and b"\\" not in m.group(0)
                lift = lifted is not None and _line_goes_on(data, m.end(), end)
                pending.append((delim, m.group(1) == b"-", expands, i, m.end(),
                                _alone_on_its_line(data, i, m.end()), lift))
                i = m.end()
            elif data[i + 1:i + 2] == b">":
                out[i + 1] = 0x20
                i += 2
            else:
                i += 1
        else:
            i += 1
        word_start = c in b" \t;&|()"
    return None


def _line_goes_on(data: bytes, at: int, end: int) -> bool:
    """The line holds more than blanks and a comment after `at`."""
    nl = data.find(b"\n", at, end)
    rest = data[at:end if nl < 0 else nl].strip()
    return rest != b"" and not rest.startswith(b"#")


def _alone_on_its_line(data: bytes, start: int, end: int) -> bool:
    """Bytes [start, end) are all of their line, and the line before does not continue
    into it with a `\\`."""
    line_start = data.rfind(b"\n", 0, start) + 1
    line_end = data.find(b"\n", end)
    if data[line_start:start].strip(b" \t") or \
            data[end:len(data) if line_end < 0 else line_end].strip():
        return False
    prev_start = data.rfind(b"\n", 0, max(line_start - 1, 0)) + 1
    return not data[prev_start:max(line_start - 1, 0)].rstrip(b" \t\r").endswith(b"\\")


def _blank(data: bytes, out: bytearray, start: int, end: int) -> None:
    """Spaces for every byte of [start, end) but the newlines (lines and offsets stay)."""
    out[start:end] = bytes(0x20 if b != NL else NL for b in data[start:end])


def _skip_heredoc_body(data: bytes, out: bytearray, i: int, end: int, delim: bytes, strip: bool,
                       expands: bool) -> int | None:
    """Index after the end delimiter line, or None when the body runs to the end of the file."""
    while i < end:
        nl = data.find(b"\n", i, end)
        line_end = end if nl < 0 else nl
        line = data[i:line_end]
        if (line.lstrip(b"\t") if strip else line) == delim:
            return end if nl < 0 else nl + 1
        if expands:  # an unquoted body expands `$…`: mask what tree-sitter mis-parses there
            k = data.find(b"$", i, line_end)
            while k >= 0:
                k = data.find(b"$", _mask_dollar(data, out, k, line_end, True), line_end)
        if nl < 0:
            return None
        i = nl + 1
    return None


def _mask_dollar(data: bytes, out: bytearray, i: int, end: int, dq: bool) -> int:
    n = data[i + 1:i + 2]
    if n == b"{":
        j = skip_brace(data, i + 2, end, dq)
        a, b = i + 2, j - 1
        m = _SIMPLE_BRACE.fullmatch(data, a, b)
        if not m and b > a and data[b:b + 1] == b"}":
            out[a:b] = b"_" * (b - a)
        return j
    if n == b"(" and data[i + 2:i + 3] != b"(":
        j = skip_parens(data, i + 2, end)
        _mask_range(data, out, i + 2, max(j - 1, i + 2))
        return j
    j = skip_dollar(data, i, end, dq)
    if j == i + 1 and n not in (b"'", b'"'):
        out[i] = 0x5F  # a lone `$` is a literal to bash; tree-sitter rejects `$;` / `$]`
    if n == b"(" and data[j - 2:j] == b"))" and j - 2 > i + 3:
        out[i + 3:j - 2] = b"0" + b" " * (j - i - 6)  # `$(( (a+b)*2 ))` → `$((0        ))`
    return j


# ---------------------------------------------------------------------------------------------
# building the model


class _Ctx:
    __slots__ = ("path", "function", "conditional")

    def __init__(self, path: tuple = (), function: str | None = None,
                 conditional: bool = False) -> None:
        self.path = path
        self.function = function
        self.conditional = conditional

    def branch(self, block: int, index: int) -> "_Ctx":
        return _Ctx(self.path + (BranchRef(block=block, branch=index),),
                    self.function, self.conditional)

    def cond(self) -> "_Ctx":
        return _Ctx(self.path, self.function, True)


# the fields every statement starts with, in `_Builder.node_fields`'s order
_NODE_FIELDS = ("id", "span", "path", "function", "conditional", "background")
# assignments and commands are nearly all of a script's statements (7,350 of 7,830 in verl's),
# built positionally as the lexer builds words: a keyword call, with the `**common` dict it
# took, costs twice the instructions (see `records.positional`)
_assignment = positional(Assignment, *_NODE_FIELDS, "name", "name_span", "index", "append",
                         "value", "array", "declared_by", "flags", "command_prefix")
_command = positional(Command, *_NODE_FIELDS, "words", "prefix", "redirects", "heredocs")
_set_options = positional(SetOptions, *_NODE_FIELDS, "enable", "disable", "words")
_comment = positional(Comment, "span", "text")


class _Builder:
    def __init__(self, source: SourceText) -> None:
        self.data = data = source.data
        # a SpanFactory's bound `__call__`: a call of the factory itself goes through `tp_call`,
        # which builds an argument tuple each time (a third more instructions; ~350 spans a
        # script). The model keeps it too, so that the interpreter's spans are cheap as well
        self.span = SpanFactory(source).__call__
        self.lexer = WordLexer(data, self.span)
        self.ascii_text = self.lexer.chars if self.lexer.ascii else None
        self.escaped_blanks = _may_hold_escaped_blanks(data)
        self.name_field, self.value_field = _assignment_fields()
        self.comments: list[Comment] = []
        self.heredocs: list[Heredoc] = []
        self.next_id = 0

    def nspan(self, node) -> Span:
        return self.span(node.start_byte, node.end_byte)

    def text(self, node) -> str:
        if self.ascii_text is not None:
            return self.ascii_text[node.start_byte:node.end_byte]
        return _dec(self.data[node.start_byte:node.end_byte])

    def node_fields(self, node, ctx: _Ctx, background: bool = False, start: int | None = None,
                    end: int | None = None) -> tuple:
        """The `_NODE_FIELDS` of the statement `node` (it takes the next id)."""
        s = node.start_byte if start is None else start
        e = node.end_byte if end is None else end
        self.next_id = nid = self.next_id + 1
        return nid - 1, self.span(s, e), ctx.path, ctx.function, ctx.conditional, background

    def common(self, node, ctx: _Ctx, background: bool = False) -> dict:
        """`node_fields` by name, for the keyword constructors of the rarer statements."""
        return dict(zip(_NODE_FIELDS, self.node_fields(node, ctx, background)))

    # -- statement lists ----------------------------------------------------------------------
    def stmts(self, nodes, ctx: _Ctx) -> list:
        out: list = []
        if not isinstance(nodes, list):
            nodes = list(nodes)
        last = len(nodes) - 1
        for k, node in enumerate(nodes):
            t = node.type
            if t == "comment":
                self.comment(node)
                continue
            if not node.is_named:
                continue
            bg = k < last and nodes[k + 1].type == "&"
            handler = _HANDLERS.get(t)
            if handler is not None:
                out.extend(handler(self, node, ctx, bg))
            else:
                out.append(self.other(node, ctx, bg))
        return out

    def comment(self, node) -> None:
        self.comments.append(_comment(self.nspan(node), self.text(node)))

    def stmt(self, node, ctx: _Ctx, bg: bool = False) -> list:
        t = node.type
        handler = _HANDLERS.get(t)
        if handler is not None:
            return handler(self, node, ctx, bg)
        if t == "comment":
            self.comment(node)
            return []
        return [self.other(node, ctx, bg)]

    def other(self, node, ctx: _Ctx, bg: bool) -> Other:
        return Other(text=self.text(node), **self.common(node, ctx, bg))

    # simple statements ------------------------------------------------------------------------
    def s_command(self, node, ctx: _Ctx, bg: bool, redirects=(), heredocs=(), end=None) -> list:
        children = node.children
        out: list = []
        prefix: list[Assignment] = []
        words: list = []  # [start, end] ranges, adjacent nodes merged
        reds: list[Redirect] = list(redirects)
        start = node.start_byte
        prev_end = None
        glued = _glued_assignments(children, self.data)
        blanks = self._may_hold_escaped_blank(node)
        for i, ch in enumerate(children):
            t = ch.type
            if i in glued.skip:
                continue
            if prev_end is not None and not words and self._newline_between(prev_end,
                                                                            ch.start_byte):
                # tree-sitter-bash glues `A=1 B=2⏎C=3 cmd` into one command: split it
                out.extend(self._standalone(prefix))
                prefix = []
                start = ch.start_byte
            if blanks and words and prev_end is not None:
                words.extend(self._escaped_blanks(prev_end, ch.start_byte))
            prev_end = ch.end_byte
            if t == "variable_assignment" and not words:
                value_end = glued.ends.get(i)
                if value_end is not None:
                    prev_end = value_end
                prefix.append(self.assignment(ch, ctx, command_prefix=True, end=value_end))
            elif t == "comment":
                self.comment(ch)
            elif t in ("file_redirect", "herestring_redirect"):
                reds.append(self.redirect(ch))
            elif t == "command_name":
                words.append([ch.start_byte, ch.end_byte])
            elif ch.is_named or t == "$":
                _add_to_words(words, ch, self.data)
        if not words:
            out.extend(self._standalone(prefix))
            return out
        if prev_end is not None:
            words.extend(self._trailing_escaped_blanks(prev_end))
        ws = tuple([self.lexer.word(a, b) for a, b in words])
        name = ws[0].literal
        fields = self.node_fields(node, ctx, bg, start=start, end=end)
        if name == "set" and not prefix:
            out.append(self.set_options(ws, fields))
        else:
            out.append(_command(*fields, ws, tuple(prefix), tuple(reds), tuple(heredocs)))
        return out

    def _newline_between(self, a: int, b: int) -> bool:
        gap = self.data[a:b]
        k = gap.find(b"\n")
        while k >= 0:
            if k == 0 or gap[k - 1] != 0x5C:
                return True
            k = gap.find(b"\n", k + 1)
        return False

    def _standalone(self, prefix: list[Assignment]) -> list[Assignment]:
        return [replace(a, command_prefix=False) for a in prefix]

    def set_options(self, ws: tuple[Word, ...], fields: tuple) -> SetOptions:
        enable: list[str] = []
        disable: list[str] = []
        args = [w.literal or "" for w in ws[1:]]
        k = 0
        while k < len(args):
            a = args[k]
            if a in ("-o", "+o") and k + 1 < len(args):
                (enable if a[0] == "-" else disable).append(args[k + 1])
                k += 2
                continue
            if len(a) > 1 and a[0] in "-+" and a != "--":
                target = enable if a[0] == "-" else disable
                for letter in a[1:]:
                    if letter == "o" and k + 1 < len(args):
                        target.append(args[k + 1])
                        k += 1
                    elif letter in _SET_LETTERS:
                        target.append(_SET_LETTERS[letter])
            elif a == "--" or (a and a[0] not in "-+"):
                break
            k += 1
        return _set_options(*fields, tuple(enable), tuple(disable), ws)

    def s_variable_assignment(self, node, ctx: _Ctx, bg: bool) -> list:
        return [self.assignment(node, ctx, bg)]

    def s_variable_assignments(self, node, ctx: _Ctx, bg: bool) -> list:
        out = []
        for ch in node.children:
            if ch.type == "variable_assignment":
                out.append(self.assignment(ch, ctx, bg))
            elif ch.type == "comment":
                self.comment(ch)
        return out

    def assignment(self, node, ctx: _Ctx, background: bool = False, end: int | None = None, *,
                   command_prefix: bool = False, declared_by=None, flags=()) -> Assignment:
        """`end`: where the value really ends, when tree-sitter cut it short (`_glued`).
        `background` and `end` are positional: a keyword argument costs a call ≈ 700
        instructions more, and nearly every statement of a script is an assignment."""
        data = self.data
        name_node = vn = node.child_by_field_id(self.name_field) or node.children[0]
        index = None
        if name_node.type == "subscript":
            vn = name_node.child_by_field_name("name") or name_node.children[0]
            lb = data.find(b"[", vn.end_byte, name_node.end_byte)
            rb = data.rfind(b"]", lb, name_node.end_byte)
            if lb >= 0 and rb > lb:
                index = self.lexer.word(lb + 1, rb)
        name, name_span = self.text(vn), self.nspan(vn)
        k = name_node.end_byte
        append = data[k:k + 2] == b"+="
        vstart = k + (2 if append else 1)
        value = array = None
        vnode = node.child_by_field_id(self.value_field)
        if vnode is not None and vnode.type == "array":
            array = self.array(vnode)
        else:
            value = self.lexer.word(vstart, max(vstart, end or node.end_byte))
        return _assignment(*self.node_fields(node, ctx, background, None, end), name, name_span,
                           index, append, value, array, declared_by, tuple(flags),
                           command_prefix)

    def _may_hold_escaped_blank(self, node) -> bool:
        """One look at the whole command or array before looking at each gap."""
        return self.escaped_blanks and \
            _ESCAPED_BLANK.search(self.data, node.start_byte, node.end_byte) is not None

    def _escaped_blanks(self, start: int, end: int) -> list[list[int]]:
        """Lone `\\ ` words in the gap [start, end) between two nodes: tree-sitter-bash drops
        them (`a=1 \\ \\⏎`, `x=1 \\  # note`), bash passes each on as a one-space word."""
        if end - start < 2:
            return []
        return [[m.start(), m.end()] for m in _ESCAPED_BLANK.finditer(self.data, start, end)]

    def _trailing_escaped_blanks(self, start: int) -> list[list[int]]:
        """`cmd a \\  ⏎` (a `\\` before trailing blanks): the escaped blank is the command's last
        word; tree-sitter-bash leaves it out of the command."""
        nl = self.data.find(b"\n", start)
        tail = self.data[start:len(self.data) if nl < 0 else nl].rstrip(b"\r")
        if b"\\" not in tail or not _BLANKS_ONLY.fullmatch(tail):
            return []
        return [[start + m.start(), start + m.end()] for m in _ESCAPED_BLANK.finditer(tail)]

    def array(self, node) -> ArrayLiteral:
        elems: list[list[int]] = []
        data = self.data
        prev_end = None
        blanks = self._may_hold_escaped_blank(node)
        for ch in node.children:
            if blanks and elems and prev_end is not None:
                elems.extend(self._escaped_blanks(prev_end, ch.start_byte))
            prev_end = ch.end_byte
            if ch.type == "comment":
                self.comment(ch)
            elif ch.is_named:
                _add_to_words(elems, ch, data)
        word = self.lexer.word
        return ArrayLiteral(span=self.nspan(node), elements=tuple([word(a, b) for a, b in elems]))

    def s_declaration_command(self, node, ctx: _Ctx, bg: bool) -> list:
        kw = self.text(node.children[0])
        declared_by = kw if kw in _DECLARERS else None
        flags: list[str] = []
        out: list = []
        glued = _glued_assignments(node.children, self.data, leading=False)
        for i, ch in enumerate(node.children):
            t = ch.type
            if i == 0 or i in glued.skip:
                continue
            if t == "variable_assignment":
                out.append(self.assignment(ch, ctx, declared_by=declared_by, flags=flags,
                                           background=bg, end=glued.ends.get(i)))
            elif t == "variable_name":
                out.append(Assignment(name=self.text(ch), name_span=self.nspan(ch),
                                      declared_by=declared_by, flags=tuple(flags),
                                      **self.common(ch, ctx, bg)))
            elif t == "word" and self.text(ch)[:1] in "-+":
                flags.append(self.text(ch))
            elif t == "comment":
                self.comment(ch)
        return out

    def s_unset_command(self, node, ctx: _Ctx, bg: bool) -> list:
        words = tuple(self.lexer.word(ch.start_byte, ch.end_byte)
                      for ch in node.children[1:] if ch.is_named and ch.type != "comment")
        lits = [w.literal for w in words]
        functions = "-f" in lits
        names = tuple(x for x in lits if x and not x.startswith("-"))
        return [Unset(words=words, names=names,
                      functions=functions, **self.common(node, ctx, bg))]

    def redirect(self, node) -> Redirect:
        desc = None
        op = ""
        target = None
        for ch in node.children:
            if ch.type == "file_descriptor":
                desc = self.text(ch)
            elif not ch.is_named:
                op += ch.type
            elif target is None:
                target = self.lexer.word(ch.start_byte, node.end_byte)
        return Redirect(span=self.nspan(node), operator=op, descriptor=desc,
                        target=target)

    def heredoc(self, node) -> Heredoc:
        raw = ""
        body = None
        for ch in node.children:
            if ch.type == "heredoc_start":
                raw = self.text(ch)
            elif ch.type == "heredoc_body":
                body = (ch.start_byte, ch.end_byte)
        return self.make_heredoc(node.start_byte, node.end_byte, raw, body)

    def make_heredoc(self, start: int, end: int, raw: str,
                     body: tuple[int, int] | None) -> Heredoc:
        """The here-document [start, end) whose delimiter word is `raw` (`'PY'`, `EOF`)."""
        quoted = any(q in raw for q in "'\"\\")
        word = None
        if body is not None:
            word = self._literal_word(*body) if quoted else self.lexer.word(*body, "heredoc")
        h = Heredoc(span=self.span(start, end), delimiter=raw.strip("'\"\\"), quoted=quoted,
                    body=word)
        self.heredocs.append(h)
        return h

    def _literal_word(self, start: int, end: int) -> Word:
        sp = self.span(start, end)
        txt = _dec(self.data[start:end])
        piece = Piece(kind="literal", span=sp, text=txt, quoted="single", value=txt)
        return Word(span=sp, text=txt, pieces=(piece,))

    def s_redirected_statement(self, node, ctx: _Ctx, bg: bool) -> list:
        body = node.child_by_field_name("body")
        reds: list[Redirect] = []
        docs: list[Heredoc] = []
        for ch in node.children:
            if ch is body or (body is not None and ch.start_byte == body.start_byte
                              and ch.type == body.type):
                continue
            if ch.type in ("file_redirect", "herestring_redirect"):
                reds.append(self.redirect(ch))
            elif ch.type == "heredoc_redirect":
                docs.append(self.heredoc(ch))
                for sub in ch.children:  # `cat <<EOF > out`, `cat <<EOF | cmd`
                    if sub.type in ("file_redirect", "herestring_redirect"):
                        reds.append(self.redirect(sub))
            elif ch.type == "comment":
                self.comment(ch)
        if body is None:
            return []
        if body.type == "command":
            return self.s_command(body, ctx, bg, redirects=reds, heredocs=docs,
                                  end=node.end_byte if not docs else body.end_byte)
        return self.stmt(body, ctx, bg)

    # compound statements ----------------------------------------------------------------------
    def s_pipeline(self, node, ctx: _Ctx, bg: bool) -> list:
        parts: list = []
        negated = False
        for ch in node.children:
            if ch.type == "!":
                negated = True
            elif ch.type == "comment":
                self.comment(ch)
            elif ch.is_named:
                parts.extend(self.stmt(ch, ctx))
        return [Pipeline(parts=tuple(parts), negated=negated,
                         **self.common(node, ctx, bg))]

    def s_negated_command(self, node, ctx: _Ctx, bg: bool) -> list:
        return self.stmts([c for c in node.children if c.type != "!"], ctx)

    def s_list(self, node, ctx: _Ctx, bg: bool) -> list:
        out: list = []
        first = True
        op = ""
        for ch in node.children:
            if ch.type == "comment":
                self.comment(ch)
            elif ch.type in ("&&", "||"):
                op = ch.type
            elif ch.is_named:
                stmts = self.stmt(ch, ctx if first else ctx.cond(), bg)
                if not first and stmts:
                    stmts[0] = replace(stmts[0], after=op or "&&")
                out.extend(stmts)
                first = False
        return out

    def s_compound_statement(self, node, ctx: _Ctx, bg: bool) -> list:
        if node.children and node.children[0].type == "((":
            return [self.other(node, ctx, bg)]
        common = self.common(node, ctx, bg)
        return [Group(subshell=False,
                      body=tuple(self.stmts(node.children, ctx)), **common)]

    def s_subshell(self, node, ctx: _Ctx, bg: bool) -> list:
        common = self.common(node, ctx, bg)
        return [Group(subshell=True,
                      body=tuple(self.stmts(node.children, ctx)), **common)]

    def s_function_definition(self, node, ctx: _Ctx, bg: bool) -> list:
        name_node = node.child_by_field_name("name")
        body = node.child_by_field_name("body")
        name = self.text(name_node) if name_node is not None else ""
        common = self.common(node, ctx, bg)
        inner = _Ctx((), name, False)
        stmts = self.stmt(body, inner) if body is not None else []
        # the function's own braces are not a statement of their own
        if len(stmts) == 1 and isinstance(stmts[0], Group) and not stmts[0].subshell:
            stmts = list(stmts[0].body)
        name_span = self.nspan(name_node) if name_node is not None else common["span"]
        return [Function(name=name, name_span=name_span, body=tuple(stmts), **common)]

    def s_case_statement(self, node, ctx: _Ctx, bg: bool) -> list:
        common = self.common(node, ctx, bg)
        block = common["id"]
        subject = None
        items: list[CaseItem] = []
        seen_in = False
        for ch in node.children:
            t = ch.type
            if t == "in":
                seen_in = True
            elif t == "comment":
                self.comment(ch)
            elif t == "case_item":
                items.append(self.case_item(ch, ctx.branch(block, len(items))))
            elif ch.is_named and not seen_in and subject is None:
                subject = self.lexer.word(ch.start_byte, ch.end_byte)
        if subject is None:
            subject = self.lexer.word(node.start_byte, node.start_byte)
        return [Case(subject=subject, items=tuple(items), **common)]

    def case_item(self, node, ctx: _Ctx) -> CaseItem:
        patterns: list[list[int]] = []
        body_nodes = []
        terminator = ""
        in_body = False
        for ch in node.children:
            t = ch.type
            if not in_body:
                if t == ")":
                    in_body = True
                elif t == "comment":
                    self.comment(ch)
                elif ch.is_named:
                    _add_to_words(patterns, ch, self.data)
            elif t in (";;", ";&", ";;&"):
                terminator = t
            else:
                body_nodes.append(ch)
        return CaseItem(span=self.nspan(node),
                        patterns=tuple([self.lexer.word(a, b) for a, b in patterns]),
                        body=tuple(self.stmts(body_nodes, ctx)), terminator=terminator)

    def s_if_statement(self, node, ctx: _Ctx, bg: bool) -> list:
        common = self.common(node, ctx, bg)
        block = common["id"]
        branches: list[IfBranch] = []

        def arm(kind: str, n, children) -> None:
            cond_nodes, body_nodes = [], []
            target = cond_nodes if kind != "else" else body_nodes
            for ch in children:
                if ch.type == "then":
                    target = body_nodes
                elif ch.type in ("elif_clause", "else_clause", "fi", "if", "elif", "else"):
                    continue
                else:
                    target.append(ch)
            bctx = ctx.branch(block, len(branches))
            cond = self.condition(cond_nodes, ctx) if kind != "else" else None
            end = n.end_byte
            if kind == "if":  # the `if` arm ends where the first elif/else/fi starts
                nxt = [c for c in children if c.type in ("elif_clause", "else_clause", "fi")]
                end = nxt[0].start_byte if nxt else n.end_byte
            branches.append(IfBranch(kind=kind, span=self.span(n.start_byte, end), condition=cond,
                                     body=tuple(self.stmts(body_nodes, bctx))))

        arm("if", node, node.children)
        for ch in node.children:
            if ch.type == "elif_clause":
                arm("elif", ch, ch.children)
            elif ch.type == "else_clause":
                arm("else", ch, ch.children)
        return [If(branches=tuple(branches), **common)]

    def condition(self, nodes, ctx: _Ctx) -> Condition:
        named = [n for n in nodes if n.is_named and n.type != "comment"]
        if not named:
            return Condition(span=self.span(0, 0), text="")
        start, end = named[0].start_byte, named[-1].end_byte
        stmts = tuple(self.stmts(nodes, ctx))
        test = None
        if len(named) == 1 and named[0].type == "test_command":
            test = self.test(named[0])
        variable, operator, operand, subject, pattern = test or (None,) * 5
        return Condition(span=self.span(start, end),
                         text=_dec(self.data[start:end]), statements=stmts,
                         variable=variable, operator=operator, operand=operand,
                         pattern=pattern, subject=subject)

    def test(self, node) -> tuple[str, str, str | None, Word, str | None] | None:
        """(variable, operator, literal operand, the variable's word, the operand as a pattern)
        of a simple test."""
        expr = [c for c in node.children if c.is_named]
        if len(expr) != 1:
            return None
        e = expr[0]
        parts = e.children
        if e.type == "binary_expression" and len(parts) == 3:
            left = self.lexer.word(parts[0].start_byte, parts[0].end_byte)
            right = self.lexer.word(parts[2].start_byte, parts[2].end_byte)
            op = self.text(parts[1])
            if op not in ("=", "==", "!=") or _blank_outside_quotes(left) or \
                    _blank_outside_quotes(right):
                return None  # `[ "$E" = vllm -a -d /usr ]`: more than one comparison
            for a, b in ((left, right), (right, left)):
                var = _single_variable(a)
                if var is not None and b.literal is not None:
                    return var, op, b.literal, a, patterns.of_literal_word(b)
        if e.type == "unary_expression" and len(parts) == 2:
            op = self.text(parts[0])
            word = self.lexer.word(parts[1].start_byte, parts[1].end_byte)
            var = _single_variable(word)
            if var is not None and op in ("-z", "-n"):
                return var, op, None, word, None
        return None

    def s_for_statement(self, node, ctx: _Ctx, bg: bool) -> list:
        common = self.common(node, ctx, bg)
        variable = None
        items: list | None = None
        body = ()
        kw = node.children[0].type if node.children else "for"
        for ch in node.children:
            t = ch.type
            if t == "variable_name" and variable is None:
                variable = self.text(ch)
            elif t == "in":
                items = []
            elif t == "do_group":
                body = tuple(self.stmts(ch.children, ctx))
            elif t == "comment":
                self.comment(ch)
            elif ch.is_named and items is not None:
                _add_to_words(items, ch, self.data)
        words = None if items is None else tuple([self.lexer.word(a, b) for a, b in items])
        return [Loop(loop="select" if kw == "select" else "for",
                     variable=variable, items=words, body=body, **common)]

    def s_c_style_for_statement(self, node, ctx: _Ctx, bg: bool) -> list:
        common = self.common(node, ctx, bg)
        body = ()
        for ch in node.children:
            if ch.type == "do_group":
                body = tuple(self.stmts(ch.children, ctx))
        text = self.text(node)
        head = text[:text.find("))") + 2]  # `for ((i = 0; i < n; i++))`
        assigned = arithmetic_assignments(head)
        return [Loop(loop="c_for", variable=assigned[0] if assigned else None, body=body,
                     **common)]

    def s_while_statement(self, node, ctx: _Ctx, bg: bool) -> list:
        common = self.common(node, ctx, bg)
        kw = node.children[0].type if node.children else "while"
        cond_nodes = []
        body = ()
        for ch in node.children[1:]:
            if ch.type == "do_group":
                body = tuple(self.stmts(ch.children, ctx))
            else:
                cond_nodes.append(ch)
        return [Loop(loop="until" if kw == "until" else "while",
                     condition=self.condition(cond_nodes, ctx), body=body,
                     **common)]

    def s_test_command(self, node, ctx: _Ctx, bg: bool) -> list:
        """`[ … ]` / `[[ … ]]` as a command whose words are the test's operands and operators
        (so their expansions are seen like any command's)."""
        ranges: list[list[int]] = []
        self._test_ranges(node, ranges)
        words = tuple([self.lexer.word(a, b) for a, b in ranges])
        return [Command(words=words, **self.common(node, ctx, bg))]

    def _test_ranges(self, node, ranges: list[list[int]]) -> None:
        for ch in node.children:
            if ch.type in _TEST_EXPRESSIONS:
                self._test_ranges(ch, ranges)
            elif ch.type == "comment":
                self.comment(ch)
            elif ch.is_named:
                _add_to_words(ranges, ch, self.data)
            else:
                ranges.append([ch.start_byte, ch.end_byte])

    def s_ERROR(self, node, ctx: _Ctx, bg: bool) -> list:
        # keep what can be understood inside an error region (the rest is still linted)
        inner = [c for c in node.children if c.is_named and c.type in _STATEMENT_TYPES]
        return self.stmts(inner, ctx)


_ESCAPED_BLANK = re.compile(rb"(?<![\\])\\[ \t]")
_BLANKS_ONLY = re.compile(rb"(?:[ \t]|\\[ \t])*")
_BLANKS_OR_CONTINUATIONS = re.compile(rb"(?:[ \t]|\\\r?\n)*")


_BACKSLASH_BLANK = re.compile(rb"\\[ \t]")


def _may_hold_escaped_blanks(data: bytes) -> bool:
    """A `\\` before a blank anywhere in the file. No verl script has one, and one look at the
    file is far cheaper than `_ESCAPED_BLANK`'s search (a lookbehind: no fast prefix scan) of
    every command and array (5% of the parse); a regex that starts with its rare `\\` scans
    the file once (two substring looks, for a space and a tab, scanned it twice)."""
    return _BACKSLASH_BLANK.search(data) is not None


class _Glued(NamedTuple):
    ends: dict[int, int]  # child index of an assignment → where its value really ends
    skip: set[int]  # child indexes that are the rest of such a value


def _touching(data: bytes, end: int, start: int) -> bool:
    """Nothing but a `\\`-newline between two nodes: bash reads one word."""
    return start == end or data[end:start] in (b"\\\n", b"\\\r\n")


def _glued_assignments(children, data: bytes, *, leading: bool = True) -> _Glued:
    """tree-sitter-bash ends `CKPT=$HOME/$exp/ckpt` at the second `$` and reads `exp/ckpt` as a
    command name; bash reads one assignment word. A node that touches an assignment (no blank
    between, or only a `\\`-newline: `M='a,'\\⏎'b'`) continues its value. `leading`: only the
    assignments a command starts with (a long launch command has none: nothing to scan); else
    all (`export -x A=… B=…`)."""
    ends: dict[int, int] = {}
    skip: set[int] = set()
    i = 0
    while i < len(children):
        if children[i].type != "variable_assignment":
            if leading:
                break
            i += 1
            continue
        j = i + 1
        while j < len(children) and children[j].type in _GLUE and _touching(
                data, children[j - 1].end_byte, children[j].start_byte):
            ends[i] = children[j].end_byte
            skip.add(j)
            j += 1
        i = j
    return _Glued(ends, skip)


_GLUE = frozenset({"command_name", "word", "concatenation", "string", "simple_expansion",
                   "expansion", "raw_string"})


def _blank_outside_quotes(word: Word) -> bool:
    return any(p.kind == "literal" and p.quoted == "none" and (" " in p.text or "\t" in p.text)
               for p in word.pieces)


def _add_to_words(ranges: list[list[int]], node, data: bytes) -> None:
    """Add `node`'s bytes to the `[start, end]` ranges of words: a node that starts where the
    last range ends continues that word (tree-sitter-bash splits some words into nodes), and so
    does one after a `\\`-newline with no blank before it (`path=/models/\\⏎Qwen2.5-7B`)."""
    start = node.start_byte
    if ranges:
        last = ranges[-1]
        if start - last[1] < 4 and _touching(data, last[1], start):  # `\\⏎` is at most 3 bytes
            last[1] = node.end_byte
            return
    ranges.append([start, node.end_byte])


_TEST_EXPRESSIONS = frozenset({"binary_expression", "unary_expression",
                               "parenthesized_expression", "negated_expression",
                               "postfix_expression", "ternary_expression"})
# node type → the `_Builder` method that builds its statements
_HANDLERS = {name[2:]: getattr(_Builder, name) for name in dir(_Builder) if name.startswith("s_")}
_STATEMENT_TYPES = frozenset(_HANDLERS) - {"ERROR"}


def _single_variable(w: Word) -> str | None:
    ps = [p for p in w.pieces if not (p.kind == "literal" and p.value == "")]
    if len(ps) == 1 and ps[0].kind == "variable" and ps[0].index is None and \
            ps[0].operator in (None, ":-", "-"):
        return ps[0].name
    return None


_RESERVED_NOT_FIRST = frozenset({"then", "do", "done", "fi", "esac", "elif", "else", "}", "in"})


def _reserved_misuse(model: ScriptModel) -> list[ParseError]:
    """tree-sitter-bash accepts `done`/`fi`/`then`… as command names; bash does not."""
    out = []
    for c in model.commands:
        if c.words and not c.prefix and c.words[0].text in _RESERVED_NOT_FIRST \
                and c.words[0].span.start == c.span.start:  # `<f in x` is a command `in`
            w = c.words[0]
            out.append(ParseError(span=w.span,
                                  message=f"syntax error near unexpected token `{w.text}`"))
    return out


def _opening_quote(builder: _Builder, missing) -> Span | None:
    """For an unterminated `"` at the end of a command: the earlier quote that was meant to
    close on its own line but spans lines instead (bash pairs quotes left to right, so the
    quote it reports is only where the damage surfaces)."""
    string = missing.parent
    command = string
    while command is not None and command.type != "command":
        command = command.parent
    if string is None or command is None:
        return None
    stack = list(reversed(command.children))
    while stack:
        node = stack.pop()
        if node.start_byte >= string.start_byte:
            break
        if node.type == "string":
            if builder.data.find(b"\n", node.start_byte, node.end_byte) >= 0:
                return builder.span(node.start_byte, node.start_byte + 1)
        else:
            stack.extend(reversed(node.children))
    return None


def _errors(builder: _Builder, root) -> list[ParseError]:
    out: list[ParseError] = []
    stack = [root]  # depth-first, in document order; iterative: the tree may be 1000s deep
    while stack:
        n = stack.pop()
        if n.is_missing and n.type == "]" and n.parent is not None and \
                n.parent.type == "test_command":
            continue  # `[ -f x` without `]`: a run-time error of the `[` builtin, not syntax
        if n.is_missing:
            span = _opening_quote(builder, n) if n.type == '"' else None
            out.append(ParseError(span=span or builder.nspan(n),
                                  message=f"syntax error: missing `{n.type}`"))
            continue
        if n.is_error:
            # a big error region holds the statements tree-sitter could still read; bash stops
            # where the first error nested in it starts
            inner = next((c for c in n.children if c.is_error), n)
            # not at the comments it starts with (`#!/bin/bash` when it is the whole file)
            begin = next((c.start_byte for c in inner.children if c.type != "comment"),
                         inner.start_byte)
            raw = builder.data[begin:inner.end_byte]
            lead = len(raw) - len(raw.lstrip())
            start = begin + lead
            nl = builder.data.find(b"\n", start, inner.end_byte)
            end = inner.end_byte if nl < 0 else nl  # underline one line, not the whole region
            text = _dec(builder.data[start:end]).strip()
            near = text[:40] if text else "end of file"
            out.append(ParseError(span=builder.span(start, max(start, end)),
                                  message=f"syntax error near `{near}`"))
            continue
        stack.extend(c for c in reversed(n.children) if c.has_error or c.is_missing)
    return out


def _syntax_tree(data: bytes) -> tuple[object | None, list[Lifted]]:
    parser = _parser()
    tree = _parse(parser, data)
    if tree is None:
        return None, []
    error = tree.root_node.has_error
    if not error and not _may_lift(data):
        return tree, []
    try:
        text, lifted = masked(data)
    except RecursionError:  # hundreds of nested `"$(`: tree-sitter's own reading, unmasked
        return tree, []
    if text == data or not (error or lifted):  # a clean parse is re-read for a here-document
        return tree, []
    return _parse(parser, text), lifted


def _may_lift(data: bytes) -> bool:
    """Some `<<WORD` has more of its line after it (a cheap look before `masked` scans; a
    substring look first: 5 of verl's 182 scripts hold a `<<`)."""
    return b"<<" in data and any(_line_goes_on(data, m.end(), len(data))
                                 for m in _HEREDOC_DELIM.finditer(data))


def _give_back(b: _Builder, body: list, lifted: list[Lifted]) -> None:
    """Give each lifted here-document to the command that reads it: the innermost one whose
    words reach up to its operator (only blanks between: `cmd -⏎<<'PY'` was blanked). The
    commands were built a moment ago and nothing has seen them yet."""
    data = b.data
    commands = sorted((s for s in ScriptModel(body=tuple(body)).statements
                       if isinstance(s, Command)), key=lambda c: c.span.start)
    starts = [c.span.start for c in commands]

    def reaches(c: Command, at: int) -> bool:
        return c.span.end >= at or bool(_BLANKS_OR_CONTINUATIONS.fullmatch(data, c.span.end, at))

    for h in lifted:
        raw = _dec(data[h.start:h.operator_end]).lstrip("<-").strip()  # `'PY'`, `EOF`
        doc = b.make_heredoc(h.start, h.end, raw, (h.body_start, h.body_end))
        # the latest-starting command that reaches it (the first of equal starts): looked for
        # back from the operator, not among all commands (a file of here-documents was
        # quadratic)
        i = bisect_right(starts, h.start) - 1
        while i >= 0 and not reaches(commands[i], h.start):
            i -= 1
        while i > 0 and starts[i - 1] == starts[i] and reaches(commands[i - 1], h.start):
            i -= 1
        if i >= 0:
            owner = commands[i]
            owner.heredocs = owner.heredocs + (doc,)
    b.heredocs.sort(key=lambda d: d.span.start)


def parse_script(source: SourceText) -> ScriptModel:
    """Parse `source` into a ScriptModel (never raises on any input)."""
    data = source.data
    tree, lifted = _syntax_tree(data)
    b = _Builder(source)
    if tree is None:  # the time budget ran out mid-parse (and its alarm raised nothing)
        return ScriptModel(length=len(data), source=source, span_factory=b.span,
                           unread="the parse of the script ran out of time")
    root = tree.root_node
    try:
        body = b.stmts(root.children, _Ctx())
    except RecursionError:  # hostile nesting (hundreds of levels): say so rather than crash
        return ScriptModel(length=len(data), source=source, span_factory=b.span,
                           unread="nested too deeply to analyse (parsing)")
    if lifted:
        _give_back(b, body, lifted)
    b.comments.sort(key=lambda c: c.span.start)
    model = ScriptModel(body=tuple(body), comments=tuple(b.comments),
                        heredocs=tuple(b.heredocs), length=len(data), source=source,
                        span_factory=b.span)
    if root.has_error:
        model.syntax = tree
    errors = (_errors(b, root) if root.has_error else []) + _reserved_misuse(model)
    if errors:
        errors.sort(key=lambda e: e.span.start)
        model.errors = tuple(errors)
    return model
