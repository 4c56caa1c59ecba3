"""Abstract interpretation of a ScriptModel under one Scenario.

The interpreter walks the statements in order with a variable state. A branch whose condition
is known in the scenario (`case "$DEVICE"` when DEVICE=npu) runs alone; an unknown condition runs
every arm on a copy of the state and merges them (a variable that differs becomes `Unknown`).
Values the script cannot know are `Unknown(reason)`; nothing is guessed.
"""

from __future__ import annotations

import dataclasses
import re
from itertools import chain, compress
from operator import attrgetter, not_

from verl_lint.evaluate import arith
from verl_lint.evaluate.launch import detect_launch
from verl_lint.evaluate.model import (
    ALL_VISIBLE_DEVICE_VARS, VISIBLE_DEVICE_VARS, Anchored, Launch, Scenario, ScenarioRun, Unknown,
    VarUse,
)
from verl_lint.evaluate.values import (
    MAX_ELEMENTS, MAX_VALUE, TOO_LONG, BarePart, Field, Part, capped, join_values, parts_value,
    unknown,
)
from verl_lint.records import positional
from verl_lint.shell import braces, patterns
from verl_lint.shell.lexer import arithmetic_assignments
from verl_lint.shell.model import (
    Assignment, Case, Command, Function, Group, If, Loop, Other, Piece, Pipeline, ScriptModel,
    SetOptions, Unset, Word, children,
)
from verl_lint.source import Span

# always provided by the environment or by bash itself
ENV_NAMES = frozenset({
    "HOME", "PATH", "USER", "LOGNAME", "PWD", "OLDPWD", "SHELL", "HOSTNAME", "LANG", "TERM",
    "TMPDIR", "RANDOM", "SECONDS", "LINENO", "BASH_SOURCE", "BASHPID", "BASH_VERSION",
    "BASH_VERSINFO", "FUNCNAME", "HOSTTYPE", "OSTYPE", "MACHTYPE", "UID", "EUID", "PPID", "IFS",
    "PS1", "PS4", "PIPESTATUS", "SHLVL", "BASH", "GROUPS", "EPOCHSECONDS", "EPOCHREALTIME",
})
ENV_PREFIXES = ("SLURM_", "PBS_", "LSB_", "LC_", "XDG_")
_MAX_CALL_DEPTH = 8
_MAX_UNROLL = 16
_MAX_ARITH_LOOKUPS = 10_000
# statements interpreted per scenario: unrolled loops and calls nest multiplicatively
_MAX_STEPS = 20_000
_MAX_PARTS = 64  # known and unknown pieces a value keeps apart (`X="$X$X"` must not double)
_var_use = positional(VarUse)  # one per variable use: see `positional`
_DEFAULT_OPS = frozenset({":-", "-", ":=", "=", ":+", "+", ":?", "?"})  # `${X:-word}` & co
# `${A[@]}`, `"$@"`: a set, not a tuple, since most names and indexes tested are not (None
# compared with each string of a tuple costs more than one hash lookup)
_WHOLE = frozenset({"@", "*"})


class BudgetExceeded(Exception):
    """The script would take too long to interpret (hostile nesting of loops or calls)."""
_IFS_SPLIT = re.compile(r"([ \t\n]+)")  # keeps the separators: odd items are blanks
# pathname expansion: what bash matches against file names. A `[…]` with a comma or a quote
# is a Hydra list (`trainer.logger=["console","wandb"]`): it would only match a file named like
# `trainer.logger=c`, and verl-lint reads the same list written literally as itself too
_GLOB = re.compile(r"[*?]|\[[^]/,'\"]+\]")
_ANY_GLOB = re.compile(r"[*?]|\[[^]]+\]")  # under nullglob even `[a,b]` vanishes
_NPU_WORD = re.compile(r"\bnpu\b")  # not `torch_npu`
_GPU_WORD = re.compile(r"\bgpu\b")


def is_environment(name: str, known_env: frozenset[str]) -> bool:
    return name in ENV_NAMES or name in known_env or name.startswith(ENV_PREFIXES)


class Var:
    __slots__ = ("parts", "array", "exported", "status", "fed_by", "note", "env", "keys", "kept")

    def __init__(self, parts=None, array=None, exported=False, status="set", fed_by=(),
                 note="", env=False, keys=None) -> None:
        self.parts = parts  # tuple[Part] for scalars
        self.array = array  # list[Field] for arrays
        # associative arrays (`declare -A`): key → parts, or an Unknown for unknown contents
        self.keys = keys
        self.exported = exported
        self.status = status  # "set" | "maybe"
        self.fed_by = fed_by
        self.note = note
        self.env = env  # pinned from outside (--device / --set)
        # `_merges_to_itself`, worked out once: a binding is never changed once made (a new
        # value is a new Var), and every merge the binding lives through asks again
        self.kept: bool | None = None

    def replace(self, **kw) -> "Var":
        v = Var(self.parts, self.array, self.exported, self.status, self.fed_by, self.note,
                self.env, self.keys)
        for k, val in kw.items():
            setattr(v, k, val)
        return v

    def same_value(self, other: "Var") -> bool:
        if (self.array is None) != (other.array is None) or \
                (self.keys is None) != (other.keys is None):
            return False
        if self.keys is not None:
            return _keys_value(self.keys) == _keys_value(other.keys)
        if self.array is not None:
            return len(self.array) == len(other.array) and all(
                a.value == b.value for a, b in zip(self.array, other.array))
        return parts_value(self.parts) == parts_value(other.parts)


def _feeding(acc: list) -> tuple:
    """The spans that fed a word, once each, from its (variable, spans) uses: most words use
    one variable set in one place, and take its spans as they are (thousands of words a run)."""
    if len(acc) == 1:
        fed = acc[0][1]
        if type(fed) is tuple and len(fed) <= 1:
            return fed
    spans = []
    for _, fed in acc:  # a loop, not a comprehension (a call): a third of the words use none
        if fed:  # `X=${X:-d}`: X is unset, `d` feeds nothing
            spans.append(fed)
    if not spans:
        return ()
    if len(spans) == 1 and type(spans[0]) is tuple and len(spans[0]) == 1:
        return spans[0]
    return tuple(dict.fromkeys(chain.from_iterable(spans)))


_KEPT = attrgetter("kept")


def _names_to_merge(bindings: list[dict[str, Var]]) -> dict[str, None]:
    """The variables a merge of these paths' bindings must work out: those some path binds
    otherwise (or not at all), and those every path left alone whose merge with itself would
    change them (`_merges_to_itself`). Found in C where it can be (items compare their Var by
    identity): a script has hundreds of variables, a branch changes a few, and a merge per `&&`
    that walked them all was most of the merging."""
    first = bindings[0]
    todo = dict.fromkeys(name for other in bindings[1:]
                         for name, _ in first.items() ^ other.items())
    for name in compress(first, map(not_, map(_KEPT, first.values()))):  # kept: None / False
        v = first[name]
        if name not in todo and not (v.kept is None and _merges_to_itself(v)):
            todo[name] = None
    return todo


def _merges_to_itself(v: Var) -> bool:
    """Whether `merge` of `v` with itself (every path kept the same binding) gives back its
    values: its status, note, feeding spans and export flag as the merge would write them."""
    kept = v.kept
    if kept is None:
        kept = v.kept = (v.status == "set" and v.note == "" or v.status == "maybe" and isinstance(
            v.note, str)) and type(v.fed_by) is tuple and (
                len(v.fed_by) <= 1 or len(set(v.fed_by)) == len(v.fed_by)) \
            and type(v.exported) is bool
    return kept


_SELF = r'"?\$(?:0|\{0\}|\{BASH_SOURCE(?:\[0\])?\}|BASH_SOURCE)"?'
_SELF_PATH = rf'(?:{_SELF}|"?\$\((?:realpath|readlink\s+-[fe])\s+{_SELF}\)"?)'
_DIRNAME = rf'"?\$\(\s*dirname\s+(?:--\s+)?{_SELF_PATH}\s*\)(?P<rest>/[\w./-]*)?"?'
_SCRIPT_DIR = (
    re.compile(rf"dirname\s+(?:--\s+)?{_SELF_PATH}"),
    re.compile(rf"(?:realpath|readlink\s+-[fe])\s+{_DIRNAME}"),
    re.compile(rf"cd\s+(?:--\s+)?{_DIRNAME}\s*(?:(?:&>|>)\s*/dev/null(?:\s*2>&1)?\s*)?"
               r"(?:&&|;)\s*pwd(?:\s+-[PL])?"),
)
_PWD = re.compile(r"pwd(?:\s+-[PL])?")


def location_of(body: str) -> "str | tuple[str, str] | None":
    """`"cwd"` for `$(pwd)`; `("script_dir", rest)` for the idioms that print the script's own
    folder (`dirname "$0"`, `cd "$(dirname "${BASH_SOURCE[0]}")" && pwd`, `realpath …`),
    with the path text after it (`/..`); None for any other command."""
    text = body.strip()
    if _PWD.fullmatch(text):
        return "cwd"
    for pattern in _SCRIPT_DIR:
        m = pattern.fullmatch(text)
        if m:
            return "script_dir", m.groupdict().get("rest") or ""
    return None


class State:
    __slots__ = ("vars", "options", "positional", "taint", "dead", "returned", "funcs",
                 "elsewhere", "aliases")

    def __init__(self) -> None:
        self.vars: dict[str, Var] = {}
        self.options: set[str] = set()
        self.positional: list[Field] | None = None  # None: the script's own "$@" (unknown)
        self.taint: str | None = None  # a `source`/`eval` may have set any variable
        self.dead = False  # `exit` ran
        self.returned = False  # `return` ran inside a function
        self.funcs: dict[str, Function] = {}
        # name → "only the gpu branch … assigns it", a `_Label`: str() makes the text
        self.elsewhere: dict[str, _Label] = {}
        self.aliases: dict[str, list[str] | None] = {}  # `alias PY=python3` (None: unknown)

    def copy(self) -> "State":
        s = State()
        s.vars = dict(self.vars)
        s.options = set(self.options)
        s.positional = self.positional
        s.taint = self.taint
        s.dead = self.dead
        s.returned = self.returned
        s.funcs = dict(self.funcs)
        s.elsewhere = dict(self.elsewhere)
        s.aliases = dict(self.aliases)
        return s


