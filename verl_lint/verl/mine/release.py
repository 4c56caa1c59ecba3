"""Mine a verl tree: entry points, config groups, dataclass fields, converted nodes, registries.

`mine_release(files)` gives what `VerlRelease` reads (the `<version>-release.json` the build
script bundles, or the cached mining of a tree on disk). Composition (hydra-core over the YAML
files) is not done here: the build script precomposes the default variants, a tree on disk is
composed on demand (`verl_lint.verl.configs`).
"""

from __future__ import annotations

import ast
import posixpath
import re
from typing import Any, Iterable, Mapping

Files = Mapping[str, bytes]

# verl's own trainer configs: what `pkg://verl.trainer.config` and `file://verl/trainer/config`
# in a config's `hydra.searchpath` name
TRAINER_CONFIG = "verl/trainer/config"


def mine_release(files: Files) -> dict[str, Any]:
    """Everything `VerlRelease` needs from a tree, without composing it."""
    entry_points = hydra_entry_points(files)
    dirs = sorted({d for ep in entry_points.values() for d in (ep["config_dir"], *ep["search"])})
    groups, names = {}, {}
    for d in dirs:
        groups[d], names[d] = config_groups(files, d)
    targets = yaml_targets(files, dirs)
    sites = converted_nodes(files)
    for module, ep in entry_points.items():
        ep["converts"] = {}
        for site in entry_conversions(files, module, sites):
            ep["converts"].setdefault(site["node"], site["evidence"])
    return {
        "version": tree_version(files),
        "entry_points": entry_points,
        "groups": groups,
        "config_names": names,
        "dataclasses": dataclass_fields(files, targets),
        "converted": sites,
        "registries": registries(files),
        "modules": sorted(python_modules(files)),
    }


def tree_version(files: Files) -> str | None:
    """`verl/version/version` (what `verl.__version__` reads), if the tree has it."""
    raw = files.get("verl/version/version")
    if raw is None:
        return None
    text = raw.decode("utf-8", "replace").strip()
    return text or None


def python_modules(files: Files) -> set[str]:
    """Dotted module names of the tree's Python files (`verl.trainer.main_ppo`)."""
    return {module_name(p) for p in files if p.endswith(".py")}


def module_name(path: str) -> str:
    return path[:-3].replace("/", ".").removesuffix(".__init__")


# --- entry points ------------------------------------------------------------------------------

def hydra_entry_points(files: Files, paths: Iterable[str] | None = None) -> dict[str, dict]:
    """{module: {config_dir, config_name, search, evidence}} for every `@hydra.main` in `paths`
    (default: every Python file under `verl/`)."""
    out: dict[str, dict] = {}
    for path in sorted(paths if paths is not None else
                       (p for p in files if p.endswith(".py") and p.startswith("verl/"))):
        raw = files.get(path)
        if raw is None or b"hydra.main" not in raw:
            continue
        found = hydra_main(raw, path)
        if found is None:
            continue
        config_path, config_name, line = found
        config_dir = posixpath.normpath(posixpath.join(posixpath.dirname(path), config_path))
        out[module_name(path)] = {
            "config_dir": config_dir, "config_name": config_name,
            "search": search_dirs(files, config_dir, config_name),
            "evidence": f"{path}:{line}",
        }
    return out


def hydra_main(source: bytes, path: str = "<file>") -> tuple[str, str, int] | None:
    """(config_path, config_name, line) of the `@hydra.main(...)` decorator in a module, or None
    (no decorator, or arguments that are not string literals)."""
    try:
        tree = ast.parse(source, filename=path)
    except (SyntaxError, ValueError):
        return None
    for node in ast.walk(tree):
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        for dec in node.decorator_list:
            if not (isinstance(dec, ast.Call) and _dotted(dec.func) in ("hydra.main", "main")):
                continue
            if _dotted(dec.func) == "main" and b"from hydra import main" not in source:
                continue
            args = {kw.arg: kw.value for kw in dec.keywords}
            for name, value in zip(("config_path", "config_name"), dec.args):
                args.setdefault(name, value)
            path_node, name_node = args.get("config_path"), args.get("config_name")
            config_path = _literal_str(path_node) if path_node is not None else "."
            config_name = _literal_str(name_node) if name_node is not None else None
            if config_path is None or config_name is None:
                return None
            return config_path, config_name.removesuffix(".yaml"), dec.lineno
    return None


