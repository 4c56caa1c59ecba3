r"""The bash differential oracle: does verl-lint read a script the way bash runs it?

    python -m verl_lint.dev.bash_oracle run.sh scripts/        # exit 1 on a disagreement

Each script runs under real bash once per scenario verl-lint infers (`DEVICE=gpu`, `DEVICE=npu`,
the pins of `--set`), in a throwaway folder, with `env -i`, a temporary HOME and a PATH of shims:

- the launchers (`python`, `python3`, `torchrun`, `ray`, `uv`, `srun`, `nohup`, `env`, …) record
  their argv, with the script line that ran them, and exit 0. A `python3 -c 'import torch_npu'`
  device probe succeeds only in the npu scenario;
- a short list of pure commands (`dirname`, `basename`, `sed`, `awk`, `grep`, `cat`, `date`
  with a fixed `TZ`/`SOURCE_DATE_EPOCH`, …) is the real one;
- every other command does nothing and succeeds (bash's `command_not_found_handle`), and so do
  `cd` and `source` of a file that is not there.

Then, per launch bash ran, every override verl-lint knows (`show --format json`: value not
`<unknown>`) must be bash's word at the same place: the same words, in the same order, with the
same values. An `<unknown>` word stands for any one word, a `…` row (`"$@"`) for any number; a
wrong known value, a missing or an extra word is a disagreement, and so is a launch bash ran that
verl-lint did not see. Where bash stops with `X: unbound variable` (under `set -u`) or
`${X:?}`, VL101 must report `$X` there; a VL101 error bash runs past is a disagreement too. After
such a stop the script is run again with X exported (and verl-lint reads it with `--set X=…`), so
the launches after it are compared as well.

Only run scripts you trust: an absolute path (`/usr/bin/rm`) bypasses the shims.
"""

from __future__ import annotations

import argparse
import atexit
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from functools import lru_cache
from pathlib import Path
from typing import Iterable

from verl_lint.evaluate.model import Launch, Unknown

RECORDERS = ("python", "python3", "torchrun", "ray", "uv", "srun", "nohup", "env", "setsid",
             "timeout", "numactl", "taskset", "stdbuf", "nice", "ionice", "chrt", "mpirun",
             "mpiexec", "conda", "poetry", "pipenv", "micromamba", "mamba", "pixi",
             *(f"python3.{n}" for n in range(8, 15)))
PURE = ("dirname", "basename", "seq", "expr", "tr", "cut", "sed", "awk", "grep", "head", "tail",
        "wc", "cat", "printf", "date", "sort", "uniq", "realpath", "readlink")
TIMEOUT = 10.0  # seconds per bash run
EPOCH = "1700000000"  # SOURCE_DATE_EPOCH: `$(date …)` is the same on every run
PROVIDED = "1"  # the value given to a variable bash stopped on (a number fits arithmetic too)
ARGS = ("1", "1", "1", "1")  # the arguments of a script whose usage check stopped it
MAX_RERUNS = 12
# what the shell environment always has (verl-lint takes these from the environment)
BASE_ENV = {"USER": "oracle", "LOGNAME": "oracle", "SHELL": "/bin/bash", "LANG": "C.UTF-8",
            "TERM": "dumb", "TZ": "UTC", "SOURCE_DATE_EPOCH": EPOCH}