def _assigned_names(stmts) -> list[str]:
    """Variables assigned anywhere inside a statement list (static)."""
    out: list[str] = []
    stack = [iter(stmts)]  # iterative, in source order: a recursive closure is a reference cycle
    while stack:
        s = next(stack[-1], None)
        if s is None:
            stack.pop()
            continue
        if isinstance(s, Assignment) and (s.value is not None or s.array is not None):
            out.append(s.name)
        stack.extend(map(iter, reversed(children(s))))
    return out


class Interpreter:
    def __init__(self, model: ScriptModel, scenario: Scenario, known_env: frozenset[str],
                 device_var: str | None) -> None:
        self.model = model
        self.scenario = scenario
        self.known_env = known_env
        self.device_var = device_var
        self.launches: list[Launch] = []
        self.uses: dict[tuple[int, str], VarUse] = {}
        # per function call: outer values of its `local`s and `N=4 fn` prefixes, restored after
        self.frames: list[dict[str, Var | None]] = []
        self.first_launch_state: tuple[bool, object] | None = None
        # bound once: every override asks for two spans (the model's is the span factory's
        # bound `__call__`, the cheap way to call it)
        self.span_of = model.span
        self.steps = _MAX_STEPS

    # ------------------------------------------------------------------------------------------
    def run(self) -> ScenarioRun:
        st = State()
        # a device value the scenario assumes, for a script that never assigns the variable,
        # reaches its uses only when the caller exports it
        self.assumed = {n for n in self.scenario.assumed
                        if not any(a.name == n and (a.value is not None or a.array is not None)
                                   for a in self.model.assignments)}
        for name, value in self.scenario.pins:
            st.vars[name] = Var(parts=(Part(value),), exported=True, env=True)
        self.block(self.model.body, st)
        nounset, (visible, visible_from) = (
            self.first_launch_state if self.first_launch_state is not None
            else ("nounset" in st.options, self.visible_devices(st, ())))
        uses = [self.uses[k] for k in sorted(self.uses)]  # keys: (span.start, name)
        return ScenarioRun(scenario=self.scenario, launches=self.launches, var_uses=uses,
                           nounset=nounset, visible_devices=visible,
                           visible_devices_from=visible_from)

    def block(self, stmts, st: State) -> State:
        self.steps -= len(stmts)
        if self.steps < 0:
            raise BudgetExceeded
        prev = None
        for s in stmts:
            if st.dead or st.returned:
                break
            if s.after:
                alt = st.copy()
                self.stmt(s, alt)
                merged = self.merge([alt, st], ["when the command before `&&`/`||` allows it",
                                                "otherwise"])
                _assign_state(st, merged)
                if alt.dead and isinstance(prev, Command):
                    self.narrow_guard(prev, s, st)
            else:
                self.stmt(s, st)
                prev = s
        return st

    def narrow_guard(self, test: Command, then, st: State) -> None:
        """`[ -z "$X" ] && { echo …; exit 1; }` (or `[ -n "$X" ] || exit 1`): past it X is set."""
        guard = guard_test(test)
        if guard is None or guard[0] in st.vars:
            return
        if (guard[1], then.after) in (("-z", "&&"), ("-n", "||")):
            st.vars[guard[0]] = Var(parts=(Part(unknown(
                f"${guard[0]} is only known to be non-empty here")),), exported=True,
                fed_by=(test.span,))

    def stmt(self, s, st: State) -> None:
        if isinstance(s, Assignment):
            self.assign(s, st)
        elif isinstance(s, Command):
            self.command(s, st)
        elif isinstance(s, Pipeline):
            if len(s.parts) == 1:
                self.stmt(s.parts[0], st)
            else:
                for part in s.parts:  # each part of a pipeline runs in a subshell
                    self.stmt(part, st.copy())
        elif isinstance(s, SetOptions):
            for o in s.enable:
                st.options.add(o)
            for o in s.disable:
                st.options.discard(o)
        elif isinstance(s, Unset):
            for w in s.words:
                self.expand_fields(w, st)
            for n in s.names:
                if s.functions:
                    st.funcs.pop(n, None)
                elif "[" in n:
                    self.unset_element(n, st)
                else:
                    st.vars.pop(n, None)
        elif isinstance(s, Case):
            self.case(s, st)
        elif isinstance(s, If):
            self.if_(s, st)
        elif isinstance(s, Loop):
            self.loop(s, st)
        elif isinstance(s, Function):
            st.funcs[s.name] = s
        elif isinstance(s, Group):
            if s.subshell:
                self.block(s.body, st.copy())
            else:
                self.block(s.body, st)
        elif isinstance(s, Other) and s.text.lstrip().startswith("(("):
            self.arithmetic_command(s.text, s.span, st)

    def arithmetic_command(self, text: str, span, st: State) -> None:
        """`(( TP += 1 ))`, `let "PP = 2"`: what they assign is not evaluated, so unknown."""
        for name in arithmetic_assignments(text):
            st.vars[name] = Var(parts=(Part(unknown(f"${name} is set by `{_short(text)}`")),),
                                fed_by=(span,))

    # -- control flow ------------------------------------------------------------------------
    def merge(self, states: list[State], labels: list) -> State:
        """`labels`: each state's way here (a str, or a `_Label` made when a note needs it)."""
        alive = [(s, lab) for s, lab in zip(states, labels) if not s.dead]
        if not alive:
            out = states[0].copy()
            out.dead = True
            return out
        if len(alive) == 1:
            return alive[0][0]
        base = alive[0][0].copy()
        for name in _names_to_merge([s.vars for s, _ in alive]):  # `base` holds the others
            have = [(s.vars.get(name), lab) for s, lab in alive]
            present = [(v, lab) for v, lab in have if v is not None]
            first = present[0][0]
            same = all(v.same_value(first) for v, _ in present)
            status = "set" if len(present) == len(have) and all(
                v.status == "set" for v, _ in present) else "maybe"
            note = ""
            who = " and ".join(str(lab) for _, lab in present) if len(present) < len(have) \
                else ""
            if len(present) < len(have):
                note = f"only {who} assign{'s' if len(present) == 1 else ''} it"
            elif status == "maybe":
                note = next((v.note for v, _ in present if v.note), "")
            fed = tuple(dict.fromkeys(chain.from_iterable(v.fed_by for v, _ in present)))
            exported = any(v.exported for v, _ in present)
            if same and len(present) == len(have):
                base.vars[name] = first.replace(status=status, note=note, fed_by=fed,
                                                exported=exported)
                continue
            reason = (f"${name} differs between " + " and ".join(str(lab) for _, lab in have))
            if len(present) < len(have):
                reason = f"${name} is only set by {who}"
            arr = None
            if first.array is not None and all(v.array is not None for v, _ in present):
                # e.g. `ARR+=(…)` in one arm: the common elements plus an unknown tail
                arrays = [v.array if v is not None else [] for v, _ in have]
                common = _common_prefix(arrays)
                longer = [str(lab) for a, (_, lab) in zip(arrays, have) if len(a) > len(common)]
                if len(longer) == len(have):
                    reason = f"elements of {name} differ between {' and '.join(longer)}"
                elif longer:
                    reason = f"elements of {name} that only {' / '.join(longer)} add"
                tail = next((a[len(common)] for a in arrays if len(a) > len(common)), None)
                arr = common + [Field([Part(unknown(reason))],
                                      tail.span if tail is not None else
                                      (common[-1].span if common else first.fed_by[-1]),
                                      array=name, passthrough=reason)]
            base.vars[name] = Var(parts=None if arr is not None else (Part(unknown(reason)),),
                                  array=arr, exported=exported, status=status, fed_by=fed,
                                  note=note)
        # an option (`set -u`) is in force only when every path that reaches here set it
        base.options = set.intersection(*(s.options for s, _ in alive))
        for s, _ in alive[1:]:
            for k, v in s.elsewhere.items():
                base.elsewhere.setdefault(k, v)
            base.funcs.update(s.funcs)
            base.aliases.update(s.aliases)
            if s.taint and not base.taint:
                base.taint = s.taint
        base.returned = all(s.returned for s, _ in alive)
        return base

    def note_untaken(self, st: State, stmts, label) -> None:
        names = _assigned_names(stmts)
        if names:  # the note is made when a use of an unset name reads it
            note = _Label("only {} assigns it".format, label)
            for name in names:
                st.elsewhere.setdefault(name, note)

    def case(self, s: Case, st: State) -> None:
        subject = parts_value(self.expand_scalar(s.subject, st))
        # `;;&` goes on testing the next patterns: not modelled, so every arm may run
        if isinstance(subject, str) and all(i.terminator != ";;&" for i in s.items):
            taken = None
            for k, item in enumerate(s.items):
                pats = [self.pattern(p, st) for p in item.patterns]
                hits = [None if isinstance(p, Unknown) else patterns.match(subject, p)
                        for p in pats]
                if True in hits:
                    taken = k
                    break
                if None in hits:  # a pattern verl-lint cannot read or know: undecided
                    taken = None
                    break
            else:
                for item in s.items:
                    self.note_untaken(st, item.body, _Label(_item_label, s, item))
                return
            if taken is not None:
                for k, item in enumerate(s.items):
                    if k != taken:
                        self.note_untaken(st, item.body, _Label(_item_label, s, item))
                k = taken
                while k < len(s.items):
                    self.block(s.items[k].body, st)
                    if s.items[k].terminator != ";&":
                        break
                    k += 1
                return
        # unknown subject: every arm may run
        states, labels = [], []
        for item in s.items:
            alt = st.copy()
            self.block(item.body, alt)
            states.append(alt)
            labels.append(_Label(_item_label, s, item))
        if not s.has_default:
            states.append(st.copy())
            labels.append("no branch")
        _assign_state(st, self.merge(states, labels))

    def pattern(self, w: Word, st: State) -> "str | Unknown":
        """A `case` pattern (see `shell.patterns`): what is quoted or escaped matches itself
        (`"*")` is a star, not a wildcard), what is not (`gpu*`, an unquoted `$PAT`) globs."""
        out = []
        for p in w.pieces:
            if p.kind == "literal":
                out.append(patterns.of_piece(p, p.value))
                continue
            kind, val = self.piece(p, st, [], p.quoted == "double")
            text = join_values([f.value for f in val]) if kind == "fields" else parts_value(val)
            if not isinstance(text, str):
                return text
            out.append(patterns.of_piece(p, text))
        return "".join(out)

    def condition(self, cond, st: State) -> bool | None:
        if cond is None:
            return True
        if cond.variable is None:
            return self.test_list(cond.statements, st)
        if cond.variable in st.vars and cond.subject is not None \
                and any(p.operator for p in cond.subject.variables()):
            # `[ "${MODE:-fast}" = fast ]` after `MODE=`: the default is part of the value
            v = parts_value(self.expand_scalar(cond.subject, st))
        else:  # not assigned here: undecided, the test may be asking about the environment
            v = self.lookup_value(cond.variable, st)
        if not isinstance(v, str):
            return None
        if cond.operator == "-z":
            return v == ""
        if cond.operator == "-n":
            return v != ""
        if cond.operand is None:
            return None
        if "[[" in cond.text:  # `==` matches a pattern there (set with every literal operand)
            eq = patterns.match(v, cond.pattern)
            if eq is None:
                return None
        else:
            eq = v == cond.operand
        return eq if cond.operator in ("=", "==") else not eq

    def test_list(self, stmts, st: State) -> bool | None:
        """`[ "$A" = x ] && [ "${N}" -gt 1 ] || …` of tests: decided when every test that
        matters is (left to right, as bash runs `&&` and `||`)."""
        verdict: bool | None = None
        for k, s in enumerate(stmts):
            if not isinstance(s, Command) or s.prefix or (k and s.after not in ("&&", "||")):
                return None
            if k and (verdict is (s.after == "||")):
                continue  # short-circuit: this test does not run
            v = self.test_verdict(s, st)
            if k and verdict is None:
                verdict = None if v is None or v is (s.after == "&&") else v
            else:
                verdict = v
        return verdict

    def test_verdict(self, c: Command, st: State) -> bool | None:
        """`[ A = B ]`, `[[ A != B ]]`, `test -z A`, `[ A -gt B ]`… on known words, else None."""
        words = c.words
        name = words[0].literal if words else None
        close = {"[": "]", "[[": "]]", "test": None}.get(name or "", "")
        if close == "" or (close and (len(words) < 2 or words[-1].literal != close)):
            return None
        operands = words[1:-1] if close else words[1:]
        vals = []
        for w in operands:
            v = parts_value(self.expand_scalar(w, st))
            unquoted = any(p.kind != "literal" and p.quoted == "none" for p in w.pieces)
            if not isinstance(v, str) or (unquoted and name != "[[" and
                                          (v == "" or _IFS_SPLIT.search(v))):
                return None  # unknown, or split by `[` into other operands
            vals.append(v)
        if len(vals) == 1:
            return vals[0] != ""
        if len(vals) == 2 and vals[0] in ("-z", "-n") and operands[0].literal is not None:
            return (vals[1] == "") == (vals[0] == "-z")
        if len(vals) != 3 or operands[1].literal is None:
            return None
        a, op, b = vals
        if op in ("=", "==", "!="):
            if name == "[[":
                eq = patterns.match(a, self.pattern(operands[2], st))
                if eq is None:
                    return None
            else:
                eq = a == b
            return eq if op != "!=" else not eq
        ints = {"-eq": int.__eq__, "-ne": int.__ne__, "-lt": int.__lt__, "-le": int.__le__,
                "-gt": int.__gt__, "-ge": int.__ge__}
        if op in ints and re.fullmatch(r"\s*-?\d+\s*", a) and re.fullmatch(r"\s*-?\d+\s*", b):
            return ints[op](int(a), int(b))
        return None

    def if_(self, s: If, st: State) -> None:
        _assign_state(st, self._if_from(s, 0, st))

    def _if_from(self, s: If, k: int, st: State) -> State:
        """The state after branches k… of `s` (the earlier ones were not taken)."""
        if k >= len(s.branches):
            return st
        b = s.branches[k]
        if b.condition is not None:
            self.block(b.condition.statements, st)  # expansions in the test are uses too
        verdict = self.condition(b.condition, st)
        if verdict is True:
            for other in s.branches[k + 1:]:
                self.note_untaken(st, other.body, _Label(_branch_label, other))
            return self.block(b.body, st)
        if verdict is False:
            self.note_untaken(st, b.body, _Label(_branch_label, b))
            return self._if_from(s, k + 1, st)
        taken, rest = st.copy(), st.copy()
        _narrow(b.condition, taken, True)
        _narrow(b.condition, rest, False)
        taken = self.block(b.body, taken)
        rest = self._if_from(s, k + 1, rest)
        return self.merge([taken, rest], [_Label(_branch_label, b), _Label(_later_label, s, k)])

    def loop(self, s: Loop, st: State) -> None:
        if s.loop == "for" and s.items is not None and s.variable:
            fields = [f for w in s.items for f in self.expand_fields(w, st)]
            if len(fields) <= _MAX_UNROLL and all(
                    f.passthrough is None and isinstance(f.value, str) for f in fields):
                for f in fields:
                    st.vars[s.variable] = Var(parts=tuple(f.parts), fed_by=(s.span,))
                    self.block(s.body, st)
                    if st.dead:
                        return
                st.returned = False
                return
        if s.condition is not None:
            self.block(s.condition.statements, st)
        alt = st.copy()
        if s.variable:
            alt.vars[s.variable] = Var(parts=(Part(unknown(f"${s.variable} is a loop "
                                                           "variable")),), fed_by=(s.span,))
        self.block(s.body, alt)
        alt.dead = False  # `break`/`exit` inside a loop body: stay conservative
        _assign_state(st, self.merge([alt, st], [_Label(_loop_label, s),
                                                 "no iteration"]))

    # -- assignments ---------------------------------------------------------------------------
    def assign(self, a: Assignment, st: State, prefix_env: dict | None = None) -> None:
        target = prefix_env if prefix_env is not None else st.vars
        old = target.get(a.name) if prefix_env is None else (prefix_env.get(a.name)
                                                             or st.vars.get(a.name))
        if a.declared_by in ("local", "declare", "typeset") and self.frames and \
                a.name not in self.frames[-1]:
            self.frames[-1][a.name] = st.vars.get(a.name)
            if a.value is None and a.array is None:
                st.vars.pop(a.name, None)
                if any("A" in f for f in a.flags):
                    st.vars[a.name] = Var(keys={}, fed_by=(a.span,))
                return
        exported = a.exported or (old.exported if old is not None else False)
        if a.value is None and a.array is None:  # `export X`, `readonly X`
            if old is not None:
                target[a.name] = old.replace(exported=exported)
            elif "A" in "".join(a.flags):
                target[a.name] = Var(keys={}, exported=exported, fed_by=(a.span,))
            elif "a" in "".join(a.flags):
                target[a.name] = Var(array=[], exported=exported, fed_by=(a.span,))
            return
        assoc = bool(a.flags) and any("A" in f for f in a.flags) or (
            old is not None and old.keys is not None)
        if assoc:
            self.assign_assoc(a, old, st, target, exported)
            return
        keyed = a.array is not None and _subscripted(a.array.elements)
        if keyed and not _in_written_order(a.array.elements):
            # `A=([2]=x [0]=y)`: a sparse array's order is not modelled
            target[a.name] = Var(parts=(Part(unknown(f"${a.name} has keyed elements")),),
                                 exported=exported, fed_by=(a.span,))
            return
        if a.array is not None:
            expand = self.word_expander(st)
            elems = [f for w in a.array.elements for f in expand(w, st, a.name)]
            if keyed:  # `([0]=a [1]=b)`: the values, in the order written
                elems = [_without_subscript(f) for f in elems]
            if a.append and old is not None:
                base = old.array if old.array is not None else (
                    [Field(list(old.parts), a.name_span, array=a.name)] if old.parts else [])
                elems = list(base) + elems
            fed = ((old.fed_by if a.append and old is not None else ()) + (a.span,))
            target[a.name] = Var(array=_cap_array(elems, a), exported=exported, fed_by=fed)
            return
        parts, fed = self.expand_scalar(a.value, st, True, True)  # acc_fed, assignment
        attrs = "".join(f[1:] for f in a.flags if f.startswith("-")) if a.flags else ""
        if attrs and any(c in attrs for c in "luin"):  # `declare -l X=VLLM` stores vllm
            parts = (Part(self.declared_value(attrs, parts_value(parts), a, st)),)
        if a.index is not None:
            idx = parts_value(self.expand_scalar(a.index, st))
            arr = list(old.array) if old is not None and old.array is not None else (
                [Field(list(old.parts), a.name_span, array=a.name)] if old is not None
                and old.parts else [])
            try:  # the subscript is arithmetic: `A[i]=…` reads $i
                i = int(arith.evaluate(idx, _ArithLookup(self, a.index.span, st, []))) \
                    if isinstance(idx, str) else None
            except (arith.ArithUnknown, RecursionError, OverflowError, ValueError):
                i = None
            field = Field(list(parts), a.value.span, array=a.name, fed_by=fed)
            if i is None or i > len(arr) or i < 0:
                reason = f"index {a.index.text} of {a.name}"
                arr.append(Field([Part(unknown(reason))], a.span, array=a.name,
                                 passthrough=reason))
            elif i == len(arr):
                arr.append(field)
            else:
                arr[i] = field
            target[a.name] = Var(array=_cap_array(arr, a), exported=exported, fed_by=(a.span,))
            return
        if a.append and old is not None:
            if old.array is not None:
                arr = list(old.array)
                if arr:
                    arr[0] = arr[0].copy(parts=list(arr[0].parts) + list(parts))
                else:
                    arr.append(Field(list(parts), a.value.span, array=a.name))
                target[a.name] = Var(array=arr, exported=exported, fed_by=old.fed_by + (a.span,))
                return
            parts = tuple(old.parts or ()) + tuple(parts)
            fed = old.fed_by + fed
        # Var(parts=, array=, exported=, status=, fed_by=), positional: see expand_scalar
        target[a.name] = Var(tuple(parts), None, exported, "set", fed + (a.span,))

    def assign_assoc(self, a: Assignment, old: Var | None, st: State, target: dict,
                     exported: bool) -> None:
        """`declare -A M=([k]=v …)`, `M[k]=v`, `M[k]+=v`: the subscript is a string (not
        arithmetic, so `M[aime]` reads no `$aime`)."""
        keys = old.keys if old is not None and old.keys is not None else {}
        fed = (old.fed_by if old is not None else ()) + (a.span,)
        if a.array is not None:
            keys = {} if not a.append else keys
            for f in (f for w in a.array.elements for f in self.expand_fields(w, st)):
                text = f.value
                m = _SUBSCRIPT.match(text) if isinstance(text, str) else None
                if m is None or isinstance(keys, Unknown):
                    keys = unknown(f"the keys of associative array {a.name}")
                    break
                keys = {**keys, m.group(1): (Part(text[m.end():]),)}
        elif a.index is not None and a.value is not None:
            key = parts_value(self.expand_scalar(a.index, st))
            parts = self.expand_scalar(a.value, st)
            if isinstance(key, Unknown) or isinstance(keys, Unknown):
                keys = unknown(f"the keys of associative array {a.name}")
            else:
                prev = keys.get(key, ()) if a.append else ()
                keys = {**keys, key: tuple(prev) + tuple(parts)}
        target[a.name] = Var(keys=keys, exported=exported, fed_by=fed)

    @staticmethod
    def ifs_split(st: State):
        """The regex that splits unquoted expansions (bash's default IFS: blanks and
        newlines), or an Unknown when the script set IFS to something else."""
        ifs = st.vars.get("IFS")
        if ifs is None or (ifs.parts is not None and parts_value(ifs.parts) == " \t\n"):
            return _IFS_SPLIT
        return unknown("word splitting with the script's own $IFS")

    @staticmethod
    def joined(fields: list[Field], st: State):
        """`"${A[*]}"`: the elements joined by the first character of IFS (a space unless the
        script set IFS)."""
        ifs = st.vars.get("IFS")
        sep = " " if ifs is None else parts_value(ifs.parts) if ifs.parts is not None else None
        if not isinstance(sep, str):
            return unknown("joined with the script's $IFS")
        return join_values([f.value for f in fields], sep[:1])

    def unset_element(self, name: str, st: State) -> None:
        """`unset 'ARGS[0]'`: the element goes (`"${ARGS[@]}"` lists the others)."""
        var, _, index = name.partition("[")
        v = st.vars.get(var)
        if v is None or v.array is None:
            return
        index = index.rstrip("]")
        if index.isdigit() and int(index) < len(v.array):
            st.vars[var] = v.replace(array=v.array[:int(index)] + v.array[int(index) + 1:])
        else:  # an index to evaluate, or a sparse array already: which one is not modelled
            st.vars[var] = Var(parts=(Part(unknown(f"`unset {name}`")),), exported=v.exported,
                               fed_by=v.fed_by)

    def declared_value(self, attrs: str, value, a: Assignment, st: State):
        """The value `declare -l/-u/-i/-n` stores."""
        if isinstance(value, Unknown):
            return value
        if "n" in attrs:
            return unknown(f"${a.name} is a name reference")
        if "i" in attrs:
            try:
                return str(int(arith.evaluate(value, _ArithLookup(self, a.span, st, []))))
            except (arith.ArithUnknown, RecursionError, OverflowError, ValueError):
                return unknown(f"${a.name} is declared an integer: {_short(value)}")
        return value.lower() if "l" in attrs else value.upper() if "u" in attrs else value

    # -- commands --------------------------------------------------------------------------------
    def command(self, c: Command, st: State) -> None:
        prefix_env: dict[str, Var] = {}
        for a in c.prefix:
            self.assign(a, st, prefix_env)
        fields: list[Field] = []
        expand = self.word_expander(st)
        for w in c.words:
            fields.extend(expand(w, st, None))
        for r in c.redirects:
            if r.target is not None:
                self.expand_fields(r.target, st)
        for h in c.heredocs:
            if h.body is not None and not h.quoted:
                self.expand_scalar(h.body, st)
        if not fields:
            st.vars.update(prefix_env)  # `X=1 $(true)`: the assignment persists
            return
        name = fields[0].value
        if isinstance(name, str) and name in st.aliases and "expand_aliases" in st.options \
                and c.words[0].literal == c.words[0].text:  # an unquoted, unescaped name
            words = st.aliases[name]
            if words is None:
                return  # what the alias runs is not known
            fields = [Field([Part(x)], c.words[0].span) for x in words] + fields[1:]
            if not fields:
                return
            name = fields[0].value
        if isinstance(name, str):
            if self.builtin(name, fields, c, st):
                return
            fn = st.funcs.get(name)
            if fn is not None:
                self.call(fn, fields[1:], st, prefix_env)
                return
        launch = detect_launch(fields, c, self.span_of)
        if launch is not None:
            nounset = "nounset" in st.options
            visible = self.visible_devices(st, prefix_env)
            if self.first_launch_state is None:
                self.first_launch_state = (nounset, visible)
            self.launches.append(launch)

    def builtin(self, name: str, fields: list[Field], c: Command, st: State) -> bool:
        if name in ("cd", "pushd"):
            st.vars["PWD"] = Var(parts=(Part(self.moved_to(fields[1:], st)),), exported=True)
            return True
        if name in ("[", "[[", "test", "echo", "printf", "true", ":", "mkdir"):
            if name != "printf" or fields[1:2] == [] or fields[1].value != "-v":
                return True
        if name == "exit":
            st.dead = True
            return True
        if name == "return":
            st.returned = True
            return True
        if name in ("source", "."):
            st.taint = f"`{' '.join(w.text for w in c.words)}` (line {c.span.line})"
            target = c.words[1].text if len(c.words) > 1 else ""  # as written: `~/…`, `$CONDA…`
            if not _SYSTEM_ENV_FILE.search(target):
                # the script's own env file may set anything it has set already
                for var, v in st.vars.items():
                    if not v.env:
                        st.vars[var] = Var(parts=(Part(unknown(
                            f"${var} may be changed by {st.taint}")),), exported=v.exported,
                            status=v.status, fed_by=v.fed_by)
            return True
        if name == "shopt":
            args = [f.value for f in fields[1:]]
            if args and args[0] in ("-s", "-u"):
                for o in args[1:]:
                    if isinstance(o, str) and o in ("expand_aliases", "nullglob", "failglob"):
                        (st.options.add if args[0] == "-s" else st.options.discard)(o)
            return True
        if name == "alias":
            for f in fields[1:]:
                v = f.value
                if isinstance(v, str) and "=" in v:
                    alias, _, body = v.partition("=")
                    # a plain command line is read; quotes or expansions inside are not
                    st.aliases[alias] = body.split() if not re.search(r"[\\'\"$`;|&<>()]",
                                                                     body) else None
            return True
        if name == "eval":
            st.taint = f"`eval` (line {c.span.line})"
            return True
        if name == "let":
            self.arithmetic_command(" ".join(w.text for w in c.words), c.span, st)
            return True
        if name not in ("read", "mapfile", "readarray", "getopts", "printf", "shift"):
            return False  # not a builtin: a launch's hundreds of words need no values here
        args = [f.value for f in fields[1:]]
        if name in ("read", "mapfile", "readarray", "getopts"):
            targets = [a for a in args if isinstance(a, str) and re.fullmatch(
                r"[A-Za-z_][A-Za-z0-9_]*", a)]
            if name == "getopts":
                targets = targets[1:2]
            elif name != "read":
                targets = targets[-1:]
            for t in targets:
                st.vars[t] = Var(parts=(Part(unknown(f"${t} is read at run time")),),
                                 fed_by=(c.span,))
            return True
        if name == "printf" and len(args) >= 2 and args[0] == "-v" and isinstance(args[1], str):
            st.vars[args[1]] = Var(parts=(Part(unknown(f"${args[1]} from printf -v")),),
                                   fed_by=(c.span,))
            return True
        if name == "shift":
            n = args[0] if args else "1"
            pos = st.positional
            if pos is not None and isinstance(n, str) and n.isdigit():
                k = int(n)
                # past a passthrough, how many words are left is unknown: keep only it
                j = next((j for j, f in enumerate(pos[:k]) if f.passthrough is not None), None)
                st.positional = pos[k:] if j is None else pos[j:j + 1]
            return True
        return False

    def call(self, fn: Function, args: list[Field], st: State, prefix_env: dict) -> None:
        if len(self.frames) >= _MAX_CALL_DEPTH:
            return
        saved_pos = st.positional
        st.positional = args
        # `N=4 fn`: N is 4 (and exported) during the call only; the frame restores it after
        self.frames.append({name: st.vars.get(name) for name in prefix_env})
        for name, v in prefix_env.items():
            st.vars[name] = v.replace(exported=True)
        try:
            self.block(fn.body, st)
        finally:
            frame = self.frames.pop()
            for name, old in frame.items():
                if old is None:
                    st.vars.pop(name, None)
                else:
                    st.vars[name] = old
            st.positional = saved_pos
            st.returned = False

    def visible_devices(self, st: State, prefix_env) -> tuple[object, str | None]:
        """The visible-device list at a launch and the variable it came from. In a device
        scenario only that device's own variable counts: a CUDA list does not restrict NPUs."""
        for name in VISIBLE_DEVICE_VARS.get(self.scenario.device, ALL_VISIBLE_DEVICE_VARS):
            v = (prefix_env or {}).get(name) or st.vars.get(name)
            if v is not None and (v.exported or name in (prefix_env or {})):
                if v.parts is None:
                    return unknown(f"${name} is an array"), name
                return parts_value(v.parts), name
        return None, None

    # -- expansion --------------------------------------------------------------------------------
    def moved_to(self, args: list[Field], st: State) -> Unknown:
        """The working folder after `cd ARG`: anchored when ARG is (`cd "$(dirname "$0")"`,
        `cd ..` from an anchored folder), else unknown."""
        words = [f.value for f in args if f.value != "--"]
        why = "the working folder after `cd`"
        if len(words) != 1:
            return unknown(why)
        target = words[0]
        if isinstance(target, Anchored):
            return target
        here = self.working_dir(st, why)
        if isinstance(target, str) and not target.startswith(("/", "~", "-")) and \
                isinstance(here, Anchored):
            return Anchored(reason=why, anchor=here.anchor, rest=f"{here.rest}/{target}")
        return unknown(why)

    def record_use(self, name: str | None, span: Span, st: State, has_default: bool,
                   required: bool = False) -> None:
        """A use of `name` at `span` (the first one there counts)."""
        if name is None or not (name[0].isalpha() or name[0] == "_"):
            return
        key = (span.start, name)
        if key in self.uses:
            return
        v = st.vars.get(name)
        nounset = "nounset" in st.options
        if v is not None:
            note = v.note
            if not v.env:
                state = "set" if v.status == "set" else "maybe"
            elif nounset and name in self.assumed:
                state, note = "unset", ""  # VL101 says the scenario assumed it
            else:
                state = "environment"
        elif is_environment(name, self.known_env):
            state, note = "environment", ""
        elif st.taint:
            state, note = "maybe", f"may be set by {st.taint}"
        else:
            state, note = "unset", str(st.elsewhere.get(name, ""))
        # VarUse(name=, span=, has_default=, state=, note=, nounset=, required=)
        self.uses[key] = _var_use(name, span, has_default, state, note, nounset, required)

    def working_dir(self, st: State, reason: str) -> Unknown:
        """`$(pwd)` / `$PWD`: where the user starts the script, until a `cd` moves it."""
        v = st.vars.get("PWD")
        if v is not None and v.parts is not None:
            value = parts_value(v.parts)
            return value if isinstance(value, Unknown) else unknown(reason)
        return Anchored(reason=reason, anchor="cwd")

    def lookup_value(self, name: str, st: State):
        """A scalar variable's value: str, Unknown, or None when unset."""
        v = st.vars.get(name)
        if v is None and name == "PWD" and not st.taint:
            return self.working_dir(st, "$PWD is only known at run time")
        if v is None:
            if is_environment(name, self.known_env):
                return unknown(f"${name} comes from the environment")
            if st.taint:
                return unknown(f"${name} may be set by {st.taint}")
            return None
        if v.array is not None:
            return v.array[0].value if v.array else ""
        if v.keys is not None:
            return _key_value(v.keys, "0")
        return parts_value(v.parts)

    def special(self, name: str, st: State):
        pos = st.positional
        if name in ("@", "*"):
            if pos is None:
                return unknown('"$@": the arguments the caller passes')
            return self.joined(pos, st) if name == "*" else join_values([f.value for f in pos])
        if name == "#":
            if pos is None or any(f.passthrough is not None for f in pos):
                return unknown("$#: the number of arguments")
            return str(len(pos))
        if name.isdigit() and name != "0":
            if pos is None:
                return unknown(f"${name}: an argument the caller passes")
            i = int(name) - 1
            for j, f in enumerate(pos):  # a passthrough stands for any number of words
                if j == i or f.passthrough is not None:
                    return f.value
            return None
        return unknown(f"${name} is only known at run time")

    def scalar_of(self, p: Piece, st: State, acc: list):
        """Value of `$name` / `${name[i]}` without operator: (value or None if unset)."""
        name = p.name or ""
        if not (name[0].isalpha() or name[0] == "_"):
            return self.special(name, st)
        v = st.vars.get(name)
        if v is not None:
            acc.append((name, v.fed_by))
            if v.keys is not None:
                key = _literal_key(p.index or "0")
                if key is None:
                    return unknown(f"{p.text}: the key is only known at run time")
                return _key_value(v.keys, key)
            if v.array is not None:
                idx = p.index
                if idx is None or idx == "0":
                    return v.array[0].value if v.array else ""
                if idx in ("@", "*"):
                    return self.joined(v.array, st) if idx == "*" else \
                        join_values([f.value for f in v.array])
                if idx.isdigit():
                    i = int(idx)
                    return v.array[i].value if i < len(v.array) else None
                return unknown(f"${{{name}[{idx}]}}: index only known at run time")
            if p.index not in (None, "0", "@", "*"):
                return None
            return parts_value(v.parts)
        acc.append((name, ()))
        return self.lookup_value(name, st)

    def var_parts(self, p: Piece, st: State, acc: list, in_dq: bool):
        """Expansion of a variable piece: ("parts", tuple) or ("fields", list[Field])."""
        op = p.operator
        name = p.name or ""
        if op is None:  # `$X`, `${X}`, `${A[i]}`, `"${A[@]}"`: most expansions
            self.record_use(p.name, p.span, st, False)
            if p.index in _WHOLE or name in _WHOLE:  # whole arrays / "$@"
                fields = self.array_fields(p, st, acc)
                if p.index == "*" or name == "*":
                    return "parts", (Part(self.joined(fields, st)),)
                return "fields", fields
            val = self.scalar_of(p, st, acc)
            if val is None:
                return "parts", (Part(self.unset_unknown(name, st)),)
            v = st.vars.get(name) if isinstance(val, Unknown) else None
            if v is not None and v.parts is not None and p.index in (None, "0") and \
                    1 < len(v.parts) <= _MAX_PARTS:
                # keep the known text around the unknown: `C="a=1 m=$HOME/x"` then `$C`
                # still splits into a known `a=1` and an `m=` of unknown value
                return "parts", tuple(Part(x.value) for x in v.parts)
            return "parts", (Part(val),)
        self.record_use(p.name, p.span, st, op in _DEFAULT_OPS, op in (":?", "?"))
        if op in ("indirect", "names"):
            return "parts", (Part(unknown(f"{p.text}: indirect expansion")),)
        if p.index in _WHOLE or name in _WHOLE:
            return self.whole_op(p, st, acc, in_dq)
        if op in ("length",):
            val = self.scalar_of(p, st, acc)
            if isinstance(val, Unknown):
                return "parts", (Part(val),)
            return "parts", (Part(str(len(val or ""))),)
        val = self.scalar_of(p, st, acc)
        if op in _DEFAULT_OPS:
            if isinstance(val, Unknown):
                return "parts", (Part(val),)
            colon = op[0] == ":"
            present = val is not None and (val != "" or not colon)
            core = op.lstrip(":")
            if core in ("-", "="):
                if present:
                    return "parts", (Part(val),)
                parts, fed = self.operand_word(p, st, in_dq)
                if core == "=" and (name[:1].isalpha() or name[:1] == "_"):
                    st.vars[name] = Var(parts=tuple(parts), fed_by=fed + (p.span,))
                acc.append(("", fed))
                return _operand_kind(p), tuple(parts)
            if core == "+":
                if not present:
                    return "parts", (Part(""),)
                parts, fed = self.operand_word(p, st, in_dq)
                acc.append(("", fed))
                return _operand_kind(p), tuple(parts)
            # `?`
            if present:
                return "parts", (Part(val),)
            required = unknown(f"${{{name}{op}}}: bash aborts when {name} is unset")
            use = self.uses.get((p.span.start, name))
            if val == "" and use is not None and use.state != "environment":
                # set, but to nothing: `${X:?}` stops the run as surely as for an unset X
                self.uses[(p.span.start, name)] = dataclasses.replace(use, state="unset")
            if name[:1].isalpha() or name[:1] == "_":  # past this point bash knows it is set
                st.vars[name] = Var(parts=(Part(required),), exported=True, fed_by=(p.span,))
            return "parts", (Part(required),)
        # pattern and case operators
        if val is None:
            val = ""
        if isinstance(val, Unknown):
            return "parts", (Part(val),)
        split = _literal_replacement(p.argument.text) \
            if op in ("/", "//", "/#", "/%") and p.argument is not None else None
        if split is not None:  # `${M//\//_}`: split where bash does, on the raw text
            return "parts", (Part(capped(_replace(op, val, *split, p.text))),)
        arg = parts_value(self.expand_scalar(p.argument, st, in_dq=in_dq)) \
            if p.argument is not None else ""
        if isinstance(arg, Unknown):
            return "parts", (Part(arg),)
        return "parts", (Part(capped(_string_op(op, val, arg, p.text,
                                                _ArithLookup(self, p.span, st, acc)))),)

    def whole_op(self, p: Piece, st: State, acc: list, in_dq: bool):
        """`${A[@]op}` / `${@op}`: bash applies the operator to the elements (counts them, slices
        them, tests whether there are any), not to their join. What is not modelled is Unknown."""
        op = p.operator
        fields = self.array_fields(p, st, acc)
        star = p.index == "*" or p.name == "*"
        positional = p.name in ("@", "*")
        if any(f.passthrough is not None for f in fields):
            return "parts", (Part(unknown(f"{_short(p.text)}: the elements are only known at "
                                          "run time")),)
        if op == "length":
            return "parts", (Part(str(len(fields))),)
        joined = join_values([f.value for f in fields])
        if op == "substring" and p.argument is not None:
            bits = parts_value(self.expand_scalar(p.argument, st, in_dq=in_dq))
            bits = bits.split(":") if isinstance(bits, str) else []
            if 1 <= len(bits) <= 2 and all(b.strip().isdigit() for b in bits):
                off = int(bits[0]) - positional  # `${@:1}` starts with $1, fields[0]
                if off >= 0:  # `${@:0}` starts with $0, only known at run time
                    fields = fields[off:off + int(bits[1]) if len(bits) == 2 else None]
                    if star:
                        return "parts", (Part(self.joined(fields, st)),)
                    return "fields", fields
        elif op in (":-", "-", ":+", "+") and isinstance(joined, str):
            present = bool(fields) and (joined != "" or op[0] != ":")
            if op[-1] == "-" and present:
                return ("parts", (Part(joined),)) if star else ("fields", fields)
            if op[-1] == "+" and not present:  # `"${A[@]:+x}"` of no elements: no word at all
                return ("parts", (Part(""),)) if star else ("fields", [])
            parts, fed = self.operand_word(p, st, in_dq)
            acc.append(("", fed))
            return "parts", tuple(parts)
        return "parts", (Part(unknown(f"{_short(p.text)} is not evaluated element by element")),)

    def unset_unknown(self, name: str, st: State) -> Unknown:
        note = st.elsewhere.get(name)
        if note:
            return unknown(f"${name} is unset here ({note})")
        return unknown(f"${name} is not set by the script")

    def array_fields(self, p: Piece, st: State, acc: list) -> list[Field]:
        """The words of `"${A[@]}"` / `"$@"`: an array's own Fields, not copies (a launch
        passes hundreds). Nothing changes a Field once `expand_words` has made it, and the one
        place there that sets the feeding of fields it did not make copies them first."""
        name = p.name or ""
        if name in ("@", "*"):
            if st.positional is None:
                return [Field([Part(unknown('"$@"'))], p.span,
                              passthrough='"$@": the caller may add arguments here')]
            return list(st.positional)
        v = st.vars.get(name)
        if v is None:
            acc.append((name, ()))
            val = self.lookup_value(name, st)
            if isinstance(val, Unknown):
                return [Field([Part(val)], p.span, passthrough=val.reason)]
            return []  # unset array: expands to nothing
        acc.append((name, v.fed_by))
        if v.keys is not None:
            values = list(v.keys.values()) if isinstance(v.keys, dict) else None
            if values is not None and len(values) <= 1:
                return [Field(list(x), p.span, fed_by=v.fed_by, variables=(name,))
                        for x in values]
            reason = f"the values of associative array {name}, in bash's hash order"
            return [Field([Part(unknown(reason))], p.span, passthrough=reason)]
        if v.array is not None:
            return list(v.array)
        return [Field(list(v.parts or ()), p.span, fed_by=v.fed_by, variables=(name,))]

    def piece(self, p: Piece, st: State, acc: list, in_dq: bool):
        if p.kind == "literal":
            return "lit", (_literal_part(p),)
        if p.kind == "variable":
            return self.var_parts(p, st, acc, in_dq)
        if p.kind == "arithmetic":
            return "parts", (Part(self.arithmetic(p, st, acc)),)
        if p.kind == "command":
            body = (p.body or "").strip()
            if body.startswith("#") and "\n" not in body:
                return "parts", (Part(""),)  # `# comment` idiom: expands to nothing
            if self.is_device_probe(body):
                if self.scenario.device is not None and self.device_var:
                    pinned = dict(self.scenario.pins).get(self.device_var)
                    return "parts", (Part(pinned or self.scenario.device),)
            where = location_of(body)
            reason = f"{_short(p.text)} is only known at run time"
            if where == "cwd":
                return "parts", (Part(self.working_dir(st, reason)),)
            if where is not None:
                return "parts", (Part(Anchored(reason=reason, anchor="script_dir", rest=where[1])),)
            return "parts", (Part(unknown(reason)),)
        if p.kind == "bad_substitution":
            return "parts", (Part(unknown(f"bash cannot expand {_short(p.text)} "
                                          "(bad substitution)")),)
        return "parts", (Part(unknown(f"{_short(p.text)} is only known at run time")),)

    @staticmethod
    def is_device_probe(body: str) -> bool:
        """`$(python3 -c 'import torch_npu' … && echo npu || echo gpu)`: it prints the device
        name. A probe that prints something else (`… && echo 1 || echo 0`) is not one."""
        return _NPU_WORD.search(body) is not None and _GPU_WORD.search(body) is not None

    def arithmetic(self, p: Piece, st: State, acc: list):
        text = p.body or ""
        if p.argument is not None:
            val = parts_value(self.expand_scalar(p.argument, st, acc=acc, in_dq=True))
            if isinstance(val, Unknown):
                return val
            text = val

        lookup = _ArithLookup(self, p.span, st, acc)
        try:
            return str(arith.evaluate(text, lookup))
        except arith.ArithUnknown as exc:
            return unknown(f"$(({text.strip()})): {exc}")
        except (RecursionError, OverflowError, ValueError):
            return unknown(f"$(({text.strip()})) cannot be evaluated")

    def operand_word(self, p: Piece, st: State, in_dq: bool) -> tuple[tuple, tuple]:
        """(parts, assignments that fed them) of the word in `${X:-word}` / `${X:+word}`. Bash
        tilde-expands it when unquoted: `${X:-~/ckpt}` is $HOME/ckpt."""
        if p.argument is None:
            return (), ()
        return self.expand_scalar(p.argument, st, True, True, in_dq)  # acc_fed, assignment

    def expand_scalar(self, w: Word, st: State, acc_fed: bool = False, assignment: bool = False,
                      in_dq: bool = False, acc: list | None = None):
        """A word as one string (assignment values, case subjects): no word splitting. The hot
        callers (assignment values, `${X:-word}` operands) pass their flags positionally: a
        keyword argument costs a call about a thousand CPU instructions more."""
        pieces = w.pieces
        if len(pieces) == 1 and pieces[0].kind == "literal" and not (
                assignment and pieces[0].quoted == "none" and "~" in pieces[0].value):
            # `X=value`, `${X:-value}`: half the words here, the text as it stands
            parts = (_literal_part(pieces[0]),)
            return (parts, ()) if acc_fed else parts
        own = [] if acc is None else acc
        parts: list[Part] = []
        for p in pieces:
            if p.kind == "literal":
                val = (_literal_part(p),)
                if assignment and p.quoted == "none" and "~" in p.value:
                    val = _tilde(val[0], _blank(parts))  # `~` after only empty text: a start
            else:
                kind, val = (self.var_parts if p.kind == "variable" else self.piece)(
                    p, st, own, in_dq or p.quoted == "double")
                if kind == "fields":
                    val = (Part(join_values([f.value for f in val])),)
            parts.extend(val)
        if acc_fed:  # most values are literal text: no use, nothing fed them
            return tuple(parts), _feeding(own) if own else ()
        return tuple(parts)

    def word_expander(self, st: State):
        """`expand_fields`, or for the words of a command or array under no `nullglob` or
        `failglob` (nearly all), the `expand_words` it would only pass on to (a call less a
        word: a launch has hundreds)."""
        opts = st.options
        return self.expand_fields if "nullglob" in opts or "failglob" in opts else \
            self.expand_words

    def expand_fields(self, w: Word, st: State, array: str | None = None) -> list[Field]:
        """A word as argv words: quote removal, word splitting of unquoted expansions, "$@"."""
        out = self.expand_words(w, st, array)
        opts = st.options  # most scripts set none of these: one test of the empty set
        if opts and ("nullglob" in opts or "failglob" in opts) and "noglob" not in opts:
            # a pattern that matches no file: nullglob drops the word, failglob fails the
            # command; which files match is only known at run time
            unquoted = [p for p in w.pieces if p.quoted == "none"]
            if any(p.kind == "literal" and _ANY_GLOB.search(p.text) for p in unquoted) or (
                    any(p.kind != "literal" for p in unquoted) and any(
                        isinstance(f.value, str) and _ANY_GLOB.search(f.value) for f in out)):
                why = (f"{_short(w.text)}: under `shopt -s nullglob` bash drops it unless a "
                       "file matches")
                return [Field([Part(unknown(why))], w.span, array=array, passthrough=why)]
        return out

    def expand_words(self, w: Word, st: State, array: str | None) -> list[Field]:
        pieces = w.pieces
        if len(pieces) == 1 and pieces[0].kind == "literal":
            p = pieces[0]
            if "{" in p.text and p.quoted == "none":
                words = braces.expand(p.text)  # `k={a,b}`: bash makes two words of it
                if words is None:
                    return [Field([Part(unknown(f"{_short(w.text)}: brace expansion"))],
                                  w.span, array=array, passthrough=f"{_short(w.text)} "
                                                                   "brace-expands to many words")]
                if len(words) > 1:
                    return [Field([Part(x)], w.span, array=array) for x in words]
            if "~" not in p.value:
                # the common case: one literal word, nothing to expand or split
                return [Field([_literal_part(p)], w.span, array)]
        acc: list = []
        first = None  # the expansion of the word's one non-literal piece, made already
        out = None
        last = pieces[-1] if pieces else None
        if last is not None and last.kind == "variable" and (len(pieces) == 1 or len(
                pieces) == 2 and pieces[0].kind == "literal" and "~" not in pieces[0].value):
            # `$X`, `"$X"`, `k=$X`, `k="$X"`: six words in seven with an expansion. Expanded
            # here, where most make the one word `_one_field` sees; the others go through the
            # loop of `split_pieces` with this expansion (`first`)
            first = self.var_parts(last, st, acc, last.quoted == "double")
            if len(pieces) == 1 and last.quoted == "double":
                if first[0] == "fields":
                    return first[1]
                if _assigns(last):
                    # the loop expands it again, as it always has: `"${X:=d}"` then reads
                    # the X it set (and the word is fed by that assignment)
                    first = None
            if first is not None:
                one = self._one_field(last, first, st)
                if one is not None:
                    parts, many = one
                    if len(pieces) == 2:
                        out = [Field([_literal_part(pieces[0]), *(parts or ())], w.span, None,
                                     (), (), many)]
                    else:  # an unquoted `$X` of no text makes no word
                        out = [Field(list(parts), w.span, None, (), (), many)] \
                            if parts is not None else []
        if out is None:
            out = self.split_pieces(w, st, acc, first)
        if not acc:
            if array is not None:
                for f in out:
                    if f.array is None:
                        f.array = array
            return out
        fed = _feeding(acc)
        names = (acc[0][0],) if len(acc) == 1 and acc[0][0] else \
            tuple(dict.fromkeys(n for n, _ in acc if n))
        for f in out:
            if f.span is w.span:
                f.fed_by = fed
                f.variables = names
            if array is not None and f.array is None:
                f.array = array
        return out

    def _one_field(self, p: Piece, expanded, st: State):
        """(parts, passthrough) that the expansion `p` adds to its word as `split_pieces`
        would read it, when it splits nothing (quoted, or one known text with no blanks;
        parts None: an unquoted empty text, which adds nothing), else None."""
        kind, val = expanded
        if kind == "fields":
            return None
        if p.quoted != "none" or kind == "quoted":
            return val, None
        value = parts_value(val)
        if len(val) == 1 and isinstance(value, str) and self.ifs_split(st) is _IFS_SPLIT \
                and not _IFS_SPLIT.search(value):
            return ((val, _globbed("noglob" not in st.options, value, p.text)) if value
                    else (None, None))
        return None

    def split_pieces(self, w: Word, st: State, acc: list, first) -> list[Field]:
        """The argv words of `w`: quote removal, word splitting of unquoted expansions, "$@".
        `first`: the expansion of its one non-literal piece when `expand_words` made it."""
        pieces = w.pieces
        out: list[Field] = []
        cur: list[Part] | None = None  # None: no field started
        # why `cur` may stand for any number of words: an element only known at run time, or
        # the result of an unquoted expansion bash globs against file names
        many: str | None = None
        globs = "noglob" not in st.options

        def add(parts, reason: str | None = None) -> None:  # in place: a word stays linear
            nonlocal cur, many
            if cur is None:
                cur = []
            cur.extend(parts)
            many = many or reason

        def finish() -> None:
            nonlocal cur, many
            if cur is not None:
                out.append(Field(cur, w.span, passthrough=many))
            cur = None
            many = None

        for k, p in enumerate(pieces):
            if p.kind == "literal":  # without `piece`: half the pieces of the words here
                part = _literal_part(p)
                # a `~` counts as at the word's start when every part before it is empty text
                add(_tilde(part, cur is None or _blank(cur)) if p.quoted == "none" and "~" in
                    p.value else (part,))
                continue
            if first is not None:
                kind, val = first
            else:
                kind, val = (self.var_parts if p.kind == "variable" else self.piece)(
                    p, st, acc, p.quoted == "double")
            if kind == "fields":
                fields = val
                unquoted = p.quoted == "none"
                if unquoted:
                    ifs = self.ifs_split(st)
                    split: list[Field] = []
                    for f in fields:
                        v = f.value
                        if isinstance(v, str) and not isinstance(ifs, Unknown) and ifs.search(v):
                            split.extend(f.copy(parts=[Part(x)],
                                                passthrough=_globbed(globs, x, p.text))
                                         for x in ifs.split(v)[::2] if x)
                        elif isinstance(v, str) and isinstance(ifs, Unknown) and v:
                            split.append(f.copy(parts=[Part(ifs)], passthrough=ifs.reason))
                        elif v != "" or f.passthrough:
                            split.append(f if not isinstance(v, str) or f.passthrough else
                                         f.copy(passthrough=_globbed(globs, v, p.text)))
                    fields = split
                if not fields:
                    continue
                if cur is None and k == len(pieces) - 1:
                    out.extend(f.copy() for f in fields)  # the loop after sets their feeding
                    continue
                for i, f in enumerate(fields):
                    if i:
                        finish()
                    add(f.parts, f.passthrough)
                continue
            # scalar parts
            if p.quoted != "none" or kind == "quoted":
                add(val)
                continue
            value = parts_value(val)
            ifs = self.ifs_split(st)
            if ifs is _IFS_SPLIT and len(val) == 1 and isinstance(value, str) \
                    and not _IFS_SPLIT.search(value):
                # most unquoted `$X`: one known text without blanks, the one word the split
                # below would make of it (an empty one makes none)
                if value:
                    add(val, _globbed(globs, value, p.text))
                continue
            if isinstance(value, Unknown) and (isinstance(ifs, Unknown) or not any(
                    isinstance(x.value, str) and ifs.search(x.value) for x in val)):
                if cur is None and len(pieces) == 1:
                    out.append(Field([Part(value)], w.span, passthrough=None
                                     if p.kind in ("arithmetic",) else
                                     f"unquoted {_short(p.text)} may expand to several words "
                                     f"({value.reason})"))
                    continue
                add((Part(value),))
                continue
            if isinstance(ifs, Unknown):
                add((Part(ifs),), ifs.reason if value else None)
                continue
            # split at the blanks of the known text; an unknown part stays in the word it
            # touches (`k=$HOME/x` is one word, as everywhere), alone it may be several
            segs: list[list[Part]] = [[]]
            for x in val:
                if isinstance(x.value, Unknown):
                    segs[-1].append(x)
                    continue
                chunks = ifs.split(x.value)
                for i, chunk in enumerate(chunks):
                    if i % 2 == 1:
                        segs.append([])
                    elif chunk:
                        segs[-1].append(Part(chunk, x.src if len(val) == 1 and len(chunks) == 1
                                             else None))
            for i, seg in enumerate(segs):
                if i:
                    finish()
                if not seg:
                    continue
                text = parts_value(seg)
                if not isinstance(text, Unknown):
                    add(seg, _globbed(globs, text, p.text))
                elif all(isinstance(q.value, Unknown) for q in seg) and (i or cur is None) \
                        and (i < len(segs) - 1 or k == len(pieces) - 1):
                    add(seg, f"unquoted {_short(p.text)} may expand to several words "
                             f"({text.reason})")
                else:
                    add(seg)
        finish()
        return out


