"""Bash word lexing on raw bytes: quoting, escapes and `$…` expansions.

tree-sitter gives the statement structure and word boundaries; the inside of a word is lexed
here, from the original text, because tree-sitter-bash mis-parses several legal forms
(`${X:-["a"]}`, `${oc.env:HOME}`, `$(( (a+b)*2 ))` in defaults) and because quoting and escape
semantics must match bash exactly for values to be right.
"""

from __future__ import annotations

import re
from typing import Callable

from verl_lint.records import positional
from verl_lint.shell.model import Piece, Word
from verl_lint.source import Span

SpanOf = Callable[[int, int], Span]

_NAME = re.compile(rb"[A-Za-z_][A-Za-z0-9_]*")
_RUN_ENDS = b"\\'\"$`<>"  # and UTF-8: what a run of plain literal characters stops at
_RUN = b"[^" + re.escape(_RUN_ENDS) + rb"\x80-\xff]+"  # no quoting, expansion, UTF-8: a literal
# byte -> 1 where `_RUN` stops, else 0: a document translated by it is searched for where a
# word's leading literal ends (a `find` costs half of what a regex match does)
_RUN_END_MAP = bytes(int(b in _RUN_ENDS or b >= 0x80) for b in range(256))
# The common shapes of a word, one regex match per piece (see `WordLexer.fast_pieces`):
# 1 unquoted literal run | 2 '…' | 3 ${X} | 4 $X | 5 $1 $@ $* $# | 6,7 ${X[@]} |
# 8,9,10 ${X:-v} (a default, `-`/`=`/`+`/`?` with or without `:`, that is one plain literal:
# `${MODEL:-Qwen/Qwen2.5-7B}`, a third of the expansions in verl's scripts) |
# 11-15 the expansions of 3-7 alone in "…" | 16 a literal run alone in "…" | 17 opening ".
# A "…" holding one piece (`"$X"`, `"${A[@]}"`, `"a b"`: four in five of verl's) is one match
# rather than three: a regex call costs ≈ 3,500 instructions whatever it matches.
_NAME_RE = rb"([A-Za-z_][A-Za-z0-9_]*)"
_DQ_RUN = rb'([^"\\$`\x80-\xff]+)'
_SIMPLE_EXPANSIONS = (rb"\$\{" + _NAME_RE + rb"\}|\$" + _NAME_RE + rb"|\$([0-9@*#])|\$\{" + _NAME_RE
                      + rb"\[([@*])\]\}")
_FAST_EXPANSIONS = (_SIMPLE_EXPANSIONS + rb"|\$\{" + _NAME_RE
                    + rb"(:?[-=+?])([^\\'\"$`<>}\x80-\xff]+)\}")
_FAST = re.compile(b"(" + _RUN + rb")|'([^'\x80-\xff]*)'|" + _FAST_EXPANSIONS
                   + b'|"(?:' + _SIMPLE_EXPANSIONS + b"|" + _DQ_RUN + b')"|(")')
# inside "…": 1 literal run | 2 ${X} | 3 $X | 4 $1 $@ | 5,6 ${X[@]} | 7,8,9 ${X:-v} | 10 closing "
_FAST_DQ = re.compile(_DQ_RUN + b"|" + _FAST_EXPANSIONS + rb'|(")')
_DQ_GROUPS = (0, 1, 3, 4, 5, 6, 7, 8, 9, 10, 17)  # _FAST_DQ's group i is _FAST's _DQ_GROUPS[i]
_DIGITS = re.compile(rb"[0-9]+")

# the words and pieces of the common shapes, ≈ 330 a script, built positionally (a keyword call
# costs twice the instructions: see `records.positional`); the general lexer keeps the keyword
# constructors, and the property tests compare the two
_word = positional(Word, "span", "text", "pieces")
_literal = positional(Piece, "span", "text", "quoted", "value", kind="literal")
_variable = positional(Piece, "span", "text", "quoted", "name", "index", "braced",
                       kind="variable")
