"""VL212 missing-referenced-file."""

from __future__ import annotations

import ast
import re
from pathlib import Path
from typing import Iterable, Iterator

from verl_lint.diagnostics import Diagnostic, Severity
from verl_lint.evaluate.model import Unknown
from verl_lint.result_cache import consulted
from verl_lint.rules.base import LaunchContext, Rule
from verl_lint.rules.knowledge.fixes import describe_origin, value_span
from verl_lint.rules.origin import script_span
from verl_lint.rules.registry import register
from verl_lint.shell.model import Command

# (key suffix, the key naming what the file must define, what it is)
_REFERENCES = (
    ("custom_reward_function.path", "custom_reward_function.name", "function"),
    ("data.custom_cls.path", "data.custom_cls.name", "class"),
    ("tool_config_path", None, None),
    ("interaction_config_path", None, None),
)
_LEAVES = frozenset(suffix.rpartition(".")[2] for suffix, _, _ in _REFERENCES)  # a key's last part
_SCALARS = frozenset({str, int, float, bool, type(None)})  # a value that holds no key below it
# `cd "$(dirname "$0")"`, `cd "$(dirname "${BASH_SOURCE[0]}")"`, `cd "$(dirname "$0")/.."`
_SCRIPT_DIR_CD = re.compile(
    r'^"?\$\((?:cd\s+)?dirname\s+"?\$(?:0|\{0\}|\{BASH_SOURCE(?:\[0\])?\}|BASH_SOURCE)"?\)"?$')


def _script_dir(ctx: LaunchContext) -> Path | None:
    """The script's folder (for stdin, the folder of `--stdin-filename`), if it exists."""
    folder = ctx.settings.workspace(ctx.path).script_dir
    if folder is None:
        return None
    folder = folder.resolve()
    return folder if folder.is_dir() else None


def _workspace_root(ctx: LaunchContext, script_dir: Path | None) -> Path | None:
    """The project root (the configuration file's folder, else the git root above the
    script), else the script's folder."""
    root = ctx.settings.workspace(ctx.path).project_root
    return root if root is not None else script_dir


def _run_dir(ctx: LaunchContext, script_dir: Path | None) -> tuple[Path | None, bool]:
    """(the folder the launch runs in, whether that is certain). A `cd` into the script's
    folder before the launch makes it the script's folder; any other `cd`/`pushd` makes it
    unknown; without one it is the folder the script is started from, which verl-lint only
    assumes to be its own current folder (not certain)."""
    start = ctx.launch.span.start
    where: tuple[Path | None, bool] = (Path.cwd(), False)
    for c in ctx.model.commands:
        if c.span.start >= start:
            break
        if c.name in ("cd", "pushd", "popd"):
            where = (script_dir, True) if c.name == "cd" and _cds_to_script_dir(c) \
                and script_dir is not None else (None, False)
    return where


def _cds_to_script_dir(c: Command) -> bool:
    return len(c.args) == 1 and _SCRIPT_DIR_CD.match(c.args[0].text) is not None


def resolve_run_path(ctx: LaunchContext, value: str) -> tuple[Path, bool] | None:
    """Where a path the config names is, as the launch will open it: (path, certain). Relative
    paths resolve against the folder the run starts in (`_run_dir`); `certain` is False when
    that folder is only assumed to be verl-lint's own, so a missing file there proves nothing.
    None for a path the linter cannot place: `~`, a URL, an absolute path outside the
    workspace, a run folder it cannot tell. (Issue 13's workspace root will plug in here.)"""
    if not value or value.startswith("~") or "://" in value:
        return None
    script_dir = _script_dir(ctx)
    path = Path(value)
    if path.is_absolute():
        root = _workspace_root(ctx, script_dir)
        if root is None or not path.resolve().is_relative_to(root):
            return None
        return path, True
    base, certain = _run_dir(ctx, script_dir)
    if base is None:
        return None
    return (base / path).resolve(), certain