class _ArithLookup:
    """`lookup(name, depth)` for `arith.evaluate`: a variable's integer value, recording the use.
    A class rather than a closure: a closure that passes itself on is a reference cycle, and
    cycles keep a whole script model alive until the garbage collector runs."""

    __slots__ = ("interp", "span", "state", "acc", "budget")

    def __init__(self, interp: "Interpreter", span: Span, st: State, acc: list) -> None:
        self.interp, self.span, self.state, self.acc = interp, span, st, acc  # span: of the uses
        self.budget = _MAX_ARITH_LOOKUPS

    def __call__(self, name: str, depth: int) -> int:
        self.budget -= 1
        if self.budget < 0:  # `A=B+B+…`, `B=C+C+…`: exponential in the nesting depth
            raise arith.ArithUnknown("too many variable references")
        interp, st = self.interp, self.state
        interp.record_use(name, self.span, st, False)
        v = st.vars.get(name)
        self.acc.append((name, v.fed_by if v is not None else ()))
        val = interp.lookup_value(name, st)
        if val is None:
            raise arith.ArithUnknown(str(interp.unset_unknown(name, st).reason))
        if isinstance(val, Unknown):
            raise arith.ArithUnknown(val.reason)
        return arith.evaluate(val, self, depth) if val.strip() else 0


