"""ScriptModel: what the shell stage knows about a script, every node with an exact span.

The model is a tree of statements (`ScriptModel.body`) plus flat views for rules
(`statements`, `commands`, `assignments`, `arrays`, `blocks`). Words are decomposed into
pieces (literal text, variable expansions, command substitutions, arithmetic) with the quoting
context of each piece, so rules and the evaluator never re-lex shell text.

Branch paths: every statement carries `path`, the (block id, branch index) pairs of the
`case`/`if` branches enclosing it, outermost first; `ScriptModel.block(id)` returns the Case/If.
`function` names the function whose body holds the statement (None at top level).
"""

from __future__ import annotations

from bisect import bisect_left
from dataclasses import field
from functools import cached_property
from typing import Any, Callable, Iterator, Literal, Union

from verl_lint.records import record, shared_dataclass
from verl_lint.source import SourceText, Span

Quoting = Literal["none", "single", "double", "ansi_c", "mixed"]
PieceKind = Literal["literal", "variable", "command", "arithmetic", "process", "bad_substitution"]

# `${X<op>arg}` operators; "length" is `${#X}`, "substring" is `${X:off:len}`
ExpansionOp = Literal[
    ":-", "-", ":=", "=", ":+", "+", ":?", "?",
    "#", "##", "%", "%%", "/", "//", "/#", "/%", "^", "^^", ",", ",,", "@",
    "length", "substring", "indirect", "names",
]


@record
class Piece:
    """One part of a word.

    - literal: `value` is the text after quote removal and escape processing;
    - variable: `$X`, `${X}`, `${X[@]}`, `${X:-default}` — `name` (may be a special: `@`, `*`,
      `#`, `1`…), `index` (subscript text, `@`/`*` for whole arrays), `operator` and `argument`
      (the default/alternate word, itself decomposed), `braced`;
    - command: `$(…)` or backticks — `body` is the inner text;
    - arithmetic: `$((…))` / `$[…]` — `body` is the expression text, `argument` the same
      text lexed as a word (its `$X` pieces);
    - process: `<(…)` / `>(…)`;
    - bad_substitution: `${…}` whose inside is not a parameter (`${oc.env:HOME}`): bash fails
      at run time when it expands it.
    `quoted` is the quoting the piece sits in (a `$X` inside "…" is "double").
    """

    kind: PieceKind
    span: Span
    text: str  # raw source text of the piece
    quoted: Literal["none", "single", "double", "ansi_c"] = "none"
    value: str = ""  # literal pieces: the characters bash produces
    name: str | None = None
    index: str | None = None
    operator: ExpansionOp | None = None
    argument: "Word | None" = None
    braced: bool = False
    body: str | None = None


@record
class Word:
    """A shell word (argv element, assignment value, array element, case pattern)."""

    span: Span
    text: str  # raw source text
    pieces: tuple[Piece, ...] = ()

    @property
    def quoting(self) -> Quoting:
        kinds = {p.quoted for p in self.pieces}
        if not kinds:
            return "none"
        return kinds.pop() if len(kinds) == 1 else "mixed"  # type: ignore[return-value]

    @property
    def literal(self) -> str | None:
        """The word's value if it has no expansions, else None."""
        pieces = self.pieces
        if len(pieces) == 1:  # most words
            return pieces[0].value if pieces[0].kind == "literal" else None
        if all(p.kind == "literal" for p in pieces):
            return "".join(p.value for p in pieces)
        return None

    def expansions(self) -> Iterator[Piece]:
        """Every variable / command / arithmetic piece, including those inside defaults."""
        for p in self.pieces:
            if p.kind != "literal":
                yield p
            if p.argument is not None:
                yield from p.argument.expansions()

    def variables(self) -> Iterator[Piece]:
        return (p for p in self.expansions() if p.kind == "variable")


@record
class Comment:
    span: Span
    text: str  # including the leading '#'


@record
class ParseError:
    """A place where bash itself would reject the script (`bash -n`)."""

    span: Span
    message: str


@record
class Heredoc:
    span: Span  # the `<<EOF` operator through the end delimiter
    delimiter: str
    quoted: bool  # `<<'EOF'`: no expansion in the body
    body: Word | None = None  # the body as a word (pieces expand unless quoted)