def defined_names(source: bytes) -> set[str] | None:
    """Top-level functions, classes, assignments and imports of a Python file; None when it
    does not parse or defines names in a way not read here (a star import, a tuple or attribute
    target, a `def` under `if`/`try`/`with`/a loop…): then no name is known to be missing."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return None
    names: set[str] = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if not all(isinstance(t, ast.Name) for t in targets):
                return None
            names.update(t.id for t in targets)  # type: ignore[attr-defined]
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            if any(a.name == "*" for a in node.names):
                return None
            names.update((a.asname or a.name).split(".")[0] for a in node.names)
        elif not isinstance(node, (ast.Expr, ast.Pass, ast.Assert)):
            return None  # compound statements, `global`, `del`…: names not worth guessing
    return names


@register
class MissingReferencedFile(Rule):
    """A file the config points at does not exist, or does not define the named function.

    ## What it does
    Checks the files a launch's effective config names — `custom_reward_function.path` (and
    `reward.custom_reward_function.path` on newer releases) with its `name` (default
    `compute_score`), `data.custom_cls.path` with its class `name`, the multi-turn
    `tool_config_path` and `interaction_config_path` — where verl-lint can tell where the run
    opens them:
    - a relative path, when the script first `cd`s into its own folder
      (`cd "$(dirname "$0")"`): the file must exist there;
    - a relative path otherwise: only when the file exists in the folder verl-lint runs in is
      its content checked (the run may start elsewhere);
    - an absolute path inside the workspace (the configuration file's folder, else the git
      root): the file must exist.
    A path from an environment variable, under `~`, or outside the workspace is skipped. A Python
    file must define the named function or class at top level (read with `ast`, never
    imported).

    ## Why is this bad?
    verl loads these files only when the trainer starts (`load_extern_type` /
    `get_custom_reward_fn` import the file by path and read the attribute): a moved file or a
    renamed `compute_score_x` fails with `FileNotFoundError` or `AttributeError` after the
    cluster is allocated and Ray is up.

    ## Example
    ```bash
    #!/usr/bin/env bash
    set -xeuo pipefail
    cd "$(dirname "$0")"
    python3 -m verl.trainer.main_ppo \\
        actor_rollout_ref.model.path=Qwen/Qwen2.5-7B-Instruct \\
        custom_reward_function.path=./reward/does_not_exist.py \\
        custom_reward_function.name=compute_score_math
    ```

    ## Use instead
    ```bash
    #!/usr/bin/env bash
    set -xeuo pipefail
    cd "$(dirname "$0")"
    python3 -m verl.trainer.main_ppo \\
        actor_rollout_ref.model.path=Qwen/Qwen2.5-7B-Instruct
    ```

    ## Fix safety
    No fix: the right file or function name is the author's.

    ## References
    - verl `verl/trainer/ppo/reward.py` (`get_custom_reward_fn`: `spec_from_file_location`, then
      `getattr(module, name)`; 0.9.1 `verl/utils/import_utils.py` `load_extern_object`)
    - verl `verl/utils/import_utils.py` `load_extern_type` (`data.custom_cls`)
    """

    code = "VL212"
    name = "missing-referenced-file"
    severity = Severity.ERROR
    summary = "a file the config names is missing or does not define the named function/class"
    scope = "launch"

    def check(self, ctx: LaunchContext) -> Iterable[Diagnostic]:
        config = ctx.config
        if config is None:
            return
        for key, name_key, kind in self._references(config, ctx.analysis.applied):
            resolved = config.get(key)
            if resolved is None or resolved.origin.kind != "script" or \
                    not isinstance(resolved.value, str):
                continue
            where = resolve_run_path(ctx, resolved.value.strip("'\""))
            if where is None:
                continue
            path, certain = where
            span = self._span(ctx, resolved)
            consulted(path)  # the result cache re-lints when it appears, changes or goes
            if not path.is_file():
                if certain:
                    where = "" if Path(resolved.value).is_absolute() else \
                        " in the script's folder, where the script cd's before the launch"
                    yield self.diagnostic(
                        span, f"`{key}` is {resolved.value} ({describe_origin(ctx, resolved)}): "
                              f"no such file{where}; verl fails when it loads it")
                continue
            if name_key is None or path.suffix != ".py":
                continue
            named = config.get(name_key)
            name = named.value if named is not None else None
            if not isinstance(name, str) or not name or isinstance(name, Unknown):
                continue
            try:
                names = defined_names(path.read_bytes())
            except OSError:
                continue
            if names is not None and name not in names:
                yield self.diagnostic(
                    self._span(ctx, named) if named.origin.kind == "script" else span,
                    f"{path.name} defines no {kind} `{name}` (`{name_key}`, "
                    f"{describe_origin(ctx, named)}); verl fails with AttributeError when it "
                    f"loads `{key}`")

    @staticmethod
    def _references(config, applied) -> Iterator[tuple[str, str | None, str | None]]:
        # only a value the script set is checked: the keys at or below an applied override
        # (listing every key of the config per launch was a sixth of a cold run). An override
        # of a plain value to a key that names no reference is passed over unasked (nearly
        # all of them): a key below it can only be there through another applied override —
        # one below it, or one setting it or a key above it to a container or interpolation —
        # which brings that key itself. (The keys come in another order then; findings are
        # sorted and merged.)
        keys = dict.fromkeys(k for a in applied
                             if a.key.rpartition(".")[2] in _LEAVES or type(a.value) not in
                             _SCALARS or type(a.value) is str and "${" in a.value
                             for k in ((a.key,) if a.key in config else config.keys(a.key + ".")))
        return MissingReferencedFile._references_of(keys)

    @staticmethod
    def _references_of(keys: Iterable[str]) -> Iterator[tuple[str, str | None, str | None]]:
        """(key, the key naming its function or class, "function"/"class") for the keys that
        name a file."""
        for key in keys:
            if key.rpartition(".")[2] not in _LEAVES:
                continue  # (most keys: one set lookup instead of a test per reference)
            for suffix, name_suffix, kind in _REFERENCES:
                if key == suffix or key.endswith("." + suffix):
                    name_key = key[:-len(suffix)] + name_suffix if name_suffix else None
                    yield key, name_key, kind

    @staticmethod
    def _span(ctx: LaunchContext, resolved):
        word = script_span(resolved)
        return value_span(ctx, word) if word is not None else ctx.entry_span()