def search_dirs(files: Files, config_dir: str, config_name: str) -> list[str]:
    """The primary config's `hydra.searchpath`, as folders of the tree (verl's trainer configs
    for `pkg://verl.trainer.config` / `file://verl/trainer/config`)."""
    raw = files.get(f"{config_dir}/{config_name}.yaml")
    if raw is None:
        return []
    import yaml  # only when mining a tree: keeps PyYAML (≈ 8 ms) off a lint's start-up

    try:
        doc = yaml.safe_load(raw)
    except yaml.YAMLError:
        return []
    hydra = doc.get("hydra") if isinstance(doc, dict) else None
    entries = hydra.get("searchpath") if isinstance(hydra, dict) else None
    out = []
    for entry in entries if isinstance(entries, list) else ():
        folder = searchpath_folder(str(entry))
        if folder is not None and folder not in out:
            out.append(folder)
    return out


def searchpath_folder(entry: str) -> str | None:
    """`pkg://verl.trainer.config` → `verl/trainer/config`; `file://x/y` → `x/y` (relative to
    where the run starts); anything else (an absolute file path, another scheme) → None."""
    if entry.startswith("pkg://"):
        return entry[len("pkg://"):].strip("/").replace(".", "/")
    if entry.startswith("file://"):
        rest = entry[len("file://"):]
        return posixpath.normpath(rest) if rest and not rest.startswith("/") else None
    return None


# --- config groups -----------------------------------------------------------------------------

def config_groups(files: Files, config_dir: str) -> tuple[dict[str, list[str]], list[str]]:
    """Hydra config groups below `config_dir` (folders, recursively) with their options, and
    the top-level config names."""
    prefix = config_dir.rstrip("/") + "/" if config_dir else ""
    groups: dict[str, list[str]] = {}
    names: list[str] = []
    for path in sorted(files):
        if not path.startswith(prefix) or not path.endswith(".yaml"):
            continue
        rel = path[len(prefix):]
        folder, _, leaf = rel.rpartition("/")
        stem = leaf[:-len(".yaml")]
        if folder:
            groups.setdefault(folder, []).append(stem)
        else:
            names.append(stem)
    return groups, sorted(names)


_TARGET_LINE = re.compile(rb"^\s*_target_:\s*['\"]?([\w.]+)", re.M)


def yaml_targets(files: Files, dirs: Iterable[str]) -> set[str]:
    """Every `_target_` class the config YAMLs of `dirs` name."""
    prefixes = tuple(d.rstrip("/") + "/" for d in dirs)
    out: set[str] = set()
    for path, raw in files.items():
        if path.endswith(".yaml") and path.startswith(prefixes):
            out.update(m.group(1).decode() for m in _TARGET_LINE.finditer(raw))
    return out


# --- dataclass fields --------------------------------------------------------------------------

def _is_dataclass(node: ast.ClassDef) -> bool:
    for dec in node.decorator_list:
        target = dec.func if isinstance(dec, ast.Call) else dec
        name = target.attr if isinstance(target, ast.Attribute) else getattr(target, "id", "")
        if name == "dataclass":
            return True
    return False