@record
class Redirect:
    span: Span
    operator: str  # `>`, `>>`, `2>&1`'s `>&`, `<`, `<<`, `<<<`, `&>` …
    descriptor: str | None = None
    target: Word | None = None


@record
class BranchRef:
    """Branch `branch` (0-based item / if-elif-else arm) of block `block` (a node id)."""

    block: int
    branch: int


@record
class _Node:
    id: int  # unique in the model (blocks are referenced by it from `BranchRef`)
    span: Span
    path: tuple[BranchRef, ...] = ()
    function: str | None = None
    conditional: bool = False  # right-hand side of `&&`/`||`: may not run
    # `&&` / `||` when the statement is itself the right-hand side of one in its own list (a
    # statement inside `cond && { …; }` is `conditional` but runs in order within the group)
    after: str = ""
    background: bool = False  # ended by `&`


@record
class ArrayLiteral:
    span: Span  # `( … )`
    elements: tuple[Word, ...] = ()


@record
class Assignment(_Node):
    """`X=v`, `X+=v`, `ARR=( … )`, `ARR+=( … )`, `ARR[i]=v`, `export X=v`, `export X`, `local`…

    `value` and `array` are both None for a bare declaration (`export X`, `local X`).
    `command_prefix` is True for `X=1 cmd` (the variable is set for that command only).
    """

    kind: Literal["assignment"] = "assignment"
    name: str
    name_span: Span
    index: Word | None = None  # `ARR[i]=…`
    append: bool = False  # `+=`
    value: Word | None = None
    array: ArrayLiteral | None = None
    declared_by: Literal["export", "local", "declare", "typeset", "readonly"] | None = None
    flags: tuple[str, ...] = ()  # declare/export flags (`-a`, `-x`, `-g` …)
    command_prefix: bool = False

    @property
    def exported(self) -> bool:
        if self.declared_by == "export":
            return True
        # most assignments have no flags: no generator to start (the interpreter asks each one)
        return bool(self.flags) and any("x" in f for f in self.flags if f.startswith("-"))


@record
class Unset(_Node):
    kind: Literal["unset"] = "unset"
    words: tuple[Word, ...] = ()
    names: tuple[str, ...] = ()  # literal names only
    functions: bool = False  # `unset -f`


@record
class SetOptions(_Node):
    """`set -xeuo pipefail`, `set +e`, `set -o nounset`; long option names."""

    kind: Literal["set"] = "set"
    enable: tuple[str, ...] = ()  # errexit, nounset, xtrace, pipefail, …
    disable: tuple[str, ...] = ()
    words: tuple[Word, ...] = ()


@record
class Command(_Node):
    """A simple command: `words[0]` is the command name. Tests `[ … ]` / `[[ … ]]` are commands
    too (named `[` / `[[`, words = operands and operators), so their expansions are visible."""

    kind: Literal["command"] = "command"
    words: tuple[Word, ...] = ()
    prefix: tuple[Assignment, ...] = ()  # `CUDA_VISIBLE_DEVICES=0 python3 …`
    redirects: tuple[Redirect, ...] = ()
    heredocs: tuple[Heredoc, ...] = ()

    @property
    def name(self) -> str | None:
        return self.words[0].literal if self.words else None

    @property
    def args(self) -> tuple[Word, ...]:
        return self.words[1:]


@record
class Pipeline(_Node):
    """`a | b | c` (`negated` for `! a`)."""

    kind: Literal["pipeline"] = "pipeline"
    parts: tuple["Statement", ...] = ()
    negated: bool = False


@record
class CaseItem:
    span: Span
    patterns: tuple[Word, ...] = ()
    body: tuple["Statement", ...] = ()
    terminator: str = ";;"  # `;;`, `;&`, `;;&` or "" for the last item without one

    @property
    def is_default(self) -> bool:
        return any(p.text == "*" for p in self.patterns)

    @property
    def literal_patterns(self) -> tuple[str, ...]:
        return tuple(p.literal for p in self.patterns if p.literal is not None)