# Sourced by bash before the script (BASH_ENV): the recording functions. A function sees the
# script line that called it (BASH_LINENO); the PATH shims catch what bypasses functions
# (`command python3`, a child process) with line 0.
PRELUDE = r"""
__oracle_n=0
__oracle_write() {
  __oracle_n=$((__oracle_n + 1))
  printf '%s\0' "$@" >| "$__ORACLE_REC/${EPOCHREALTIME/[.,]/}.$BASHPID.$__oracle_n"
}
__oracle_rec() {
  local __i __line=0
  for ((__i = 0; __i + 1 < ${#BASH_SOURCE[@]}; __i++)); do
    if [[ "${BASH_SOURCE[__i + 1]}" == "$__ORACLE_SCRIPT" ]]; then
      __line=${BASH_LINENO[__i]}; break
    fi
  done
  __oracle_write "$__line" "$@"
  __oracle_status "$@"
}
__oracle_status() {  # the device probe answers as the scenario says; everything else succeeds
  local __a
  case "$1" in python*) ;; *) return 0 ;; esac
  for __a in "${@:2}"; do
    if [[ "$__a" == *torch_npu* ]]; then
      [[ "$__ORACLE_DEVICE" == npu ]]; return
    fi
  done
  return 0
}
# VL101's claims, `FIRST-LAST:NAME:HOW` each: before a command on those script lines, record
# when NAME is set after all (HOW=full: set and not empty, for "the run stops when it is empty")
if [[ -n "${__ORACLE_PROBES-}" ]]; then
  IFS=' ' read -ra __oracle_probes <<< "$__ORACLE_PROBES"
  __oracle_probe() {
    [[ "${BASH_SOURCE[1]-}" == "$__ORACLE_SCRIPT" ]] || return 0
    local __p __r __v __how
    for __p in "${__oracle_probes[@]}"; do
      __r=${__p%%:*}; __v=${__p#*:}; __how=${__v#*:}; __v=${__v%%:*}
      if (( ${__r%-*} <= $1 && $1 <= ${__r#*-} )) && [[ -n "${!__v+x}" ]] &&
          [[ "$__how" != full || -n "${!__v}" ]]; then
        __oracle_write -2 "$__p"
      fi
    done
  }
  set -T
  trap '__oracle_probe "$LINENO"' DEBUG
fi
command_not_found_handle() { return 0; }
cd() { builtin cd "$@" 2>/dev/null || true; }
ulimit() { builtin ulimit "$@" 2>/dev/null || true; }
source() { [[ -r "${1-}" ]] || { __oracle_write -1 source "$@"; return 0; }; builtin source "$@"; }
.() { [[ -r "${1-}" ]] || { __oracle_write -1 source "$@"; return 0; }; builtin source "$@"; }
exec {__oracle_fd}>>"$__ORACLE_TRACE"
BASH_XTRACEFD=$__oracle_fd
PS4='+${BASH_SOURCE[0]##*/}:${LINENO}: '
set -x
exec() {
  if (($#)) && [[ "$1" != -* ]]; then "$@"; exit $?; fi
  builtin exec "$@"
}
"""
PRELUDE += "".join(f'{n}() {{ __oracle_rec {n} "$@"; }}\n' for n in RECORDERS)
SHIM = """#!/bin/bash
__oracle_write 0 "${0##*/}" "$@"
__oracle_status "${0##*/}" "$@"
"""
DATE_SHIM = """#!/bin/bash
for a in "$@"; do case "$a" in -d*|--date*|-r*|--reference*|-f*|--file*) exec %s "$@" ;; esac; done
exec %s -d "@$SOURCE_DATE_EPOCH" "$@"
"""
_ERROR = re.compile(r"line (\d+): (.*)$", re.M)
_UNBOUND = re.compile(r"([A-Za-z_]\w*)(?:\[[^\]]*\])?: unbound variable$")
_REQUIRED = re.compile(r"([A-Za-z_]\w*): (.*)$")


@lru_cache(maxsize=1)
def _toolbox() -> tuple[Path, Path]:
    """(shim folder, prelude file), made once per process (removed at exit)."""
    root = Path(tempfile.mkdtemp(prefix="verl-lint-oracle-tools-"))
    atexit.register(shutil.rmtree, root, True)
    bin_dir = root / "bin"
    bin_dir.mkdir()
    for name in RECORDERS:
        (bin_dir / name).write_text(SHIM)
        (bin_dir / name).chmod(0o755)
    for name in PURE:
        real = shutil.which(name, path="/usr/bin:/bin")
        if real is None:
            continue
        if name == "date":
            (bin_dir / name).write_text(DATE_SHIM % (real, real))
            (bin_dir / name).chmod(0o755)
        else:
            (bin_dir / name).symlink_to(real)
    prelude = root / "prelude.sh"
    prelude.write_text(PRELUDE)
    return bin_dir, prelude


