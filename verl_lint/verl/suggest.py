"""Closest existing keys for a misspelled one (VL201's "did you mean")."""

from __future__ import annotations

from functools import lru_cache
from typing import Any, Iterable, Iterator

NO_VALUE: Any = object()
# id(tree) -> (tree, {leaf name: the paths ending in it}, its paths and names indexed) of a
# shared tree
_paths_cache: dict[int, tuple[Any, dict[str, list[str]], "_NameIndex"]] = {}
# (id(tree), key, limit) -> (tree, suggestions): a typo copied into many scripts of a repository
# is ranked once per release
_closest_cache: dict[tuple[int, str, int], tuple[Any, list[str]]] = {}


def _indexed(tree: dict) -> tuple[Any, dict[str, list[str]], "_NameIndex"]:
    hit = _paths_cache.get(id(tree))
    if hit is not None and hit[0] is tree:
        return hit
    from verl_lint.verl import configs

    # ~2 ms to build for the ~1,000 paths of a composed tree, a fraction of that to read
    found = configs.derived(tree, "suggest", _index, __file__)
    hit = _paths_cache[id(tree)] = (tree, *found)
    return hit


def _index(tree: dict) -> tuple[dict[str, list[str]], "_NameIndex"]:
    out: list[str] = []
    by_leaf: dict[str, list[str]] = {}

    def walk(node: Any, prefix: str) -> None:
        if isinstance(node, dict):
            for k, v in node.items():
                path = f"{prefix}.{k}" if prefix else str(k)
                out.append(path)
                by_leaf.setdefault(path.rsplit(".", 1)[-1], []).append(path)
                walk(v, path)

    walk(tree, "")
    return by_leaf, _NameIndex(out, by_leaf)


class _NameIndex:
    """A tree's paths as a set, and its leaf names by length, acronym and word, to find the few
    that can score 0.8 with a name (`near`) without scoring the few hundred others."""

    def __init__(self, paths: list[str], names: Iterable[str]) -> None:
        self.paths = frozenset(paths)
        self.by_length: dict[int, list[tuple[str, int]]] = {}  # (name, its letters' mask)
        self.by_acronym: dict[str, set[str]] = {}
        self.by_word: dict[str, set[str]] = {}
        for name in names:
            self.by_length.setdefault(len(name), []).append((name, _mask(name)))
            if "_" not in name:
                continue  # one word: its acronym is a letter, and no word of it can be dropped
            self.by_acronym.setdefault(_acronym(name), set()).add(name)
            for word in name.split("_"):
                self.by_word.setdefault(word, set()).add(name)

    def near(self, a: str) -> set[str]:
        """A superset of the names `leaf_similarity(a, name) >= 0.8` holds for: the spelling
        ratio needs difflib's length bound and the letters in common for its quick ratio (a
        letter one name lacks takes at least one of the other's away), the acronym score an
        acronym, and the dropped-word score a word in common (every word of the shorter name
        is one of the longer's)."""
        out = {a, _acronym(a)}
        la, ma = len(a), _mask(a)
        for length, named in self.by_length.items():
            total = la + length
            if 2.0 * min(la, length) / total < 0.8:  # as `leaf_similarity`
                continue
            for name, mb in named:
                common = min(la - (ma & ~mb).bit_count(), length - (mb & ~ma).bit_count())
                if 2.0 * common / total >= 0.8:
                    out.add(name)
        out |= self.by_acronym.get(a, set())
        for word in set(a.split("_")):
            out |= self.by_word.get(word, set())
        return out


# a bit per character of key names, the same in every process (an index is kept on disk);
# any other character takes the last bit, which only lets `near` keep more names
_BITS = {ch: 1 << i for i, ch in enumerate(
    "abcdefghijklmnopqrstuvwxyz0123456789_-ABCDEFGHIJKLMNOPQRSTUVWXYZ")}
_OTHER = 1 << len(_BITS)


def _mask(name: str) -> int:
    """The set of `name`'s characters, as bits."""
    mask = 0
    for ch in name:
        mask |= _BITS.get(ch, _OTHER)
    return mask


def _acronym(name: str) -> str:
    return "".join(p[0] for p in name.split("_") if p)


def _subsequence(short: list[str], long: list[str]) -> bool:
    it = iter(long)
    return len(short) >= 2 and all(p in it for p in short)