# Files a script sources for its toolchain (CANN, conda, a venv, the shell profile): they set
# PATH-like variables, not the script's own, whose values stay known after them.
# Matched on the path as written; a file of the script's own (`./cuda_env.sh`) is not one.
_SYSTEM_ENV_FILE = re.compile(r"(?:^|/)(?:set_env\.sh|activate|\.bashrc|\.bash_profile|"
                              r"\.profile|profile)$|/(?:mini|ana)?conda\d?/|/profile\.d/")


_SUBSCRIPT = re.compile(r"\[([^\]]*)\]=")


def _literal_key(index: str) -> str | None:
    """The key `${M[aime]}`, `${M["aime"]}` names, or None when it expands something."""
    if any(ch in index for ch in "$`\\"):
        return None
    if len(index) >= 2 and index[0] == index[-1] and index[0] in "'\"":
        return index[1:-1]
    return None if any(ch in index for ch in "'\"") else index


def _key_value(keys, key: str):
    """M[key] of an associative array: its value, None when unset, or an Unknown."""
    if isinstance(keys, Unknown):
        return keys
    parts = keys.get(key)
    return None if parts is None else parts_value(parts)


def _keys_value(keys):
    return keys if isinstance(keys, Unknown) else {k: parts_value(v) for k, v in keys.items()}