@dataclass
class BashRun:
    records: list[tuple[int, list[str]]]  # (script line, argv) per recorded command, in order
    status: int | None  # None: timed out
    stderr: str
    abort: tuple[str, int, str] | None = None  # (variable, line, message) bash stopped on
    error: str | None = None  # another error bash stopped on (`line N: message`)
    missing_sources: list[str] = field(default_factory=list)  # `source F` of an absent F
    set_at: set[str] = field(default_factory=set)  # the probes (`FIRST-LAST:NAME`) that hit
    seconds: float = 0.0
    ran: set[int] = field(default_factory=set)  # script lines xtrace saw run


def run_bash(text: bytes, name: str, env_pins: dict[str, str], device: str | None,
             timeout: float = TIMEOUT, probes: Iterable[str] = (),
             args: tuple[str, ...] = ()) -> BashRun:
    """Run the script under bash with the shims in a throwaway folder."""
    with tempfile.TemporaryDirectory(prefix="verl-lint-oracle-") as tmp:
        root = Path(tmp)
        bin_dir, prelude = _toolbox()
        work, home, rec = root / "work", root / "home", root / "rec"
        trace = root / "trace"
        for d in (work, home, rec):
            d.mkdir()
        script = work / (Path(name).name or "script.sh")
        script.write_bytes(text)
        env = {**BASE_ENV, "HOME": str(home), "PATH": str(bin_dir), "BASH_ENV": str(prelude),
               "TMPDIR": str(root), "__ORACLE_REC": str(rec), "__ORACLE_SCRIPT": str(script),
               "__ORACLE_DEVICE": device or "", "__ORACLE_TRACE": str(trace),
               "__ORACLE_PROBES": " ".join(probes), **env_pins}
        bash = shutil.which("bash", path="/usr/bin:/bin") or "bash"
        start = time.perf_counter()
        try:
            proc = subprocess.run([bash, str(script), *args], cwd=work, env=env,
                                  stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                  stderr=subprocess.PIPE,
                                  timeout=timeout, start_new_session=True)
            status, stderr = proc.returncode, proc.stderr.decode("utf-8", "replace")
        except subprocess.TimeoutExpired as exc:
            status = None
            stderr = (exc.stderr or b"").decode("utf-8", "replace")
        seconds = time.perf_counter() - start
        records = []
        for f in sorted(rec.iterdir(), key=lambda p: [int(x) for x in p.name.split(".")]):
            words = f.read_bytes().split(b"\0")[:-1]
            argv = [w.decode("utf-8", "surrogateescape") for w in words]
            records.append((int(argv[0]), argv[1:]))
        ran = set()
        if trace.exists():
            mark = f"+{script.name}:".encode()
            for raw in trace.read_bytes().splitlines():
                stripped = raw.lstrip(b"+")
                if raw.startswith(b"+") and stripped.startswith(mark[1:]):
                    num = stripped[len(mark) - 1:].split(b":", 1)[0]
                    if num.isdigit():
                        ran.add(int(num))
    run = BashRun(records=[r for r in records if r[0] >= 0], status=status, stderr=stderr,
                  seconds=seconds, ran=ran,
                  missing_sources=[" ".join(r[1][1:]) for r in records if r[0] == -1],
                  set_at={r[1][0] for r in records if r[0] == -2})
    if status not in (0, None):
        lines = text.decode("utf-8", "replace").splitlines()
        last = None
        for m in _ERROR.finditer(stderr):  # the last error of the script itself stopped it
            head = stderr[stderr.rfind("\n", 0, m.start()) + 1:m.start()]
            if head.endswith(f"{script.name}: "):
                last = m
        if last is not None:
            line, message = int(last.group(1)), last.group(2)
            u = _UNBOUND.match(message)
            r = _REQUIRED.match(message)
            if u is not None:
                run.abort = (u.group(1), line, "unbound variable")
            elif r is not None and 0 < line <= len(lines) and re.search(
                    r"\$\{" + r.group(1) + r":?\?", "\n".join(lines[max(0, line - 30):line])):
                run.abort = (r.group(1), line, r.group(2))  # `${X:?message}`
            else:
                run.error = f"line {line}: {message}"
    return run


