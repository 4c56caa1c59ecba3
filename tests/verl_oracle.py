"""Real Hydra as the oracle for the differential tests of `verl_lint.verl.hydra_semantics`."""

from __future__ import annotations

import copy
import random
from functools import lru_cache

from verl_lint.verl import cache, data


@lru_cache(maxsize=None)
def config_root(version: str):
    return cache.materialize("yaml-test", version, data.config_files(version))


@lru_cache(maxsize=None)
def hydra_cfg(version: str, config_name: str = "ppo_trainer", groups: tuple[str, ...] = ()):
    """The composed DictConfig, exactly as hydra.compose returns it (struct root)."""
    from hydra import compose, initialize_config_dir

    root = config_root(version)
    with initialize_config_dir(config_dir=str(root / "verl/trainer/config"), version_base=None):
        return compose(config_name, overrides=list(groups))


def hydra_compose_verdict(version: str, texts: list[str], config_name: str = "ppo_trainer"):
    """Full hydra.compose with the overrides: None if accepted, else the exception."""
    from hydra import compose, initialize_config_dir

    root = config_root(version)
    try:
        with initialize_config_dir(config_dir=str(root / "verl/trainer/config"), version_base=None):
            compose(config_name, overrides=texts)
    except Exception as exc:  # noqa: BLE001 - any refusal is a reject
        return exc
    return None


def hydra_apply(cfg, text: str):
    """Hydra's own `_apply_overrides_to_config` (what compose runs) on a copy.

    Returns (error or None, {top-level key: its subtree after the override, or None if gone})."""
    from hydra._internal.config_loader_impl import ConfigLoaderImpl
    from omegaconf import OmegaConf

    try:
        parsed = _parser().parse_overrides([text])
        top = parsed[0].key_or_group.split(".")[0]
        work = _work_copy(cfg, top)
        if parsed[0].is_sweep_override():
            raise ValueError("sweep")
        ConfigLoaderImpl._apply_overrides_to_config(parsed, work)
    except Exception as exc:  # noqa: BLE001
        return exc, None
    node = work.__dict__["_content"].get(top)
    return None, {top: None if node is None else
                  OmegaConf.to_container(node, resolve=False) if OmegaConf.is_config(node)
                  else node._value()}


def _work_copy(cfg, top: str):
    """A config equal to `cfg` that an override of `top.*` may mutate: the top-level subtree
    it touches is deep-copied, the others are shared read-only (a full deepcopy costs 30 ms)."""
    from omegaconf import OmegaConf

    work = OmegaConf.create({})
    content = dict(cfg.__dict__["_content"])
    if top in content:
        sub = copy.deepcopy(content[top])
        sub._set_parent(work)
        content[top] = sub
    work.__dict__["_content"] = content
    OmegaConf.set_struct(work, True)
    return work


@lru_cache(maxsize=1)
def _parser():
    from hydra.core.override_parser.overrides_parser import OverridesParser

    return OverridesParser.create()


def paths(tree, prefix=()):
    if isinstance(tree, dict):
        for k, v in tree.items():
            yield prefix + (k,), v
            yield from paths(v, prefix + (k,))


def generated_overrides(version: str, tree: dict, n: int, seed: int = 0) -> list[str]:
    """A mix of valid keys, typos, +/++/~ on existing and missing keys, dict fields, inherited
    nodes, nulls, ???, lists and dict values."""
    rng = random.Random(f"{version}-{seed}")
    all_paths = list(paths(tree))
    by_path = dict(all_paths)
    special = [p for p, v in all_paths
               if v is None or v == "???" or v == {} or (isinstance(v, str) and "${" in v)
               or isinstance(v, list) or "engine_kwargs" in p or "override" in "".join(p)]
    picks = rng.sample(all_paths, min(n, len(all_paths))) + [(p, None) for p in special[: n // 2]]
    values = ["1", "abc", "null", "True", "0.5", "[1,2]", "{a: 1}", "'x,y'", "${data.train_batch_size}",
              "[]", "{}"]
    out = []
    for p, v in picks:
        key = ".".join(p)
        val = rng.choice(values)
        leaf = p[-1]
        typo = ".".join(p[:-1] + (leaf[:-1] + ("x" if leaf[-1:] != "x" else "y"),))
        out += [f"{key}={val}", f"+{key}={val}", f"++{key}={val}", f"~{key}",
                f"{key}.sub=1", f"+{key}.sub=1", f"++{key}.sub.deep={val}", f"~{key}.sub",
                f"{typo}=1", f"+{typo}=2", f"~{key}={rng.choice(['1', 'null', 'abc'])}"]
        if isinstance(by_path[p], list):  # indices: in range, past the end, through an item
            n = len(by_path[p])
            out += [f"{key}.0={val}", f"+{key}.0=1", f"++{key}.0={val}", f"~{key}.0",
                    f"{key}.0.x=1", f"++{key}.0.x=1", f"{key}.{n}=1", f"+{key}.{n}=1",
                    f"++{key}.{n}=1", f"++{key}.{n}.x=1", f"~{key}.{n}"]
    return out