_default = positional(Piece, "span", "text", "quoted", "name", "operator", "argument",
                      kind="variable", braced=True)
_SPECIAL = b"@*#?$!-"
# longest operators first
_OPS = (b":-", b":=", b":+", b":?", b"##", b"%%", b"//", b"/#", b"/%", b"^^", b",,",
        b"-", b"=", b"+", b"?", b"#", b"%", b"/", b"^", b",", b"@")
_ANSI = {"n": "\n", "t": "\t", "r": "\r", "\\": "\\", "'": "'", '"': '"', "a": "\a", "b": "\b",
         "e": "\x1b", "E": "\x1b", "f": "\f", "v": "\v", "?": "?"}

BS, SQ, DQ, DOL, BT, LP, RP, LB, RB, NL = (ord(c) for c in "\\'\"$`(){}\n")


def _dec(b: bytes) -> str:
    return b.decode("utf-8", errors="replace")


# the bytes `skip_double`, `skip_parens` and `skip_brace` step over one at a time: a run of
# them is skipped in one match (the skips find the end of every quote and expansion)
_DOUBLE_PLAIN = re.compile(rb"[^\\\"$`]+")
_PARENS_PLAIN = re.compile(rb"[^\\'\"`$#()]+")
_BRACE_PLAIN = re.compile(rb"[^\\'\"`$}]+")
_BRACE_PLAIN_DQ = re.compile(rb"[^\\\"`$}]+")  # inside "…", a `'` is plain too
# what the general lexer (`WordLexer.pieces`) takes as literal characters in every quoting
_LITERAL_RUN = re.compile(_RUN)


def skip_single(data: bytes, i: int, end: int) -> int:
    """`i` at an opening `'`; index after the closing one (or `end`)."""
    j = data.find(b"'", i + 1, end)
    return end if j < 0 else j + 1


def skip_double(data: bytes, i: int, end: int,
                dollar: Callable[[bytes, int, int, bool], int] | None = None) -> int:
    """`i` at an opening `"`; index after the closing one. `dollar(data, j, end, True)` steps
    over a `$…` inside: `skip_dollar` unless given (the parser's `mask` rewrites as it goes)."""
    if dollar is None:
        dollar = skip_dollar
    j = i + 1
    while j < end:
        m = _DOUBLE_PLAIN.match(data, j, end)
        if m is not None:
            j = m.end()
            if j >= end:
                break
        c = data[j]
        if c == BS:
            j += 2
        elif c == DQ:
            return j + 1
        elif c == DOL or c == BT:
            j = dollar(data, j, end, True) if c == DOL else skip_escaped(data, j, end)
        else:
            j += 1
    return end


def skip_escaped(data: bytes, i: int, end: int) -> int:
    """`i` at an opening `` ` `` or at the `'` of `$'…'` (quotes in which `\\` escapes the next
    byte); index after the closing one (or `end`)."""
    q = data[i]
    j = i + 1
    while j < end:
        c = data[j]
        if c == BS:
            j += 2
        elif c == q:
            return j + 1
        else:
            j += 1
    return end


def skip_parens(data: bytes, i: int, end: int, arith: bool = False) -> int:
    """`i` just after an opening `(`; index after the matching `)` (quote aware). `arith`: the
    inside of `$((…))`, where `#` starts no comment (`16#ff`) and a backquote is not skipped."""
    depth = 1
    j = i
    while j < end:
        m = _PARENS_PLAIN.match(data, j, end)
        if m is not None:
            j = m.end()
            if j >= end:
                break
        c = data[j]
        if c == BS:
            j += 2
            continue
        if c == SQ:
            j = skip_single(data, j, end)
            continue
        if c == DQ:
            j = skip_double(data, j, end)
            continue
        if c == BT and not arith:
            j = skip_escaped(data, j, end)
            continue
        if c == DOL:
            j = skip_dollar(data, j, end, False)
            continue
        if c == ord("#") and not arith and (j == i or data[j - 1] in b" \t\n;(|&"):
            nl = data.find(b"\n", j, end)
            j = end if nl < 0 else nl
            continue
        if c == LP:
            depth += 1
        elif c == RP:
            depth -= 1
            if depth == 0:
                return j + 1
        j += 1
    return end