# ---- verl-lint's reading ------------------------------------------------------------------------

@dataclass
class Finding:
    """A VL101 finding: `$var` is unset at `line` (and at its labels)."""

    var: str
    line: int
    severity: str
    ranges: list[tuple[int, int]]  # lines of the commands holding each use: bash reports an
    # error at one line of its command


@dataclass
class Reading:
    launches: list[Launch]
    vl101: list[Finding]
    label: str


def read_script(text: bytes, path: Path, pins: dict[str, str], label: str) -> Reading:
    """verl-lint's reading of scenario `label`, as `check` and `show` make it (`--set` for
    the variables the oracle provided)."""
    from verl_lint.cli.check import settings_for_args
    from verl_lint.engine import lint_source
    from verl_lint.evaluate import evaluate_script
    from verl_lint.shell import parse_script
    from verl_lint.source import SourceText

    settings = settings_for_args(["--select", "VL101"], path)
    settings = replace(settings, pins={**settings.pins, **pins})
    source = SourceText(text, str(path))
    model = parse_script(source)
    runs = evaluate_script(model, device=settings.device, pins=settings.pins or None,
                           known_env=frozenset(settings.known_env))
    run = next((r for r in runs if r.scenario.label == label), runs[0])
    report = lint_source(source, settings, path=str(path))

    def lines_of(span) -> tuple[int, int]:
        holder = [(s.span.line, s.span.end_line) for s in model.statements
                  if s.span.start <= span.start < s.span.end]
        return holder[-1] if holder else (span.line, span.line)

    vl101 = []
    for d in report.diagnostics:
        m = re.match(r"`\$([A-Za-z_]\w*)`", d.message)
        if d.code == "VL101" and m and (not d.scenarios or run.scenario.label in d.scenarios):
            vl101.append(Finding(m.group(1), d.span.line, d.severity.value,
                                 [lines_of(d.span)] + [lines_of(lb.span) for lb in d.labels]))
    return Reading(launches=run.launches, vl101=vl101, label=run.scenario.label)


# ---- comparing --------------------------------------------------------------------------------

@dataclass
class LaunchResult:
    line: int
    module: str | None
    agree: bool
    detail: str
    known: int = 0
    unknown: list[str] = field(default_factory=list)  # reasons of the <unknown> words


@dataclass
class ScenarioResult:
    label: str
    runs: int = 0
    launches: list[LaunchResult] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)  # disagreements
    notes: list[str] = field(default_factory=list)  # what could not be compared
    seconds: float = 0.0


@dataclass
class ScriptResult:
    path: str
    scenarios: list[ScenarioResult] = field(default_factory=list)
    error: str | None = None

    @property
    def disagreements(self) -> int:
        return sum(len(s.problems) + sum(not r.agree for r in s.launches)
                   for s in self.scenarios) + (self.error is not None)


def bash_launch(argv: list[str]) -> Launch | None:
    """verl-lint's launch recogniser over bash's argv (every word known)."""
    from verl_lint.evaluate.launch import detect_launch
    from verl_lint.evaluate.values import Field, Part
    from verl_lint.source import Span

    span = Span(start=0, end=0, line=0, column=0, end_line=0, end_column=0)
    fields = [Field([Part(w)], span) for w in argv]
    cmd = type("Cmd", (), {"span": span})()
    return detect_launch(fields, cmd, lambda a, b: None)


def _items(launch: Launch) -> list:
    """The launch's argv after the entry point as verl-lint reads it: override texts (str or
    Unknown) with `...` where a passthrough may add any number of words."""
    out: list = []
    pts = sorted(launch.passthrough, key=lambda p: p.position)
    k = 0
    for i, o in enumerate(launch.overrides):
        while k < len(pts) and pts[k].position <= i:
            out.append(...)
            k += 1
        out.append(o.text)
    out.extend(... for _ in pts[k:])
    return out


