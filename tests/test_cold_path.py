"""The cold path's shortcuts give what the direct computation gives (issue 17)."""

from __future__ import annotations

import difflib

from hypothesis import given, settings
from hypothesis import strategies as st

from verl_lint.verl import suggest

# key names: few letters and many `_`, so acronyms, dropped words and near spellings all occur
_NAMES = st.one_of(
    st.lists(st.sampled_from(["a", "b", "ab", "ba", "c", "", "lr"]), min_size=1, max_size=5)
    .map("_".join),
    st.text(alphabet="ab_cd", max_size=12))


def _reference_similarity(a: str, b: str) -> float:
    """`leaf_similarity` as it was written before its shortcuts."""
    def acronym(name: str) -> str:
        return "".join(p[0] for p in name.split("_") if p)

    def subsequence(short: list[str], long: list[str]) -> bool:
        it = iter(long)
        return len(short) >= 2 and all(p in it for p in short)

    if a == b:
        return 1.0
    score = 0.0
    if a and b and 2.0 * min(len(a), len(b)) / (len(a) + len(b)) >= 0.75 and \
            difflib.SequenceMatcher(None, a, b).quick_ratio() >= 0.75:
        score = difflib.SequenceMatcher(None, a, b).ratio()
    if (len(a) >= 2 and acronym(b) == a) or (len(b) >= 2 and acronym(a) == b):
        score = max(score, 0.95)
    pa, pb = a.split("_"), b.split("_")
    if subsequence(pa, pb) or subsequence(pb, pa):
        score = max(score, 0.9)
    return score


@settings(max_examples=400, deadline=None)
@given(_NAMES.filter(bool), _NAMES.filter(bool))
def test_leaf_similarity_equals_the_direct_computation(a, b):
    assert suggest.leaf_similarity.__wrapped__(a, b) == _reference_similarity(a, b)


def test_leaf_similarity_on_verl_names():
    pairs = [("lr", "learning_rate"), ("tensor_parallel_size", "tensor_model_parallel_size"),
             ("ppo_mini_batch", "ppo_mini_batch_size"), ("log_prob_micro_batch_size",
                                                         "log_prob_micro_batch_size_per_gpu"),
             ("tp", "tensor_parallel"), ("gpu_memory_utilisation", "gpu_memory_utilization")]
    for a, b in pairs + [(b, a) for a, b in pairs]:
        assert suggest.leaf_similarity.__wrapped__(a, b) == _reference_similarity(a, b) > 0.8