def _subscripted(elements) -> bool:
    """Some element is `[i]=v`. A loop, not any(…) over a generator: every array asks."""
    for w in elements:
        if w.text.startswith("["):
            return True
    return False


def _in_written_order(elements) -> bool:
    """Every element is `[i]=v` with i counting 0, 1, 2… (the written order)."""
    keys = [_SUBSCRIPT.match(w.text) for w in elements]
    return all(m is not None and m.group(1).strip() == str(i) for i, m in enumerate(keys))


def _without_subscript(f: Field) -> Field:
    """The element `[0]=v` as `v`."""
    first = f.parts[0].value if f.parts else None
    m = _SUBSCRIPT.match(first) if isinstance(first, str) else None
    if m is None:
        return f
    src = f.parts[0].src
    head = Part(first[m.end():], None if src is None else src + m.end())
    return f.copy(parts=[head, *f.parts[1:]])


def _operand_kind(p: Piece) -> str:
    """"quoted" when the word of `${X:-word}` is all quoted (`${L:-"['a', 'b']"}`): bash does not
    split it even where the expansion itself is unquoted; else "parts"."""
    pieces = p.argument.pieces if p.argument is not None else ()
    for q in pieces:  # a loop, not all(…): every `${X:-word}` asks
        if q.quoted == "none":
            return "parts"
    return "quoted" if pieces else "parts"