def match(items: list, words: list[str]) -> bool:
    """`items` (str: that word; Unknown: any one word; ...: any number) matches `words`."""
    n, m = len(items), len(words)
    ok = [[False] * (m + 1) for _ in range(n + 1)]
    ok[n][m] = True
    for i in range(n - 1, -1, -1):
        it = items[i]
        for j in range(m, -1, -1):
            if it is ...:
                ok[i][j] = ok[i + 1][j] or (j < m and ok[i][j + 1])
            elif j < m and (isinstance(it, Unknown) or it == words[j]):
                ok[i][j] = ok[i + 1][j + 1]
    return ok[0][0]


def explain(items: list, words: list[str]) -> str:
    """The first place where the two readings part (for the report)."""
    i = j = 0
    while i < len(items) and j < len(words):
        it = items[i]
        if it is ...:
            return f"after a `…` at word {j + 1}: verl-lint {_show(items[i + 1:])}, bash " \
                   f"{_show(words[j:])}"
        if not (isinstance(it, Unknown) or it == words[j]):
            key = str(it).split("=", 1)[0]
            if words[j].split("=", 1)[0] == key:
                return f"word {j + 1}: verl-lint `{it}`, bash `{words[j]}` (wrong value)"
            if it in words[j:]:
                return f"word {j + 1}: bash has extra `{words[j]}` before `{it}`"
            return f"word {j + 1}: verl-lint `{it}`, bash `{words[j]}` (missing or wrong)"
        i += 1
        j += 1
    if i < len(items):
        return f"bash has no word for verl-lint's {_show(items[i:])}"
    return f"bash has extra words {_show(words[j:])}"


def _show(seq: list, n: int = 3) -> str:
    text = ", ".join("…" if x is ... else f"`{x}`" for x in seq[:n])
    return f"[{text}{', …' if len(seq) > n else ''}]"


def compare_launches(reading: Reading, bash: BashRun, res: ScenarioResult) -> None:
    ran = [(line, bl) for line, argv in bash.records
           if (bl := bash_launch(argv)) is not None]
    by_span: dict[tuple[int, int], list[Launch]] = {}
    for launch in reading.launches:
        by_span.setdefault((launch.span.line, launch.span.end_line), []).append(launch)
    used: dict[tuple[int, int], int] = {}
    for line, bl in ran:
        span = next((s for s in by_span if s[0] <= line <= s[1]), None)
        if span is None:
            res.problems.append(f"bash ran a launch at line {line} ({bl.module or bl.script}) "
                                "that verl-lint does not see")
            continue
        k = used.get(span, 0)
        used[span] = k + 1
        ours = by_span[span][min(k, len(by_span[span]) - 1)]
        res.launches.append(_compare_one(ours, bl, line))


def _compare_one(ours: Launch, theirs: Launch, line: int) -> LaunchResult:
    items = _items(ours)
    words = [o.text for o in theirs.overrides]
    unknown = [x.reason for x in items if isinstance(x, Unknown)] + [
        "… " + p.reason for p in ours.passthrough]
    known = sum(isinstance(x, str) for x in items)
    n_unknown = sum(isinstance(x, Unknown) for x in items)
    bad = []
    if (ours.module, ours.script) != (theirs.module, theirs.script):
        bad.append(f"entry point: verl-lint {ours.module or ours.script}, bash "
                   f"{theirs.module or theirs.script}")
    for what in ("config_name", "config_path"):
        a, b = getattr(ours, what), getattr(theirs, what)
        if not isinstance(a, Unknown) and a != b:
            bad.append(f"{what}: verl-lint {a!r}, bash {b!r}")
    if not match(items, words):
        bad.append(explain(items, words))
    detail = "; ".join(bad) if bad else (
        f"{known} overrides agree" + (f", {n_unknown} <unknown>" if n_unknown else "")
        + (f", {items.count(...)} …" if ... in items else ""))
    return LaunchResult(line=line, module=ours.module or ours.script, agree=not bad,
                        detail=detail, known=known, unknown=unknown)