@lru_cache(maxsize=65536)
def leaf_similarity(a: str, b: str) -> float:
    """How alike two key names are: spelling, acronyms (`lr` ~ `learning_rate`), and dropped
    words (`tensor_parallel_size` ~ `tensor_model_parallel_size`)."""
    if a == b:
        return 1.0
    score = 0.0
    # SequenceMatcher's real_quick_ratio and quick_ratio first, without building one (most
    # names are far apart in length or letters): the same bounds, a fraction of the cost
    if 2.0 * min(len(a), len(b)) / (len(a) + len(b)) >= 0.75 and _quick_ratio(a, b) >= 0.75:
        import difflib  # only for an unknown key: keeps it off the start-up path

        score = difflib.SequenceMatcher(None, a, b).ratio()
    # an acronym has a letter per word and no `_`; a name whose words are a subsequence of
    # another's is the shorter one and has two words or more: the tests below only run where
    # they can hold (a did-you-mean compares a key with a few thousand names)
    if (_may_be_acronym(a, b) and _acronym(b) == a) or (_may_be_acronym(b, a) and _acronym(a) == b):
        score = max(score, 0.95)
    if (len(a) < len(b) and "_" in a and _subsequence(a.split("_"), b.split("_"))) or \
            (len(b) < len(a) and "_" in b and _subsequence(b.split("_"), a.split("_"))):
        score = max(score, 0.9)
    return score


def _may_be_acronym(short: str, name: str) -> bool:
    return 2 <= len(short) <= name.count("_") + 1 and "_" not in short


@lru_cache(maxsize=8192)
def _letters(name: str) -> dict[str, int]:
    """How often each character occurs in `name` (read, never changed)."""
    counts: dict[str, int] = {}
    for ch in name:
        counts[ch] = counts.get(ch, 0) + 1
    return counts


def _quick_ratio(a: str, b: str) -> float:
    """`difflib.SequenceMatcher(None, a, b).quick_ratio()`: the letters the two share."""
    theirs = _letters(b)
    matches = sum(min(n, theirs.get(ch, 0)) for ch, n in _letters(a).items())
    return 2.0 * matches / (len(a) + len(b))


def _ratio_bound(a: str, b: str) -> float:
    """difflib's real_quick_ratio: never below `_path_ratio(a, b)`."""
    return 2.0 * min(len(a), len(b)) / (len(a) + len(b))


def _path_ratio(a: str, b: str) -> float:
    import difflib

    return difflib.SequenceMatcher(None, a, b).ratio()


def closest_keys(key: str, names: Iterable[str] | None = None, *, tree: dict | None = None,
                 limit: int = 3, value: Any = NO_VALUE) -> list[str]:
    """Up to `limit` suggestions for `key`.

    With `names` (the fields of one dataclass), compare the leaf only. With `tree`, rank: keys
    that end with what was typed (a missing prefix), then close spellings of the whole path,
    then the same leaf (or a close one) under the deepest ancestor that exists, then anywhere.
    A suggestion in another role or under another engine's section (`ref.megatron.x` never
    becomes `ref.fsdp_config.…`), or whose default cannot hold `value` (the override's parsed
    value), is dropped: renaming into it would be a different setting, not a spelling fix.
    """
    if names is not None:
        scored = sorted(((leaf_similarity(key, n), n) for n in names if not n.startswith("_")),
                        key=lambda t: (-t[0], t[1]))
        return [n for s, n in scored if s >= 0.75][:limit]
    if tree is None:
        return []
    hit = _closest_cache.get((id(tree), key, limit))
    if hit is not None and hit[0] is tree:
        found = hit[1]
    else:
        if len(_closest_cache) > 4096:
            _closest_cache.clear()
        found = _closest_in_tree(key, tree, limit)
        _closest_cache[(id(tree), key, limit)] = (tree, found)
    if value is NO_VALUE:
        return list(found)
    return [s for s in found if fits(_node(tree, s), value)]


def _regrouped(key: str) -> Iterator[str]:
    """`key` with one `.` read as `_` or one `_` as `.`: `actor.kl_loss.type` was
    `actor.kl_loss_type` in some verl branch, `actor.optim_lr` means `actor.optim.lr`."""
    for i, ch in enumerate(key):
        if ch == ".":
            yield key[:i] + "_" + key[i + 1:]
        elif ch == "_":
            yield key[:i] + "." + key[i + 1:]