def guard_test(c: Command) -> tuple[str, str] | None:
    """(X, "-z" / "-n") for `[ -z "$X" ]`, `[[ -n $X ]]`, `test -z "$X"`, `[ "$X" ]` (-n)."""
    words = [w.text for w in c.words]
    if not words or words[0] not in ("[", "[[", "test"):
        return None
    inner = words[1:-1] if words[0] != "test" else words[1:]
    if len(inner) == 1:
        inner = ["-n", inner[0]]
    if len(inner) != 2 or inner[0] not in ("-z", "-n"):
        return None
    pieces = [p for p in c.words[words.index(inner[1], 1)].pieces
              if not (p.kind == "literal" and p.value == "")]
    if len(pieces) == 1 and pieces[0].kind == "variable" and pieces[0].operator is None \
            and pieces[0].index is None and pieces[0].name and pieces[0].name[0] != "@":
        return pieces[0].name, inner[0]
    return None


def _narrow(cond, st: State, holds: bool) -> None:
    """What an undecided emptiness test proves on one way out: past `if [ -z "$X" ]; then …
    exit 1; fi` (or in the then-branch of `-n`), X is set, to a value nobody knows."""
    if cond is None or cond.variable is None or cond.variable in st.vars:
        return
    op, operand = cond.operator, cond.operand
    empty = {"-z": True, "-n": False}.get(op)
    if empty is None and operand == "" and op in ("=", "==", "!="):
        empty = op != "!="
    if empty is not None and empty != holds:
        st.vars[cond.variable] = Var(parts=(Part(unknown(
            f"${cond.variable} is only known to be non-empty here")),), exported=True,
            fed_by=(cond.span,))