def check_script(path: Path, timeout: float = TIMEOUT) -> ScriptResult:
    from verl_lint.evaluate.scenarios import infer_scenarios
    from verl_lint.shell import parse_script
    from verl_lint.source import SourceText

    out = ScriptResult(path=str(path))
    try:
        text = path.read_bytes()
        model = parse_script(SourceText(text, str(path)))
    except (OSError, ValueError) as exc:
        out.error = f"cannot read: {exc}"
        return out
    if model.errors:  # bash would not run it as verl-lint reads it
        out.scenarios.append(ScenarioResult(label="", notes=[
            f"parse error at line {model.errors[0].span.line}: not compared"]))
        return out
    from verl_lint.cli.check import settings_for_args

    settings = settings_for_args([], path)  # its config file may pin the device or variables
    scenarios, _ = infer_scenarios(model, settings.device, dict(settings.pins))
    for sc in scenarios:
        out.scenarios.append(_check_scenario(text, path, sc, timeout))
    return out


def _check_scenario(text: bytes, path: Path, sc, timeout: float) -> ScenarioResult:
    res = ScenarioResult(label=sc.label)
    provided: dict[str, str] = {}
    seen_launch_lines: set[int] = set()
    args: tuple[str, ...] = ()
    for _ in range(MAX_RERUNS):
        reading = read_script(text, path, provided, sc.label)
        pins = {**dict(sc.pins), **provided}
        # the variable the scenario assumes is exported here: `_check_assumed` runs without it
        probes = [_probe(f, r) for f in reading.vl101 if f.var not in sc.assumed
                  for r in f.ranges]
        bash = run_bash(text, path.name, pins, sc.device, timeout, probes, args)
        if not args and reading.launches and _reads_arguments(text) and \
                not any(bash_launch(a) for _, a in bash.records):
            # a usage check (`[ "$#" -lt 2 ] && exit 1`) stopped it: verl-lint reads the
            # arguments as unknown, so any will do
            args = ARGS
            res.notes.append("rerun with arguments " + " ".join(args))
            bash = run_bash(text, path.name, pins, sc.device, timeout, probes, args)
            res.runs += 1
        res.runs += 1
        res.seconds += bash.seconds
        if bash.status is None:
            res.notes.append(f"bash timed out after {timeout:.0f} s")
        before = len(res.launches)
        compare_launches(reading, bash, res)
        # a rerun repeats the launches before the stop: keep each line's first comparison
        res.launches[before:] = [r for r in res.launches[before:]
                                 if r.line not in seen_launch_lines or not r.agree]
        seen_launch_lines.update(r.line for r in res.launches[before:])
        stop = bash.abort
        if bash.error:
            res.notes.append(f"bash stops at {bash.error}")
        for f in reading.vl101:
            hit = [x for x in map(lambda r: _probe(f, r), f.ranges) if x in bash.set_at]
            if hit:
                res.problems.append(f"VL101 says `${f.var}` is unset at line "
                                    f"{hit[0].split('-')[0]}; bash has it set there")
                continue
            if f.severity != "error" or f.var in sc.assumed or _stopped_at(f, stop):
                continue
            first = f.ranges[0][0]
            if first not in bash.ran or (stop is not None and first >= stop[1]):
                continue  # not reached in this run (another branch, or after a stop)
            res.problems.append(f"VL101 error on `${f.var}` at line {f.line}, but bash runs "
                                "past it")
        if stop is None:
            break
        var, line, message = stop
        if not any(_stopped_at(f, stop) for f in reading.vl101):
            where = [f.line for f in reading.vl101 if f.var == var]
            said = f"reports it at line {where[0]}" if where else "is silent"
            excuse = _excuse(var, bash)
            if excuse:
                res.notes.append(f"bash stops on `${var}` at line {line} ({excuse})")
            else:
                res.problems.append(f"bash stops at line {line}: `{var}: {message}`; VL101 {said}")
        if var in provided:
            res.notes.append(f"bash stops on `{var}` again at line {line}")
            break
        provided[var] = dict(sc.pins).get(var, PROVIDED)
    _check_assumed(text, path, sc, reading, res, timeout, provided)
    if provided:
        res.notes.append("rerun with " + " ".join(f"{k}={v}" for k, v in provided.items()))
    return res