def _closest_in_tree(key: str, tree: dict, limit: int) -> list[str]:
    _, by_leaf, index = _indexed(tree)
    known = index.paths
    parts = key.split(".")
    leaf = parts[-1]
    out: list[str] = []

    role = role_of(key)

    def add(items: Iterable[str]) -> None:
        for item in items:
            if item not in out and item != key and _same_place(item, key, role, tree):
                out.append(item)

    # a path ending in `.key` ends in its leaf: only the paths to that name can
    add(sorted((p for p in by_leaf.get(leaf, ()) if p.endswith("." + key)), key=len))
    add(k for k in _regrouped(key) if k in known)
    ancestor = ""
    for i in range(len(parts) - 1, 0, -1):
        if ".".join(parts[:i]) in known:
            ancestor = ".".join(parts[:i])
            break
    # (bound, 2 × leaf similarity, inside, path): the path's spelling ratio is at most
    # difflib's real_quick_ratio, so a candidate whose bound is already out of reach of the
    # best score needs no SequenceMatcher (the same ones are kept, in the same order)
    candidates = []
    near = index.near(leaf)
    for name, named in by_leaf.items():  # each name compared once, not once per path
        if name not in near:
            continue  # it cannot score 0.8
        s = leaf_similarity(leaf, name)
        if s < 0.8:
            continue
        for p in named:
            inside = (not ancestor and len(parts) > 1 and
                      p.rsplit(".", 1)[0].endswith(".".join(parts[:-1]))) or \
                (ancestor and p.startswith(ancestor + "."))
            bonus = 1 if inside else 0
            bound = 2 * s + _ratio_bound(key, p) + bonus
            candidates.append((bound, s, bonus, p))
    scored = []
    best = None
    for bound, s, bonus, p in sorted(candidates, key=lambda t: -t[0]):
        if best is not None and bound < best - 0.12:
            break  # neither within reach of the best nor the best: nor is any after it
        score = 2 * s + _path_ratio(key, p) + bonus
        scored.append((score, p))
        best = score if best is None else max(best, score)
    if scored:
        add(p for score, p in sorted(scored, key=lambda t: (-t[0], t[1])) if score >= best - 0.12)
    return out[:limit]


# the top-level sections a key belongs to; under actor_rollout_ref each role is its own
_SPLIT_ROLES = ("actor_rollout_ref",)
# each role's per-engine section (one per `model_engine` option; FSDP's is `fsdp_config`)
ENGINE_SECTIONS = frozenset({"fsdp_config", "megatron", "veomni", "torchtitan"})


def role_of(key: str) -> str:
    """`actor_rollout_ref.ref` for `actor_rollout_ref.ref.x`, `critic` for `critic.x`."""
    parts = key.split(".")
    return ".".join(parts[:2]) if parts[0] in _SPLIT_ROLES and len(parts) > 2 else parts[0]


def engine_of(key: str) -> str | None:
    return next((p for p in key.split(".") if p in ENGINE_SECTIONS), None)


def _same_place(candidate: str, key: str, role: str, tree: dict) -> bool:
    """A suggestion must stay in the key's role and engine section; another engine's section
    only for the very same setting there (`actor.fsdp_config.param_offload` →
    `actor.veomni.param_offload` when the launch chose veomni, never `actor.megatron.x` →
    `actor.fsdp_config.turbo_config.…`). A root-level config group named like the key's leaf
    (`actor_rollout_ref.actor.model_engine` → `model_engine`) is the other exception: that is a
    group override written in the wrong place."""
    if "." not in candidate:
        return candidate == role or not isinstance(tree.get(candidate), dict)
    theirs = role_of(candidate)
    if _node(tree, role) is not NO_VALUE and theirs != role and \
            not theirs.startswith(role + "."):  # `actor_rollout_ref.x` may mean any of its roles
        return False
    engine, other = engine_of(key), engine_of(candidate)
    if engine is None or other is None or other == engine:
        return True
    swapped = [other if part == engine else part for part in key.split(".")]
    return candidate == ".".join(swapped)


def _node(tree: dict, path: str) -> Any:
    node: Any = tree
    for part in path.split("."):
        if not isinstance(node, dict) or part not in node:
            return NO_VALUE
        node = node[part]
    return node


def fits(default: Any, value: Any) -> bool:
    """Whether a node holding `default` could take `value` (a value parsed like Hydra), as far
    as the two are known: a scalar never replaces a section, a boolean field takes only a
    boolean, a number field only a number. Unknown or null on either side fits."""
    from verl_lint.evaluate.model import Unknown

    if default is NO_VALUE or default is None or value is None or isinstance(value, Unknown):
        return True
    if isinstance(default, str) or (isinstance(value, str) and value.startswith("${")):
        return True  # a string field takes anything; an interpolation's type is not known here
    if isinstance(default, dict):
        return isinstance(value, dict)
    if isinstance(value, dict):
        return False
    if isinstance(default, bool):
        return isinstance(value, bool)
    if isinstance(default, (int, float)):
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    return True