class _Label:
    """A way through a branch, named for a merge note when one needs it: most merges and untaken
    branches need none, and a name looks up its branch's line (the script's line index)."""

    __slots__ = ("make", "args", "text")

    def __init__(self, make, *args) -> None:
        self.make, self.args, self.text = make, args, None

    def __str__(self) -> str:
        if self.text is None:
            self.text = self.make(*self.args)
        return self.text


def _branch_label(b) -> str:
    return ("the else branch" if b.kind == "else"
            else f"the `{b.condition.text}` branch (line {b.span.line})")


def _later_label(s: If, k: int) -> str:
    """The ways through `s` past its branch k."""
    return " / ".join(_branch_label(o) for o in s.branches[k + 1:]) or "no branch"


def _loop_label(s: Loop) -> str:
    return f"the loop at line {s.span.line}"


_ASSIGNING_OPS = frozenset({":=", "=", ":?", "?"})  # `${X:=d}` sets X, `${X:?}` marks it set


def _assigns(p: Piece) -> bool:
    """Whether expanding `p` changes the state (the variables or the recorded uses): else a
    second expansion in the same state repeats the first."""
    return p.operator in _ASSIGNING_OPS or p.argument is not None and any(
        q.operator in _ASSIGNING_OPS for q in p.argument.expansions())