def dataclass_fields(files: Files, targets: set[str]) -> dict[str, dict[str, str]]:
    """{`_target_` → {field: annotation}} for every target that is a dataclass of the tree.

    Only files that define one of the wanted class names are parsed (a whole verl tree takes
    seconds to parse); a base class is looked up the same way, on demand."""
    parsed: dict[str, ast.Module | None] = {}
    classes: dict[str, list[tuple[str, ast.ClassDef]]] = {}
    scanned: set[str] = set()

    def scan(name: str) -> None:
        if name in scanned:
            return
        scanned.add(name)
        needle = f"class {name}".encode()
        for path, raw in files.items():
            if not path.endswith(".py") or needle not in raw:
                continue
            if path not in parsed:
                try:
                    parsed[path] = ast.parse(raw)
                except (SyntaxError, ValueError):
                    parsed[path] = None
            tree = parsed[path]
            for node in tree.body if tree is not None else ():
                if isinstance(node, ast.ClassDef) and node.name == name:
                    classes.setdefault(name, []).append((module_name(path), node))

    def find(name: str, module_hint: str) -> ast.ClassDef | None:
        scan(name)
        cands = classes.get(name, [])
        exact = [c for m, c in cands if m == module_hint or m.startswith(module_hint + ".")]
        pool = exact or [c for _, c in cands]
        return pool[0] if len(pool) == 1 or exact else None

    def fields(cls: ast.ClassDef, module: str, seen: frozenset[str] = frozenset()) -> dict[str, str] | None:
        out: dict[str, str] = {}
        for base in cls.bases:
            bname = base.attr if isinstance(base, ast.Attribute) else getattr(base, "id", None)
            if bname in (None, "object", "ABC", "Generic") or bname in seen:
                continue
            bcls = find(bname, module)
            if bcls is None:
                if classes.get(bname):
                    return None  # an ambiguous verl base: the field set would be a guess
                continue  # a base from outside the tree (Mapping, ABC): no dataclass fields
            inherited = fields(bcls, module, seen | {bname})
            if inherited is None:
                return None
            out.update(inherited)
        for stmt in cls.body:
            if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
                ann = ast.unparse(stmt.annotation)
                if not ann.startswith(("ClassVar", "typing.ClassVar")):
                    out[stmt.target.id] = ann
        return out

    result: dict[str, dict[str, str]] = {}
    for target in sorted(targets):
        module, _, name = target.rpartition(".")
        cls = find(name, module)
        if cls is None or not _is_dataclass(cls):
            continue
        got = fields(cls, module)
        if got is not None:
            result[target] = got
    return result


# --- which config nodes verl converts into dataclasses -----------------------------------------

_CONVERTERS = ("omega_conf_to_dataclass", "instantiate")
_CONFIG_ROOTS = ("config", "cfg")


def converted_nodes(files: Files) -> list[dict[str, str]]:
    """[{"node": "actor_rollout_ref.actor", "evidence": "verl/utils/config.py:164"}, …]: the
    config paths verl's code passes to `omega_conf_to_dataclass(…)` / `instantiate(…)`.

    A path is the attribute chain after the config object (`self.config.actor` → `actor`,
    `config.actor_rollout_ref.actor` → `actor_rollout_ref.actor`); a worker's `self.config` is a
    sub-tree, so a chain names the node it ends in, wherever that sits. An argument that is a
    plain local name (`omega_conf_to_dataclass(rollout_config)`) names no node and is skipped.
    A node no call converts is read with `.get()` (verl's `reward` section): Hydra's `+key` under
    it is accepted and never checked against the dataclass."""
    out: dict[tuple[str, str], str] = {}  # (node, file) → file:line of its first call there
    for path in sorted(files):
        raw = files[path]
        if not path.endswith(".py") or not any(c.encode() + b"(" in raw for c in _CONVERTERS):
            continue
        try:
            tree = ast.parse(raw)
        except (SyntaxError, ValueError):
            continue
        for node in ast.walk(tree):
            if not (isinstance(node, ast.Call) and node.args and
                    _dotted(node.func).rpartition(".")[2] in _CONVERTERS):
                continue
            chain = _config_chain(node.args[0])
            if chain:
                out.setdefault((chain, path), f"{path}:{node.lineno}")
    return [{"node": k[0], "evidence": v} for k, v in sorted(out.items())]


_IMPORT = re.compile(rb"^[ \t]*(?:from[ \t]+([\w.]+)[ \t]+import[ \t]+([\w, \t()*]+)|import[ \t]+([\w.]+))",
                     re.M)


def reachable_modules(files: Files, entry: str) -> set[str]:
    """The tree's modules an entry module can import, directly or through others (any
    `import` line, function-level ones included: verl imports lazily): where the code that
    runs for that entry point can be."""
    modules = {module_name(p): p for p in files if p.endswith(".py")}
    seen, stack = {entry}, [entry]
    while stack:
        path = modules.get(stack.pop())
        if path is None:
            continue
        for base, names, plain in _IMPORT.findall(files[path]):
            base = (base or plain).decode()
            found = {base} | {f"{base}.{n}" for n in re.findall(r"\w+", names.decode())}
            parts = base.split(".")
            found |= {".".join(parts[:i]) for i in range(1, len(parts))}
            for dep in found:
                if dep in modules and dep not in seen:
                    seen.add(dep)
                    stack.append(dep)
    return seen