def _probe(f: Finding, lines: tuple[int, int]) -> str:
    """VL101's claim at one use, for the prelude: an info (`${X:?}`, `X=${X}`) says the value
    is empty or unset, the others that it is unset."""
    return f"{lines[0]}-{lines[1]}:{f.var}:{'full' if f.severity == 'info' else 'set'}"


def _reads_arguments(text: bytes) -> bool:
    return re.search(rb"\$\{?[#1-9]", text) is not None


def _stopped_at(f: Finding, stop) -> bool:
    return stop is not None and stop[0] == f.var and any(a <= stop[1] <= b for a, b in f.ranges)


def _check_assumed(text: bytes, path: Path, sc, reading: Reading, res: ScenarioResult,
                   timeout: float, provided: dict[str, str]) -> None:
    """VL101 on the variable the scenario assumes (`case "${DEVICE}"` under `set -u`, never
    assigned): bash, without it exported, must stop there."""
    for f in reading.vl101:
        if f.var in sc.assumed:
            # export what VL101 reports besides, so that bash gets as far as the use
            others = {g.var: PROVIDED for g in reading.vl101}
            pins = {k: v for k, v in {**others, **dict(sc.pins), **provided}.items()
                    if k != f.var}
            bash = run_bash(text, path.name, pins, sc.device, timeout)
            res.runs += 1
            if not _stopped_at(f, bash.abort):
                res.problems.append(f"VL101 on `${f.var}` at line {f.line}: with nothing "
                                    "exported bash does not stop there")


def _excuse(var: str, bash: BashRun) -> str | None:
    """Why a stop on `var` is not verl-lint's to predict: the environment provides it, or a
    file the script sources (absent here) may set it."""
    from verl_lint.evaluate.interp import is_environment
    from verl_lint.rules.shell.undefined_variable import is_known_env

    if is_environment(var, frozenset()) or is_known_env(var, ()):
        return "an environment variable the oracle does not provide"
    if bash.missing_sources:
        return f"`source {bash.missing_sources[0]}` is absent here and may set it"
    return None


# ---- command line ---------------------------------------------------------------------------

def iter_scripts(paths: Iterable[str]) -> list[Path]:
    out: list[Path] = []
    for p in map(Path, paths):
        out.extend(sorted(p.rglob("*.sh")) if p.is_dir() else [p])
    return out


def check_paths(paths: Iterable[str], jobs: int = 0, timeout: float = TIMEOUT
                ) -> list[ScriptResult]:
    from verl_lint.rules.registry import all_rules

    all_rules()  # the registry loads on first use: not from several threads at once
    _toolbox()
    scripts = iter_scripts(paths)
    jobs = jobs or min(4, (os.cpu_count() or 1) + 1)
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        return list(pool.map(lambda p: check_script(p, timeout), scripts))


