"""Recognise verl launches among expanded commands and split their Hydra overrides.

`python3 -m verl.trainer.main_ppo …`, `python3 path/main_ppo.py`, `torchrun … -m MODULE`,
`python -m torch.distributed.run …`, `ray job submit … -- python3 -m …`, `uv run … python -m …`,
behind `nohup`/`exec`/`env`/`time`/`srun`…; only verl-looking entry points count (`verl.*`,
`recipe.*`, any `*.main_*` module, a `main_*.py` script).
"""

from __future__ import annotations

import re
from typing import Callable

from verl_lint.evaluate.model import Launch, Override, Passthrough, Unknown
from verl_lint.evaluate.values import Field, Part, parts_value
from verl_lint.records import positional
from verl_lint.shell.model import Command
from verl_lint.source import Span

_PYTHON = re.compile(r"python(\d+(\.\d+)?)?$")
_SIMPLE_WRAPPERS = frozenset({"nohup", "exec", "command", "builtin", "setsid", "time"})
_SCAN_WRAPPERS = frozenset({"srun", "mpirun", "mpiexec", "numactl", "taskset", "stdbuf",
                            "timeout", "nice", "ionice", "chrt", "conda", "poetry", "pipenv",
                            "micromamba", "mamba", "pixi"})
_TORCHRUN_FLAGS = frozenset({"--standalone", "--no-python", "--no_python", "--run-path",
                             "--run_path", "-m", "--module", "--module_", "--use-env",
                             "--use_env", "--redirects_all"})
_PY_OPTS_WITH_ARG = frozenset({"-W", "-X", "-Q"})
_HYDRA_FLAGS_WITH_ARG = frozenset({"--cfg", "-c", "--package", "-p", "--experimental-rerun"})
_CONFIG_FLAGS = ("--config-path", "-cp", "--config-name", "-cn", "--config-dir", "-cd")

SpanFn = Callable[[int, int], "Span | None"]
_new_override = positional(Override)  # by position: see `positional`
_OVERRIDE_FIELDS = tuple(Override.__dataclass_fields__)
_new = object.__new__
_KEY_SPAN, _VALUE_SPAN = Override.key_span, Override.value_span  # the record's own slots


class _ReadOverride(Override):
    """An Override as a launch's reading makes it, its `key_span` and `value_span` worked out
    (by `_spans`) when first read: a launch has hundreds of override words, and their two
    spans (two Span objects and the walk of `_spans`, ≈ 5,000 instructions a word) are read
    for the few words a diagnostic or a fix points at. Until then the key span's slot holds
    `_spans`'s arguments (a tuple: no Span is one). Pickled and copied as the Override."""

    def _span_pair(self) -> tuple[Span, Span | None]:
        key_span, value_span = _spans(*_KEY_SPAN.__get__(self))
        _KEY_SPAN.__set__(self, key_span)
        _VALUE_SPAN.__set__(self, value_span)
        return key_span, value_span

    @property
    def key_span(self) -> Span:
        span = _KEY_SPAN.__get__(self)
        return self._span_pair()[0] if type(span) is tuple else span

    @key_span.setter
    def key_span(self, span: Span) -> None:
        _KEY_SPAN.__set__(self, span)

    @property
    def value_span(self) -> Span | None:
        if type(_KEY_SPAN.__get__(self)) is tuple:
            return self._span_pair()[1]
        return _VALUE_SPAN.__get__(self)

    @value_span.setter
    def value_span(self, span: Span | None) -> None:
        _VALUE_SPAN.__set__(self, span)

    def __reduce__(self):
        return _plain_override, tuple(getattr(self, name) for name in _OVERRIDE_FIELDS)


def _plain_override(*values) -> Override:
    """The Override of these field values, in field order (a `_ReadOverride` pickled)."""
    return _new_override(*values)


def _new_read_override(prefix: str, key: str, value, text, f: Field,
                       spans_from: tuple) -> _ReadOverride:
    """Every field of the Override by position (see `positional`), the spans still to work
    out from `spans_from`."""
    ov = _new(_ReadOverride)
    ov.prefix = prefix
    ov.key = key
    ov.value = value
    ov.text = text
    ov.span = f.span
    _KEY_SPAN.__set__(ov, spans_from)
    ov.array = f.array
    ov.fed_by = f.fed_by
    ov.variables = f.variables
    return ov


def _base(v) -> str | None:
    return v.rsplit("/", 1)[-1] if isinstance(v, str) else None


def is_verl_module(module: str) -> bool:
    return (module.startswith(("verl.", "recipe.")) or
            module.rsplit(".", 1)[-1].startswith("main_")) and \
        re.fullmatch(r"[A-Za-z_][\w.]*", module) is not None