def entry_conversions(files: Files, entry: str, sites: list[dict[str, str]]) -> list[dict[str, str]]:
    """The conversion sites (`converted_nodes`) in modules `entry` can reach."""
    modules = reachable_modules(files, entry)
    reach = {p for p in files if p.endswith(".py") and module_name(p) in modules}
    return [site for site in sites if site["evidence"].rpartition(":")[0] in reach]


def _config_chain(expr: ast.AST) -> str | None:
    names: list[str] = []
    while True:  # `a.b`, `a.get("b")`, `a["b"]` all read the child `b`
        if isinstance(expr, ast.Attribute):
            names.append(expr.attr)
            expr = expr.value
        elif isinstance(expr, ast.Call) and isinstance(expr.func, ast.Attribute) and \
                expr.func.attr == "get" and expr.args and _literal_str(expr.args[0]):
            names.append(_literal_str(expr.args[0]))
            expr = expr.func.value
        elif isinstance(expr, ast.Subscript) and _literal_str(expr.slice):
            names.append(_literal_str(expr.slice))
            expr = expr.value
        else:
            break
    if not isinstance(expr, ast.Name) or not names:
        return None
    names.reverse()
    if expr.id == "self":  # self.config.x → x
        if names[0] not in _CONFIG_ROOTS:
            return None
        names = names[1:]
    elif expr.id not in _CONFIG_ROOTS:
        return None
    return ".".join(names) or None


# --- registered names ----------------------------------------------------------------------------

# registry decorator → the config key whose allowed values it extends
REGISTRIES = {
    "register_adv_est": "algorithm.adv_estimator",
    "register_policy_loss": "actor_rollout_ref.actor.policy_loss.loss_mode",
}
_REWARD_MANAGER = "reward.reward_manager.name"


def registries(files: Files) -> dict[str, dict[str, str]]:
    """{config key: {registered name: "file:line"}} from the tree's registry decorators
    (`@register_adv_est("grpo")`, `@register_adv_est(AdvantageEstimator.GAE)`,
    `@register_policy_loss("gspo")`, a reward manager's `@register("dapo")`)."""
    out: dict[str, dict[str, str]] = {}
    needles = tuple(n.encode() for n in REGISTRIES) + (b"@register(",)
    for path in sorted(files):
        raw = files[path]
        if not path.endswith(".py") or not any(n in raw for n in needles):
            continue
        try:
            tree = ast.parse(raw)
        except (SyntaxError, ValueError):
            continue
        enums = _str_enums(tree)
        for node in ast.walk(tree):
            if not isinstance(node, (ast.FunctionDef, ast.ClassDef, ast.AsyncFunctionDef)):
                continue
            for dec in node.decorator_list:
                if not (isinstance(dec, ast.Call) and dec.args):
                    continue
                func = _dotted(dec.func).rpartition(".")[2]
                key = REGISTRIES.get(func)
                if key is None and func == "register" and "reward_manager" in path:
                    key = _REWARD_MANAGER
                if key is None:
                    continue
                name = _literal_str(dec.args[0]) or _enum_value(dec.args[0], enums)
                if name:
                    out.setdefault(key, {}).setdefault(name, f"{path}:{dec.lineno}")
    return out


def _str_enums(tree: ast.Module) -> dict[str, dict[str, str]]:
    """{Enum class: {member: string value}} for `class X(str, Enum)` in a module."""
    out: dict[str, dict[str, str]] = {}
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and any(_dotted(b).endswith("Enum") for b in node.bases):
            members = {}
            for stmt in node.body:
                if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and \
                        isinstance(stmt.targets[0], ast.Name):
                    value = _literal_str(stmt.value)
                    if value is not None:
                        members[stmt.targets[0].id] = value
            out[node.name] = members
    return out


def _enum_value(expr: ast.AST, enums: dict[str, dict[str, str]]) -> str | None:
    if isinstance(expr, ast.Attribute) and isinstance(expr.value, ast.Name):
        return enums.get(expr.value.id, {}).get(expr.attr)
    return None


# --- ast helpers -------------------------------------------------------------------------------

def _dotted(expr: ast.AST) -> str:
    parts = []
    while isinstance(expr, ast.Attribute):
        parts.append(expr.attr)
        expr = expr.value
    if isinstance(expr, ast.Name):
        parts.append(expr.id)
    return ".".join(reversed(parts))


def _literal_str(expr: ast.AST | None) -> str | None:
    return expr.value if isinstance(expr, ast.Constant) and isinstance(expr.value, str) else None