def skip_brace(data: bytes, i: int, end: int, dq: bool) -> int:
    """`i` just after `${`; index after the matching `}`."""
    plain = (_BRACE_PLAIN_DQ if dq else _BRACE_PLAIN).match
    j = i
    while j < end:
        m = plain(data, j, end)
        if m is not None:
            j = m.end()
            if j >= end:
                break
        c = data[j]
        if c == BS:
            j += 2
            continue
        if c == SQ and not dq:
            j = skip_single(data, j, end)
            continue
        if c == DQ:
            j = skip_double(data, j, end)
            continue
        if c == BT:
            j = skip_escaped(data, j, end)
            continue
        if c == DOL:
            j = skip_dollar(data, j, end, dq)
            continue
        if c == RB:
            return j + 1
        j += 1
    return end


def skip_dollar(data: bytes, i: int, end: int, dq: bool) -> int:
    """`i` at a `$`; index after the expansion it starts (i+1 for a lone `$`)."""
    n = data[i + 1] if i + 1 < end else -1
    if n == LB:
        return skip_brace(data, i + 2, end, dq)
    if n == LP:
        if i + 2 < end and data[i + 2] == LP:
            k = _arith_end(data, i + 3, end)
            if k is not None:
                return k
        return skip_parens(data, i + 2, end)
    if n == ord("["):
        j = data.find(b"]", i + 2, end)
        return end if j < 0 else j + 1
    if n == SQ and not dq:
        return skip_escaped(data, i + 1, end)
    m = _NAME.match(data, i + 1, end)
    if m:
        return m.end()
    if n != -1 and (n in _SPECIAL or 48 <= n <= 57):
        return i + 2
    return i + 1


def _arith_end(data: bytes, i: int, end: int) -> int | None:
    """After `$((`: index after the closing `))`, or None when it is `$( (…) )`."""
    j = skip_parens(data, i, end, arith=True)  # after the `)` matching the second `(`
    return j + 1 if j < end and data[j] == RP else None


def _ansi_value(raw: str) -> str:
    out = []
    k = 0
    while k < len(raw):
        ch = raw[k]
        if ch == "\\" and k + 1 < len(raw):
            out.append(_ANSI.get(raw[k + 1], "\\" + raw[k + 1]))
            k += 2
        else:
            out.append(ch)
            k += 1
    return "".join(out)


# `X = …`, `X += …` (not `==`, `<=`, `!=`), `++X`, `X--`: what `((…))`, `let` and `for ((…))` assign
_ARITH_ASSIGN = re.compile(r"([A-Za-z_]\w*)\s*(?:[-+*/%&|^]|<<|>>)?=(?!=)"
                           r"|(?:\+\+|--)\s*([A-Za-z_]\w*)|([A-Za-z_]\w*)\s*(?:\+\+|--)")


def arithmetic_assignments(text: str) -> list[str]:
    """The variables an arithmetic expression assigns, in order, once each."""
    names = (next(g for g in m.groups() if g) for m in _ARITH_ASSIGN.finditer(text))
    return list(dict.fromkeys(names))