def is_verl_script(path: str) -> bool:
    return bool(re.fullmatch(r"(?:.*/)?main_\w+\.py", path))


def detect_launch(fields: list[Field], cmd: Command, span_fn: SpanFn) -> Launch | None:
    # each word's value (f.value; None for a passthrough) and the known text before its first
    # Unknown (`--nnodes=$N` is still an option), in one pass: a launch has hundreds of words
    vals: list = []
    leads: list[str] = []
    for f in fields:
        if f.passthrough is not None:
            vals.append(None)
            leads.append("")
            continue
        v = parts_value(f.parts)
        vals.append(v)
        leads.append(v if isinstance(v, str) else _lead(f)[0])
    i, launcher = _unwrap(vals, leads)
    if i is None:
        return None
    entry = _entry(vals, leads, i, launcher)
    if entry is None:
        return None
    module, script, launcher, k = entry
    if module is not None and not is_verl_module(module):
        return None
    if script is not None and not is_verl_script(script):
        return None
    launch = Launch(module=module, script=script, launcher=launcher, span=cmd.span,
                    overrides=[], passthrough=[],
                    torchrun_options=_torchrun_options(vals, leads, i, k))
    _arguments(launch, fields[k:], vals[k:], leads[k:], span_fn)
    return launch


def _unwrap(vals: list, leads: list[str]) -> tuple[int | None, str]:
    """Index of the interpreter word after wrappers, and the launcher name."""
    i = 0
    launcher = "python"
    while i < len(vals):
        b = _base(vals[i])
        if b in _SIMPLE_WRAPPERS:
            i += 1
            while i < len(vals) and isinstance(vals[i], str) and vals[i].startswith("-"):
                i += 1
            continue
        if b == "env":
            i += 1
            while i < len(vals) and (leads[i].startswith("-") or re.match(r"[A-Za-z_]\w*=",
                                                                          leads[i])):
                i += 2 if vals[i] in ("-u", "--unset", "-C", "--chdir") else 1
            continue
        if b == "ray" and vals[i + 1:i + 3] == ["job", "submit"]:
            try:
                i = vals.index("--", i) + 1
            except ValueError:
                return None, launcher
            launcher = "ray"
            continue
        if b == "uv" and i + 1 < len(vals) and vals[i + 1] == "run":
            launcher = "uv"
            j = i + 2
            while j < len(vals) and isinstance(vals[j], str) and vals[j].startswith("-"):
                if vals[j] in ("-m", "--module"):
                    return j, "uv"  # `uv run -m MODULE`
                if vals[j] == "--":
                    break
                j += 1
            # the rest: `uv run [--opt value …] python …`: find the interpreter
            k = _find_interpreter(vals, i + 2)
            if k is None:
                return None, launcher
            i = k
            continue
        if b in _SCAN_WRAPPERS:
            k = _find_interpreter(vals, i + 1)
            if k is None:
                return None, launcher
            i = k
            continue
        return i, launcher
    return None, launcher


def _find_interpreter(vals: list, start: int) -> int | None:
    for k in range(start, len(vals)):
        b = _base(vals[k])
        if b is not None and (_PYTHON.match(b) or b == "torchrun"):
            return k
    return None


def _entry(vals: list, leads: list[str], i: int, launcher: str):
    """(module, script, launcher, index of the first program argument) or None."""
    v = vals[i]
    b = _base(v)
    if vals[i] == "-m" or vals[i] == "--module":  # `uv run -m MODULE`
        mod = vals[i + 1] if i + 1 < len(vals) else None
        return (mod, None, launcher, i + 2) if isinstance(mod, str) else None
    if b == "torchrun":
        return _torchrun(vals, leads, i + 1, "torchrun" if launcher == "python" else launcher)
    if not (b is not None and _PYTHON.match(b)):
        # `$PYTHON -m verl…`: an unknown interpreter followed by -m
        if not (v is None or isinstance(v, Unknown)) or vals[i + 1:i + 2] != ["-m"]:
            return None
    j = i + 1
    while j < len(vals):
        a = vals[j]
        if not isinstance(a, str):
            if leads[j].startswith("-"):  # `-X$OPT`: an interpreter option
                j += 1
                continue
            return None  # may be the script itself
        if a == "-m" or (a.startswith("-m") and len(a) > 2 and not a.startswith("--")):
            mod = a[2:] if len(a) > 2 else (vals[j + 1] if j + 1 < len(vals) else None)
            nxt = j + 1 if len(a) > 2 else j + 2
            if not isinstance(mod, str):
                return None
            if mod in ("torch.distributed.run", "torch.distributed.launch"):
                return _torchrun(vals, leads, nxt,
                                 "torchrun" if launcher == "python" else launcher)
            return mod, None, launcher, nxt
        if a == "-c" or a == "-":
            return None
        if a in _PY_OPTS_WITH_ARG:
            j += 2
            continue
        if a.startswith("-"):
            j += 1
            continue
        return (None, a, launcher, j + 1) if a.endswith(".py") else None
    return None