# what verl-lint leaves <unknown> (or `…`) on purpose, by construct (first match wins)
KINDS = (
    (r"^… .*\"\$@\"|^… \"\$@\"", '"$@": the caller\'s arguments (…)'),
    (r"^… .*matches? against file names", "an unquoted expansion bash globs (…)"),
    (r"^… .*may expand to several words", "an unquoted unknown expansion (…)"),
    (r"^… .*brace-expands", "brace expansion of a word with quotes or expansions (…)"),
    (r"^… .*IFS", "word splitting under the script's own IFS (…)"),
    (r"^… elements of", "array elements an undecided branch adds (…)"),
    (r"^… ", "other places more words may arrive (…)"),
    (r"comes from the environment", "a variable the environment provides ($HOME, $USER…)"),
    (r"\$PWD|\$\(pwd\)|working folder", "the working folder ($PWD, $(pwd), after `cd`)"),
    (r"an argument the caller passes|\$#", "a positional argument ($1…)"),
    (r"\$\(date", "$(date …)"),
    (r"\$\(|`", "other command output $(…)"),
    (r"is not set by the script|is unset here", "a variable the script never sets"),
    (r"home directory", "~ (the user's home)"),
    (r"may be (set|changed) by", "after `source`/`eval`"),
    (r"differs between|only set by|only known to be non-empty", "a branch verl-lint cannot decide"),
    (r"loop variable", "a loop variable"),
    (r"associative array|hash order", "associative array order or keys"),
)


def unknown_kinds(results: list[ScriptResult]) -> dict[str, int]:
    """The <unknown> words (and `…` places) of the launches bash ran, by construct, most common
    first."""
    counts: dict[str, int] = {}
    for r in results:
        for s in r.scenarios:
            for lr in s.launches:
                for reason in lr.unknown:
                    kind = next((k for rx, k in KINDS if re.search(rx, reason)),
                                re.sub(r"\$\{?[A-Za-z_]\w*\}?|\d+", "…", reason))
                    counts[kind] = counts.get(kind, 0) + 1
    return dict(sorted(counts.items(), key=lambda kv: -kv[1]))


def report(results: list[ScriptResult], *, verbose: bool = True) -> str:
    lines = []
    for r in results:
        if r.error:
            lines.append(f"{r.path}: DISAGREE {r.error}")
            continue
        bad = r.disagreements
        lines.append(f"{r.path}: {'DISAGREE' if bad else 'agree'}")
        if not verbose and not bad:
            continue
        for s in r.scenarios:
            lines.append(f"  scenario {s.label or '(single)'}: {s.runs} bash run(s), "
                         f"{len(s.launches)} launch(es) compared")
            for lr in s.launches:
                mark = "agree" if lr.agree else "DISAGREE"
                lines.append(f"    launch line {lr.line} {lr.module}: {mark}: {lr.detail}")
            for p in s.problems:
                lines.append(f"    DISAGREE: {p}")
            for n in s.notes:
                lines.append(f"    note: {n}")
    total = sum(r.disagreements for r in results)
    launches = sum(len(s.launches) for r in results for s in r.scenarios)
    lines.append(f"{len(results)} script(s), {launches} launch(es) compared, "
                 f"{total} disagreement(s)")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m verl_lint.dev.bash_oracle",
                                 description=__doc__.split("\n\n")[0])
    ap.add_argument("paths", nargs="+", help="scripts or folders (every *.sh below)")
    ap.add_argument("--format", choices=["text", "json"], default="text")
    ap.add_argument("--quiet", action="store_true", help="only scripts that disagree")
    ap.add_argument("--unknowns", action="store_true",
                    help="also count the <unknown> words by kind")
    ap.add_argument("--jobs", type=int, default=0)
    ap.add_argument("--timeout", type=float, default=TIMEOUT, help="seconds per bash run")
    args = ap.parse_args(argv)
    if shutil.which("bash", path="/usr/bin:/bin") is None:
        print("error: bash is not installed", file=sys.stderr)
        return 2
    start = time.perf_counter()
    results = check_paths(args.paths, args.jobs, args.timeout)
    if args.format == "json":
        from dataclasses import asdict
        print(json.dumps({"results": [asdict(r) for r in results],
                          "unknown_kinds": unknown_kinds(results)}, indent=2))
    else:
        print(report(results, verbose=not args.quiet))
        if args.unknowns:
            for kind, n in unknown_kinds(results).items():
                print(f"  {n:5d}  {kind}")
        print(f"({time.perf_counter() - start:.1f} s)")
    return 1 if any(r.disagreements for r in results) else 0


if __name__ == "__main__":
    sys.exit(main())