class WordLexer:
    """Lexes words of one document."""

    def __init__(self, data: bytes, span_of: SpanOf) -> None:
        self.data = data
        self.span_of = span_of
        # character i is byte i, read only for ASCII words: the document as ASCII, or as Latin-1
        # when it holds UTF-8 (half of verl's scripts, in comments): no word is decoded alone
        self.ascii = data.isascii()
        self.chars = data.decode("latin-1")
        self.run_ends = data.translate(_RUN_END_MAP)

    def word(self, start: int, end: int, mode: str = "none") -> Word:
        """`mode`: "none" (a normal word), "double" (inside "…", e.g. a default of a quoted
        `${X:-…}`), "heredoc" (an unquoted here-document body)."""
        if start < end:
            # where the leading plain literal ends: half of verl's words are one (no regex
            # call for them, ≈ 3,500 instructions whatever it matches)
            run_ends = self.run_ends
            lead = start if run_ends[start] else run_ends.find(1, start, end)
            if lead < 0:
                return self.plain_word(start, end, "none" if mode == "none" else "double")
            if mode == "none":
                chars = self.chars
                raw = chars[start:end]
                # the Latin-1 view's slice is ASCII (a flag of the string) when the bytes are
                if self.ascii or raw.isascii():
                    pieces = self.fast_pieces(start, end, chars, lead)
                    if pieces is not None:
                        return _word(self.span_of(start, end), raw, tuple(pieces))
        pieces = self.pieces(start, end, mode)
        return Word(span=self.span_of(start, end),
                    text=_dec(self.data[start:end]), pieces=tuple(pieces))

    def plain_word(self, start: int, end: int, quoted: str) -> Word:
        """The word [start, end) that is one plain literal (ASCII, no quoting, no `$`: `_RUN`),
        its piece `quoted` as the word sits."""
        span = self.span_of(start, end)
        raw = self.chars[start:end]
        return _word(span, raw, (_literal(span, raw, quoted, raw),))

    def fast_pieces(self, start: int, end: int, text: str,
                    lead: int | None = None) -> list[Piece] | None:
        """The common shapes (`key=${X}`, `k='v'`, `"${X}"`, `"$@"`, `"${ARR[@]}"`,
        `k="$HOME/x"`) by regex, `${X:-…}` and `$(…)` as `pieces` takes them, or None to take
        the general lexer. `text[i]` is the character at byte `i` (the word is ASCII); `lead`:
        where the word's leading plain literal (`_RUN`) ends, when the caller knows. Yields
        exactly what `pieces` yields (a property test compares them)."""
        out: list[Piece] = []
        span_of = self.span_of
        data = self.data
        pos = start
        if lead is not None and lead > start:  # `_FAST`'s group 1, without matching it
            raw = text[start:lead]
            out.append(_literal(span_of(start, lead), raw, "none", raw))
            pos = lead
        quoted = "none"
        opened = 0  # where the open "…" started
        m = None
        while pos < end:
            if m is None:
                m = (_FAST if quoted == "none" else _FAST_DQ).match(data, pos, end)
            if m is None:
                if data[pos:pos + 2] in (b"${", b"$("):
                    # `${X:-$(cmd)}`, `$(cmd)`, `$((…))`: as `pieces` takes them (the general
                    # lexer took ten times longer)
                    j = skip_dollar(data, pos, end, quoted != "none")
                    out.append(self.expansion(pos, j, quoted))
                    pos = j
                    continue
                return None
            last = m.lastindex
            a, b = m.span(last)
            g = last if quoted == "none" else _DQ_GROUPS[last]
            ve = m.end()
            # the groups by how often they come in verl's scripts
            if g == 1 or g == 16:  # a literal run (16: alone in "…")
                raw = text[a:b]
                out.append(_literal(span_of(a, b), raw, "double" if g == 16 else quoted, raw))
            elif g == 17:  # a double quote
                if quoted == "none":
                    quoted, opened = "double", len(out)
                else:
                    if opened == len(out):  # "" — an empty argument, keep it
                        out.append(Piece(kind="literal", span=span_of(pos - 1, pos + 1),
                                         text='""', quoted="double", value=""))
                    quoted = "none"
            elif g < 8 and g != 2 or 10 < g < 16:  # 3 ${X}, 4 $X, 5 $@ / $1, 6-7 ${X[@]}
                kind, vs, vend, vq = (g, pos, ve, quoted) if g < 8 else \
                    (g - 8, pos + 1, ve - 1, "double")  # alone in "…": the inside
                if kind == 7:  # the name is the group before the index's
                    name, index = text[m.start(last - 1):m.end(last - 1)], text[a]
                else:
                    name, index = text[a:b], None
                out.append(_variable(span_of(vs, vend), text[vs:vend], vq, name, index,
                                     kind == 3 or kind == 7))
            elif g == 10:  # ${X:-v}: `braced`'s piece; its argument, one plain literal by the
                # regex, is the word `braced` lexes (`word` would match it again)
                out.append(_default(span_of(pos, ve), text[pos:ve], quoted,
                                    text[m.start(last - 2):m.end(last - 2)],
                                    text[m.start(last - 1):m.end(last - 1)],
                                    self.plain_word(a, b, quoted)))
            else:  # 2 '…'
                out.append(_literal(span_of(pos, ve), text[pos:ve], "single", text[a:b]))
            pos = ve
            m = None
        return None if quoted != "none" else out

    def pieces(self, start: int, end: int, mode: str) -> list[Piece]:
        data = self.data
        out: list[Piece] = []
        buf: list[str] = []  # literal characters of the pending run
        run_start = start
        run_q = "double" if mode in ("double", "heredoc") else "none"
        in_dq = mode == "double"
        i = start

        def flush(upto: int, force: bool = False) -> None:
            nonlocal buf
            if buf or force:
                out.append(Piece(kind="literal", span=self.span_of(run_start, upto),
                                 text=_dec(data[run_start:upto]), quoted=run_q, value="".join(buf)))
                buf = []

        while i < end:
            c = data[i]
            quoted = "double" if (in_dq or mode == "heredoc") else "none"
            if quoted != run_q:
                flush(i)
                run_q, run_start = quoted, i
            if c == BS:
                nxt = data[i + 1:i + 2]
                if not nxt:
                    buf.append("\\")
                    i += 1
                    continue
                # an escape is a piece of its own, so the other literal runs keep text == value
                flush(i)
                run_start = i
                if nxt == b"\n":
                    i += 2  # line continuation: produces nothing
                elif quoted == "none" or nxt in b'$`\\' or (nxt == b'"' and in_dq):
                    k = i + 2  # a UTF-8 sequence escaped: take the whole character
                    while k < end and 0x80 <= data[k] < 0xC0:
                        k += 1
                    buf.append(_dec(data[i + 1:k]))
                    flush(k, force=True)
                    i = k
                else:
                    buf.append("\\")
                    i += 1
                    continue
                run_start = i
                continue
            if c == SQ and quoted == "none":
                flush(i)
                j = skip_single(data, i, end)
                inner_end = j - 1 if j <= end and data[j - 1:j] == b"'" and j - 1 > i else j
                out.append(Piece(kind="literal", span=self.span_of(i, j), text=_dec(data[i:j]),
                                 quoted="single", value=_dec(data[i + 1:inner_end])))
                i = run_start = j
                continue
            if c == DQ and mode != "heredoc":
                flush(i)
                if in_dq and mode != "double":
                    in_dq = False
                    i += 1
                    run_start = i
                    continue
                if mode == "double":  # nested quotes inside a quoted ${…}: still double quoted
                    i += 1
                    run_start = i
                    continue
                j = skip_double(data, i, end)
                if j == i + 2:  # "" — an empty argument, keep it
                    out.append(Piece(kind="literal", span=self.span_of(i, j), text='""',
                                     quoted="double", value=""))
                    i = run_start = j
                    continue
                in_dq = True
                i += 1
                run_start, run_q = i, "double"
                continue
            if c == DOL:
                if i + 1 < end and data[i + 1] == SQ and quoted == "none":
                    flush(i)
                    j = skip_escaped(data, i + 1, end)
                    raw = _dec(data[i + 2:max(j - 1, i + 2)])
                    out.append(Piece(kind="literal", span=self.span_of(i, j), text=_dec(data[i:j]),
                                     quoted="ansi_c", value=_ansi_value(raw)))
                    i = run_start = j
                    continue
                if i + 1 < end and data[i + 1] == DQ and quoted == "none":
                    i += 1  # $"…" (translated) behaves as "…"
                    continue
                j = skip_dollar(data, i, end, quoted != "none")
                if j == i + 1:
                    buf.append("$")
                    i += 1
                    continue
                flush(i)
                out.append(self.expansion(i, j, quoted))
                i = run_start = j
                continue
            if c == BT:
                flush(i)
                j = skip_escaped(data, i, end)
                out.append(Piece(kind="command", span=self.span_of(i, j), text=_dec(data[i:j]),
                                 quoted=quoted, body=_dec(data[i + 1:max(j - 1, i + 1)])))
                i = run_start = j
                continue
            if c in (ord("<"), ord(">")) and i + 1 < end and data[i + 1] == LP and quoted == "none":
                flush(i)
                j = skip_parens(data, i + 2, end)
                out.append(Piece(kind="process", span=self.span_of(i, j), text=_dec(data[i:j]),
                                 body=_dec(data[i + 2:max(j - 1, i + 2)])))
                i = run_start = j
                continue
            m = _LITERAL_RUN.match(data, i, end)
            if m is not None:  # plain ASCII: the characters one at a time would append
                buf.append(m.group().decode("ascii"))
                i = m.end()
                continue
            # a plain character (whole UTF-8 sequence)
            k = i + 1
            while k < end and 0x80 <= data[k] < 0xC0:
                k += 1
            buf.append(_dec(data[i:k]))
            i = k
        flush(end)
        return out

    def expansion(self, i: int, j: int, quoted: str) -> Piece:
        data = self.data
        text = _dec(data[i:j])
        span = self.span_of(i, j)
        n = data[i + 1]
        if n == LP and data[i + 2:i + 3] == b"(" and data[j - 2:j] == b"))":
            return Piece(kind="arithmetic", span=span, text=text, quoted=quoted,
                         body=_dec(data[i + 3:j - 2]),
                         argument=self.word(i + 3, j - 2, "double"))
        if n == LP:
            return Piece(kind="command", span=span, text=text, quoted=quoted,
                         body=_dec(data[i + 2:max(j - 1, i + 2)]))
        if n == ord("["):
            k = max(j - 1, i + 2)
            return Piece(kind="arithmetic", span=span, text=text, quoted=quoted,
                         body=_dec(data[i + 2:k]),
                         argument=self.word(i + 2, k, "double"))
        if n != LB:
            return Piece(kind="variable", span=span, text=text, quoted=quoted,
                         name=_dec(data[i + 1:j]))
        return self.braced(i, j, quoted, span, text)

    def braced(self, i: int, j: int, quoted: str, span: Span, text: str) -> Piece:
        data = self.data
        closed = data[j - 1] == RB
        a, b = i + 2, (j - 1 if closed else j)
        bad = Piece(kind="bad_substitution", span=span, text=text, quoted=quoted,
                    braced=True)
        if not closed:
            return bad
        op = None
        k = a
        if data[a:a + 1] == b"#" and b - a > 1:
            op, k = "length", a + 1
        elif data[a:a + 1] == b"!" and b - a > 1:
            op, k = "indirect", a + 1
        m = _NAME.match(data, k, b) or _DIGITS.match(data, k, b)
        if m:
            name_end = m.end()
        elif k < b and data[k] in _SPECIAL:
            name_end = k + 1
        else:
            return bad
        name = _dec(data[k:name_end])
        index = None
        k = name_end
        if k < b and data[k] == ord("["):
            close = data.find(b"]", k, b)
            if close < 0:
                return bad
            index = _dec(data[k + 1:close])
            k = close + 1
        argument = None
        if k < b:
            if op is not None:
                if op == "indirect" and data[k:b] in (b"*", b"@"):
                    op = "names"
                    k = b
                else:
                    return bad
            else:
                for cand in _OPS:
                    if data.startswith(cand, k):
                        op = _dec(cand)
                        k += len(cand)
                        break
                else:
                    if data[k] == ord(":"):
                        op, k = "substring", k + 1
                    else:
                        return bad
            if k < b or op in (":-", "-", ":=", "=", ":+", "+"):
                argument = self.word(k, b, "double" if quoted == "double" else "none")
        return Piece(kind="variable", span=span, text=text, quoted=quoted,
                     name=name, index=index, operator=op, argument=argument,
                     braced=True)