def _torchrun(vals: list, leads: list[str], j: int, launcher: str):
    module_flag = False
    opaque = False  # an unknown word that may stand for the script
    while j < len(vals):
        a = vals[j]
        if not isinstance(a, str):
            # `--nproc_per_node=$N` is one option word; `$DIST_ARGS` may be options or more
            opaque = opaque or not leads[j].startswith("-")
            j += 1
            continue
        if a in ("-m", "--module"):
            module_flag = True
            j += 1
            continue
        if a.startswith("-"):
            j += 1 if ("=" in a or a in _TORCHRUN_FLAGS) else 2
            continue
        if module_flag:
            return a, None, launcher, j + 1
        return (None, a, launcher, j + 1) if a.endswith(".py") and not opaque else None
    return None


def _torchrun_options(vals: list, leads: list[str], i: int, k: int) -> dict | None:
    """torchrun's own options among words i…k-1 (`torchrun …` or `python -m
    torch.distributed.run …`), or None when the launch does not go through torchrun."""
    start = None
    for j in range(i, k):
        if _base(vals[j]) == "torchrun":
            start = j + 1
        elif vals[j] in ("-m", "--module") and j + 1 < k and vals[j + 1] in (
                "torch.distributed.run", "torch.distributed.launch"):
            start = j + 2
        if start is not None:
            break
    if start is None:
        return None
    opts: dict = {}
    j = start
    while j < k:
        a, lead = vals[j], leads[j]
        if not lead.startswith("--"):
            if a in ("-m", "--module") or isinstance(a, str):
                break  # the module or the script: the options are over
            opts["*"] = a.reason if isinstance(a, Unknown) else "an unknown word"
            j += 1
            continue
        name, eq, value = lead[2:].partition("=")
        name = name.replace("-", "_")
        if eq:
            opts[name] = value if isinstance(a, str) else a
            j += 1
        elif f"--{name}" in _TORCHRUN_FLAGS or lead in _TORCHRUN_FLAGS:
            j += 1
        else:
            opts[name] = vals[j + 1] if j + 1 < k else None
            j += 2
    return opts


def _after_flag(f: Field):
    """The value of `--flag=VALUE` when VALUE holds an unknown part: the parts after the `=`
    (an anchored path such as `$PROJECT_DIR/config` keeps its known tail)."""
    parts, skipped = list(f.parts), False
    while parts and not skipped:
        head = parts[0].value
        if not isinstance(head, str):
            break
        if "=" in head:
            parts[0] = Part(head.split("=", 1)[1])
            skipped = True
        else:
            parts.pop(0)
    return parts_value(tuple(p for p in parts if p.value != "")) if skipped else f.value


def _arguments(launch: Launch, fields: list[Field], vals: list, leads: list[str],
               span_fn: SpanFn) -> None:
    """`vals`/`leads`: each field's value (None for a passthrough) and known lead, as
    `detect_launch` computed them."""
    k = 0
    n = len(fields)
    overrides = launch.overrides
    while k < n:
        f = fields[k]
        lead = leads[k]
        if f.passthrough is not None:
            launch.passthrough.append(Passthrough(span=f.span, reason=f.passthrough,
                                                 position=len(overrides)))
        elif lead.startswith("-"):  # tested first, alone: the hundreds of overrides are not
            k = _option(launch, fields, vals, lead, k)
            continue
        elif "=" not in lead and isinstance(vals[k], Unknown) and _lead(f)[1]:
            # an Unknown part follows the lead: `vals[k]` is that first Unknown part
            launch.passthrough.append(Passthrough(
                span=f.span, reason=f"override key only known at run time: {vals[k].reason}",
                position=len(overrides)))
        else:
            overrides.append(_override(f, vals[k], lead, span_fn))
        k += 1