@record
class Case(_Node):
    kind: Literal["case"] = "case"
    subject: Word
    items: tuple[CaseItem, ...] = ()

    @property
    def subject_variable(self) -> str | None:
        """`X` for `case "$X"` / `case ${X}` / `case "${X:-gpu}"`; else None."""
        ps = [p for p in self.subject.pieces if not (p.kind == "literal" and p.value == "")]
        if len(ps) == 1 and ps[0].kind == "variable" and ps[0].index is None:
            if ps[0].operator in (None, ":-", "-", ":=", "="):
                return ps[0].name
        return None

    @property
    def has_default(self) -> bool:
        return any(i.is_default for i in self.items)


@record
class Condition:
    """A test: `[ "$DEVICE" = npu ]`, `[[ $X == a ]]`, or any command list (`grep -q …`).

    `variable`/`operator`/`operand` are filled for simple string comparisons, and `subject` is
    the word that names the variable (`"${MODE:-fast}"`: its default is part of the value).
    """

    span: Span
    text: str
    statements: tuple["Statement", ...] = ()
    variable: str | None = None
    operator: str | None = None  # "=", "==", "!=", "-z", "-n"
    operand: str | None = None  # the literal compared against
    pattern: str | None = None  # the operand as a pattern (`shell.patterns`), for `[[ == ]]`
    subject: Word | None = None


@record
class IfBranch:
    kind: Literal["if", "elif", "else"]
    span: Span
    condition: Condition | None = None  # None for else
    body: tuple["Statement", ...] = ()


@record
class If(_Node):
    kind: Literal["if"] = "if"
    branches: tuple[IfBranch, ...] = ()

    @property
    def has_else(self) -> bool:
        return any(b.kind == "else" for b in self.branches)


@record
class Loop(_Node):
    """`for X in words`, `for ((…))`, `while cond`, `until cond`, `select`."""

    kind: Literal["loop"] = "loop"
    loop: Literal["for", "c_for", "while", "until", "select"]
    variable: str | None = None
    items: tuple[Word, ...] | None = None  # None: `for X` without `in` (iterates "$@")
    condition: Condition | None = None
    body: tuple["Statement", ...] = ()


@record
class Function(_Node):
    kind: Literal["function"] = "function"
    name: str
    name_span: Span
    body: tuple["Statement", ...] = ()


@record
class Group(_Node):
    """`{ …; }` or `( … )` (subshell: assignments inside do not escape)."""

    kind: Literal["group"] = "group"
    subshell: bool = False
    body: tuple["Statement", ...] = ()


@record
class Other(_Node):
    """Anything else (`[[ … ]]` used as a statement, `((…))`, error regions) — kept for spans."""

    kind: Literal["other"] = "other"
    text: str = ""


Statement = Union[Assignment, Unset, SetOptions, Command, Pipeline, Case, If, Loop, Function,
                  Group, Other]
Block = Union[Case, If]