def _globbed(globs: bool, text: str, what: str) -> str | None:
    """Why the unquoted expansion `what`, giving `text`, may be any number of words: bash
    matches a pattern in it against file names (when `globs`: no `set -f`). Not a closure
    inside `split_pieces`: making one costs every word with an expansion ≈ 1,000 instructions."""
    if globs and _GLOB.search(text):
        return f"unquoted {_short(what)} gives `{_short(text)}`, which bash matches " \
               "against file names"
    return None


def _blank(parts) -> bool:
    for p in parts:  # a loop, not all(…): called for every piece of every word
        if p.value != "":
            return False
    return True


def _literal_part(p: Piece) -> Part:
    """A literal piece's text, with where it sits in the script when it is there verbatim
    (unquoted and unescaped, or the inside of single quotes)."""
    part = BarePart()
    part.value = p.value
    part.src = p.span.start if p.text == p.value else (
        p.span.start + 1 if p.quoted == "single" and p.text[1:-1] == p.value else None)
    return part


def _assign_state(st: State, other: State) -> None:
    if other is st:
        return
    for slot in State.__slots__:
        setattr(st, slot, getattr(other, slot))


def _cap_array(elems: list[Field], a: Assignment) -> list[Field]:
    if len(elems) <= MAX_ELEMENTS:
        return elems
    return [Field([Part(TOO_LONG)], a.span, array=a.name,
                  passthrough=f"{a.name} has more than {MAX_ELEMENTS} elements")]


def _common_prefix(arrays: list[list[Field]]) -> list[Field]:
    out = []
    for group in zip(*arrays):
        if all(f.span == group[0].span and f.value == group[0].value for f in group):
            out.append(group[0])
        else:
            break
    return out


def _item_label(s: Case, item) -> str:
    pats = "|".join(p.text for p in item.patterns)
    var = s.subject_variable
    where = f" of `case ${var}`" if var else ""
    # the line is the branch's, so it goes next to it: "`case $DEVICE` (line 8)" means the case
    return f"the `{pats}` branch (line {item.span.line}){where}"


def _short(text: str, n: int = 40) -> str:
    text = " ".join(text.split())
    return text if len(text) <= n else text[:n - 1] + "…"


def _tilde(part: Part, at_start: bool) -> list[Part]:
    """Tilde expansion in an unquoted literal: at the start of a word and after `=`/`:`."""
    v = part.value
    if not isinstance(v, str) or "~" not in v:
        return [part]
    idx = []
    for m in re.finditer(r"~", v):
        i = m.start()
        if (i == 0 and at_start) or (i > 0 and v[i - 1] in "=:"):
            idx.append(i)
    if not idx:
        return [part]
    out: list[Part] = []
    last = 0
    for i in idx:
        end = i + 1
        while end < len(v) and v[end] not in "/:":
            end += 1
        if v[i + 1:end] not in ("", "+", "-"):
            # `~name`: another user's home; for `~actor.key` (Hydra's delete) there is no such
            # user and bash leaves the word alone — assume that rather than make it unknown
            continue
        if last < i:
            out.append(Part(v[last:i], None if part.src is None else part.src + len(
                v[:last].encode())))
        out.append(Part(unknown(f"{v[i:end]} is the user's home directory")))
        last = end
    if last < len(v):
        out.append(Part(v[last:], None if part.src is None else part.src + len(v[:last].encode())))
    return out


def _literal_replacement(raw: str) -> tuple[str, str] | None:
    """(pattern, replacement) of the raw text after `${X/`, split at the first unescaped `/` as
    bash does; None when it expands or quotes something (the expanded text is split then)."""
    if any(ch in raw for ch in "$`'\""):
        return None
    i = 0
    while i < len(raw) and raw[i] != "/":
        i += 2 if raw[i] == "\\" else 1
    pattern = patterns.unquoted(raw[:i])
    return pattern, re.sub(r"\\(.)", r"\1", raw[i + 1:], flags=re.S)


def _affix(val: str, pattern: str, *, prefix: bool, longest: bool, text: str):
    """Where the shortest or longest prefix (suffix) of `val` matching `pattern` ends (starts):
    an index, None when none matches, or an Unknown."""
    rx = patterns.regex(pattern)
    if rx is None:
        return unknown(f"{_short(text)}: an extended glob")
    n = len(val)
    if n > 4096:  # every prefix/suffix is tried: quadratic
        return unknown(f"{_short(text)}: value too long for pattern matching")
    sizes = range(n, -1, -1) if longest else range(n + 1)
    for size in sizes:
        if prefix and rx.fullmatch(val[:size]):
            return size
        if not prefix and rx.fullmatch(val[n - size:]):
            return n - size
    return None


def _replace(op: str, val: str, pat: str, rep: str, text: str):
    """`${X/pat/rep}` (first match), `//` (every match), `/#` (at the start), `/%` (at the end);
    the longest match wins, as in bash."""
    if not pat:
        return val
    if "&" in rep:  # bash 5.2 puts the matched text there (patsub_replacement)
        return unknown(f"{_short(text)}: `&` in the replacement")
    if op in ("/#", "/%"):
        k = _affix(val, pat, prefix=op == "/#", longest=True, text=text)
        if not isinstance(k, int):
            return val if k is None else k
        return rep + val[k:] if op == "/#" else val[:k] + rep
    rx = patterns.regex(pat)
    if rx is None:
        return unknown(f"{_short(text)}: an extended glob")
    done = [False]

    def one(m: re.Match) -> str:
        if not m.group(0) or (op == "/" and done[0]):
            return m.group(0)
        done[0] = True
        return rep

    out = rx.sub(one, val)
    return TOO_LONG if len(out) > MAX_VALUE else out


def _string_op(op: str, val: str, arg: str, text: str, lookup: "_ArithLookup"):
    if op in ("#", "##", "%", "%%"):
        if not patterns.has_glob(arg) and "\\" not in arg:  # a literal matches only itself
            if op[0] == "#":
                return val[len(arg):] if val.startswith(arg) else val
            return val[:len(val) - len(arg)] if val.endswith(arg) else val
        k = _affix(val, arg, prefix=op[0] == "#", longest=len(op) == 2, text=text)
        if not isinstance(k, int):
            return val if k is None else k
        return val[k:] if op[0] == "#" else val[:k]
    if op in ("^^", ",,", "^", ","):
        if arg:  # `${M,,[QI]}`: only the characters the pattern matches
            return unknown(f"{_short(text)}: case change of some characters")
        if op in ("^^", ",,"):
            return val.upper() if op == "^^" else val.lower()
        return (val[:1].upper() if op == "^" else val[:1].lower()) + val[1:]
    if op in ("/", "//", "/#", "/%"):
        pat, _, rep = arg.partition("/")
        return _replace(op, val, pat, rep, text)
    if op == "substring":
        bits = arg.split(":")
        try:
            off = int(arith.evaluate(bits[0], lookup)) if bits[0].strip() else 0
            ln = int(arith.evaluate(bits[1], lookup)) if len(bits) > 1 else None
        except arith.ArithUnknown:
            return unknown(f"{_short(text)}: substring bounds")
        if off < 0:
            off = max(0, len(val) + off)
        if ln is None:
            return val[off:]
        return val[off:off + ln] if ln >= 0 else val[off:len(val) + ln]
    return unknown(f"{_short(text)} is not evaluated")