def _option(launch: Launch, fields: list[Field], vals: list, lead: str, k: int) -> int:
    """Read the option word `fields[k]` (Hydra's `--config-name x`, `-cn=x`, `--cfg job`…) into
    `launch`; the index of the word after it (and after its argument)."""
    flag = lead.split("=", 1)[0]
    if flag not in _CONFIG_FLAGS:
        return k + (2 if flag in _HYDRA_FLAGS_WITH_ARG and "=" not in lead else 1)
    f = fields[k]
    value = vals[k]
    if "=" in lead:
        value = value.split("=", 1)[1] if isinstance(value, str) else _after_flag(f)
        span = f.span
        k += 1
    elif k + 1 < len(fields):
        nf = fields[k + 1]
        value = nf.value
        span = nf.span
        k += 2
    else:
        return k + 1
    if flag in ("--config-path", "-cp"):
        launch.config_path = value
    elif flag in ("--config-dir", "-cd"):
        launch.config_dirs.append(value)
    else:
        launch.config_name = value
        launch.config_name_span = span
    return k


def _lead(f: Field) -> tuple[str, bool]:
    """The known text before the first Unknown part, and whether an Unknown follows."""
    out = []
    for p in f.parts:
        if isinstance(p.value, Unknown):
            return "".join(out), True
        out.append(p.value)
    return "".join(out), False


def _override(f: Field, text: "str | Unknown", lead: str, span_fn: SpanFn) -> Override:
    # the lines of an override word (hundreds a launch) are counted: each bytecode of them
    # costs all of verl's scripts about a million CPU instructions
    eq = lead.find("=")
    if eq < 0:  # `~key`
        key_text, value, value_known = lead, None, False
    else:
        key_text = lead[:eq]
        value_known = type(text) is str
        value = text[eq + 1:] if value_known else text
    if key_text[:1] in "+~":  # or the key is empty
        prefix = "~" if key_text[:1] == "~" else "++" if key_text.startswith("++") else \
            "+" if key_text else ""
        key = key_text[len(prefix):]
    else:  # most overrides: no prefix to take off
        prefix, key = "", key_text
    return _new_read_override(prefix, key, value, text, f,
                              (f, len(prefix), len(key_text), eq, value_known, span_fn))


_NO_PART = Part("")  # the head of a word of no parts (`"${E:-}"`): not script text


def _spans(f: Field, a: int, b: int, eq: int, value_known: bool, span_fn: SpanFn):
    """(key_span, value_span) of an override word: the key's characters [a, b) where they sit
    in the script (else the word's span), and where the value starts after the `=` at `eq`
    (-1: none) when the value is known and the rest of the word is script text (else None)."""
    parts = f.parts
    head = parts[0] if parts else _NO_PART
    src = head.src
    text = head.value
    span = f.span
    end = b + (eq >= 0)  # the key and its `=` (eq == b when there is one)
    if src is not None and type(text) is str and len(text) >= end and text.isascii() and \
            span.start <= src and src + end <= span.end:
        # most overrides: the key and its `=` sit verbatim in the word's first part (`k=v`,
        # `k=$V`), where the walks of `_walked_spans` stop, with the same ranges
        value_span = None
        if eq >= 0 and value_known:
            for q in parts[1:]:  # a loop, not a comprehension (a call): half the words have 2
                if q.src is None:
                    break  # `k=$V`: the value is not script text
            else:
                value_span = span_fn(src + eq + 1, span.end)
        return span_fn(src + a, src + b) or span, value_span
    return _walked_spans(f, a, b, eq, value_known, span_fn)


def _walked_spans(f: Field, a: int, b: int, eq: int, value_known: bool, span_fn: SpanFn):
    """`_spans` by walking the parts (any word)."""
    r = _sub_range(f, a, b)
    key_span = (span_fn(*r) if r is not None else None) or f.span
    value_span = None
    if eq >= 0 and value_known:
        r = _sub_range(f, eq, eq + 1, literal_tail=True)  # the `=`: the value follows it
        if r is not None:
            value_span = span_fn(r[1], f.span.end)
    return key_span, value_span


def _sub_range(f: Field, a: int, b: int, literal_tail: bool = False):
    """Byte range of characters [a, b) of the field when they sit verbatim in one part inside
    the field's word; with `literal_tail`, also require every later part to be script literal."""
    parts = f.parts
    span = f.span
    pos = 0
    for idx, p in enumerate(parts):
        v = p.value
        if isinstance(v, Unknown):
            return None
        if pos <= a and b <= pos + len(v):
            if p.src is None:
                return None
            if literal_tail and any(q.src is None for q in parts[idx + 1:]):
                return None
            start = p.src + len(v[:a - pos].encode())
            end = start + len(v[a - pos:b - pos].encode())
            if not (span.start <= start and end <= span.end):
                return None
            return start, end
        pos += len(v)
    return None