@shared_dataclass(kw_only=True)  # not a record (no slots): the flat views below are cached properties
class ScriptModel:
    """The parsed script (equal to another when the statements, comments and errors are)."""

    body: tuple[Statement, ...] = ()
    comments: tuple[Comment, ...] = ()
    errors: tuple[ParseError, ...] = ()
    heredocs: tuple[Heredoc, ...] = ()
    length: int = 0  # bytes in the document
    # why verl-lint could not read the script (nesting past Python's stack, the parse's time
    # ran out): not bash's verdict, so no VL001; the file is reported as not linted
    unread: str | None = None
    # tree-sitter's tree, kept only when it has errors: VL001 reads which constructs it left
    # open instead of parsing the file again
    syntax: Any = field(default=None, repr=False, compare=False)
    source: SourceText | None = field(default=None, repr=False, compare=False)  # the parsed text
    span_factory: Callable[[int, int], Span] | None = field(default=None, repr=False,
                                                            compare=False)

    @property
    def span(self) -> Callable[[int, int], Span | None]:
        """`span(start, end)`: a Span for bytes [start, end) of the parsed text (None when the
        model was built without a source)."""
        if self.span_factory is not None:
            return self.span_factory
        src = self.source
        return src.span if src is not None else (lambda start, end: None)

    # ---- flat views (source order) -------------------------------------------------------
    @cached_property
    def words(self) -> tuple[Word, ...]:
        """Every word of every statement (`words_of`), in statement order; rules walk it often."""
        return tuple(w for s in self.statements for w in words_of(s))

    @cached_property
    def statements(self) -> tuple[Statement, ...]:
        """Every statement, nested ones included, in source order (pipelines and their parts)."""
        out: list = []
        stack = [iter(self.body)]  # iterative pre-order: deep nesting must not recurse
        while stack:
            s = next(stack[-1], None)
            if s is None:
                stack.pop()
                continue
            out.append(s)
            if type(s) in _LEAVES:  # most statements: no `children` call to learn it
                continue
            for group in reversed(children(s)):
                stack.append(iter(group))
        return tuple(out)

    @cached_property
    def commands(self) -> tuple[Command, ...]:
        return tuple(s for s in self.statements if isinstance(s, Command))

    @cached_property
    def assignments(self) -> tuple[Assignment, ...]:
        """Standalone assignments and declarations plus command-prefix ones."""
        out: list[Assignment] = []
        for s in self.statements:
            if isinstance(s, Assignment):
                out.append(s)
            elif isinstance(s, Command):
                out.extend(s.prefix)
        out.sort(key=lambda a: a.span.start)
        return tuple(out)

    @cached_property
    def arrays(self) -> tuple[Assignment, ...]:
        """`ARR=( … )` and `ARR+=( … )` assignments."""
        return tuple(a for a in self.assignments if a.array is not None)

    @cached_property
    def blocks(self) -> dict[int, Block]:
        return {s.id: s for s in self.statements if isinstance(s, (Case, If))}

    @cached_property
    def functions(self) -> dict[str, Function]:
        return {s.name: s for s in self.statements if isinstance(s, Function)}

    def block(self, block_id: int) -> Block:
        return self.blocks[block_id]

    @cached_property
    def _targets(self) -> tuple[list[int], list[Span]]:
        spans: list[Span] = []
        for s in self.statements:
            # a compound command is a target as a whole, as in shellcheck: a directive above a
            # `case`, `if`, loop, function or pipeline covers all of it
            if isinstance(s, (Command, Assignment, Unset, SetOptions, Case, If, Loop, Function,
                              Group, Pipeline)):
                spans.append(s.span)
            if isinstance(s, Command):
                spans.extend(a.span for a in s.prefix)
            if isinstance(s, Assignment) and s.array is not None:
                spans.extend(w.span for w in s.array.elements)
        spans.sort(key=lambda sp: (sp.start, -sp.end))
        return [sp.start for sp in spans], spans

    def next_statement_span(self, offset: int) -> Span | None:
        """The statement (simple or compound, the outermost one) or array element starting
        first at or after `offset`."""
        starts, spans = self._targets
        i = bisect_left(starts, offset)
        return spans[i] if i < len(spans) else None


# the statements that hold no statements (`children` gives them none)
_LEAVES = frozenset({Assignment, Unset, SetOptions, Command, Other})


def words_of(s) -> Iterator[Word]:
    """The words a statement itself holds (not those of nested statements)."""
    if isinstance(s, Assignment):
        if s.index is not None:
            yield s.index
        if s.value is not None:
            yield s.value
        if s.array is not None:
            yield from s.array.elements
    elif isinstance(s, Command):
        for a in s.prefix:
            yield from words_of(a)
        yield from s.words
        for r in s.redirects:
            if r.target is not None:
                yield r.target
        for h in s.heredocs:
            if h.body is not None and not h.quoted:
                yield h.body
    elif isinstance(s, (Unset, SetOptions)):
        yield from s.words
    elif isinstance(s, Case):
        yield s.subject
        for item in s.items:
            yield from item.patterns
    elif isinstance(s, Loop) and s.items is not None:
        yield from s.items


def children(s) -> list[tuple]:
    """The statement lists nested directly in a statement."""
    if isinstance(s, (Function, Group, Loop)):
        out = [s.body]
        if isinstance(s, Loop) and s.condition is not None:
            out.insert(0, s.condition.statements)
        return out
    if isinstance(s, Pipeline):
        return [s.parts]
    if isinstance(s, Case):
        return [i.body for i in s.items]
    if isinstance(s, If):
        out = []
        for b in s.branches:
            if b.condition is not None:
                out.append(b.condition.statements)
            out.append(b.body)
        return out
    return []

