"""`hydra_semantics.read_word` (override words read without importing Hydra) against Hydra 1.3's
own OverridesParser: for every word it either declines (Hydra reads it) or gives exactly Hydra's
Parsed, the type of every value included (int/float/str/bool/None, list, dict).

Words come from a grammar of the shapes verl scripts use (quoted strings with escapes, nested
lists and dicts, interpolations, blanks) with near misses mixed in (unbalanced quotes and
brackets, trailing commas, sweeps, functions, unicode, `=`), from a plain fuzz over the
characters that matter to Hydra's lexer, and from verl's own 182 launch scripts.
"""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from hypothesis import event, example, given, settings
from hypothesis import strategies as st

from verl_lint.verl import hydra_semantics as hs

CORPUS = Path(__file__).resolve().parents[2] / "shared" / "corpus" / "verl-head"


def hydra(word: str) -> hs.Parsed:
    """Real Hydra: `_hydra_parse` without its lru cache and without the disk cache."""
    mp = pytest.MonkeyPatch()
    mp.setattr(hs.cache, "load", lambda namespace, key: hs.cache.MISS)
    mp.setattr(hs.cache, "store", lambda namespace, key, value: None)
    try:
        return hs._hydra_parse.__wrapped__(word)
    finally:
        mp.undo()


def same(a, b) -> bool:
    """Equal with the same types all the way down (1 != 1.0 != True here), NaN equal to NaN."""
    if type(a) is not type(b):
        return False
    if isinstance(a, list):
        return len(a) == len(b) and all(map(same, a, b))
    if isinstance(a, dict):
        return list(a) == list(b) and all(same(a[k], b[k]) for k in a)
    if isinstance(a, float) and math.isnan(a):
        return math.isnan(b)
    return a == b


def check(word: str) -> bool:
    """Assert the fast reading is Hydra's; True when the reader took the word."""
    fast = hs.read_word(word)
    if fast is None:
        return False
    expected = hydra(word)
    assert expected.error is None, (word, fast, expected.error)
    for field in hs.Parsed._fields:
        assert same(getattr(fast, field), getattr(expected, field)), (word, field, fast, expected)
    return True


# --- the grammar of words ----------------------------------------------------------------------

def mostly(good: list, bad: list) -> st.SearchStrategy:
    """One of `good`; one time in fifteen one of `bad` (a near miss)."""
    # (not st.integers: it draws its bounds far more often than one time in fifteen)
    return st.sampled_from([False] * 14 + [True]).flatmap(
        lambda near_miss: st.sampled_from(bad if near_miss else good))


ATOMS = mostly(["1", "-3", "+7", "0", "01", "1_000", "1_", "1.5", ".5", "5.", "-.5", "1e-6", "1E5",
                "1.5.6", "inf", "-inf", "NaN", "nan_x", "true", "False", "TRUE", "true1", "null",
                "NULL", "None", "abc", "a-b", "a_b", "fp32", "Qwen/Qwen2.5-7B", "hdfs://a/b",
                "x:y", "a%b*c?d|e", "a@b", "-", "--x", "$", "$x", "\\", "x\\y", "\\\\", "\\,",
                "\\ ", "\\:", "\\{*\\}", "\\=", "\\(", "\\t", "${a.b}", "${oc.env:HOME,/tmp}",
                "${a,'b'}", "${a[0]}"],
               ["${x", "${}", "${a.${b}}", "é", "~", "#", "!", "=", "(", ")", "choice(1,2)",
                "int(3)", "'", '"', ""])
# blanks as Hydra's lexer sees them: spaces and tabs (WS); a newline is no token at all
BLANKS = mostly(["", "", "", " ", "  ", "\t", " \t"], ["\n"])
QUOTED_TEXT = st.sampled_from([False] * 4 + [True]).flatmap(lambda wild: st.text(
    alphabet=st.sampled_from(list("ab 1,:[]{}$=\t" + ("\\'\"é\n" if wild else ""))), max_size=8))
SEP = mostly([",", ",", ", ", " , ", ",\t"], [",,", " ", ""])
TRAILER = mostly([""], [","])


@st.composite
def quoted(draw) -> str:
    q = draw(st.sampled_from(["'", '"']))
    close = draw(mostly([q], ["", "'" if q == '"' else '"']))
    # an even run of backslashes before the closing quote is part of the text, an odd one escapes it
    return q + draw(QUOTED_TEXT) + draw(mostly(["", "\\\\"], ["\\", "\\\\\\"])) + close


@st.composite
def primitive(draw) -> str:
    joints = st.sampled_from(["", "", "", " ", ":", " : ", ": ", "\t"])  # the last one trails
    return "".join(atom + draw(joints) for atom in draw(st.lists(ATOMS, min_size=1, max_size=3)))


def containers(inner: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    @st.composite
    def listing(draw) -> str:
        items = draw(st.lists(inner, max_size=4))
        return (draw(mostly(["[", "[ "], ["{"])) + draw(SEP).join(items) + draw(TRAILER)
                + draw(BLANKS) + draw(mostly(["]"], ["}", "", "]]"])))

    @st.composite
    def mapping(draw) -> str:
        keys = mostly(["a", "b", "1", "true", "1.0", "nan", "a.b.\\{*\\}", "x y", "$k", "null"],
                      ["'a'", "${k}", "a:b", ""])
        pairs = draw(st.lists(st.tuples(keys, inner), max_size=4))
        colon = mostly([":", ": ", " : ", " :"], ["", "::"])
        return (draw(mostly(["{", "{ "], ["["]))
                + draw(SEP).join(k + draw(colon) + v for k, v in pairs)
                + draw(TRAILER) + draw(BLANKS) + draw(mostly(["}"], ["]", ""])))

    return st.one_of(listing(), mapping())


ELEMENTS = st.recursive(st.one_of(primitive(), quoted()), containers, max_leaves=8)
KEYS = mostly(["a", "trainer.logger", "actor_rollout_ref.actor.checkpoint.save_contents", "a.0.b",
               "a-b.c_d", "actor@actor_rollout_ref.actor", "a@b"],
              ["a@", "a/b", "a.01", "$a", "a b", "", "a.", "0", "a@b@c"])


@st.composite
def words(draw) -> str:
    value = draw(ELEMENTS)
    glue = draw(mostly([None], [",", ", ", " ", ""]))  # a sweep, or a value glued to another
    if glue is not None:
        value += glue + draw(ELEMENTS)
    return (draw(mostly(["", "+", "++", "~"], ["+~"])) + draw(KEYS)
            + draw(mostly(["=", "= ", "=\t "], [" =", ""])) + value
            + draw(mostly([""], [" ", "\t", "\n"])))  # (an error after a container or a quote)


# every character that means something to Hydra's lexer, a few letters and digits, and two it
# refuses
FUZZ = st.text(alphabet=st.sampled_from(list("a1e._-+:,=[]{}()'\"\\$ \t@/~é\n")), max_size=14)


# a generated word costs ≈ 5 ms (hypothesis drawing it), a Hydra parse ≈ 0.3 ms; the `long`
# profile draws 2000 of each
@settings(max_examples=max(600, settings().max_examples))
@given(words())
@example("trainer.logger=['console', \"wandb\"]")
@example("a={a:1,true:2,1:3}")  # `true` and `1` are one key in Hydra's dict
@example("a={a:x: }")  # the colon token keeps its blank
@example("a=x\\ ")  # an escaped blank is not stripped
@example("~a=null")  # no value, as `~a`
@example("a='a\\\\\\'b\\\\'")
def test_words_read_as_hydra_reads_them(word):
    event("read" if check(word) else "declined")  # about half are read


@settings(max_examples=max(1500, settings().max_examples))
@given(st.sampled_from(["a=", "+a.b=", "~a=", "a@b="]), FUZZ)
def test_fuzzed_values_read_as_hydra_reads_them(head, value):
    event("read" if check(head + value) else "declined")


def test_the_reader_takes_what_verl_scripts_write():
    """The shapes of verl's scripts that used to need Hydra are read without it."""
    taken = ["trainer.logger=[\"console\", \"wandb\"]", "trainer.logger='[console,wandb]'",
             "+algorithm.gdpo_reward_keys=[\"accuracy_reward\", \"format_reward\"]",
             "actor_rollout_ref.actor.optim.betas=[0.9,0.98]", "hydra.searchpath=[pkg://a.b]",
             "+x.cudagraph_capture_sizes=[1, 8, 16]", "actor@actor_rollout_ref.actor=mlite_actor",
             "+x.patches=[{target_functions:['a.b'],type:causal_lm_loss}]",
             "+x.apply_modules={model.layers.\\{*\\}:{},lm_head:{}}",
             "ray_kwargs.ray_init.runtime_env.py_executable=uv -v run --extra vllm",
             "data.truncation='error'", "a=${oc.env:HOME,/tmp}/x", "a=[]", "a={}", "a=[[1],[]]",
             "a=[ 'x' , \"y\" ]", "a={k: [1] , j: {} }"]  # blanks before `,` `]` `}` go with them
    assert [w for w in taken if not check(w)] == []
    declined = ["a=1,2", "a=choice(1,2)", "a=int(3)", "a=[1,]", "a='x", "a=é", "a=b=c",
                "hydra/launcher=basic", "a=x ]", "a={'k':1}", "a={${x}:1}", "a=${a.${b}}"]
    assert [w for w in declined if hs.read_word(w) is not None] == []


@pytest.mark.skipif(not CORPUS.is_dir(), reason="../shared/corpus is absent")
def test_every_word_of_verls_scripts_reads_as_hydra_reads_it():
    """Every override word the analysis parses in verl's 182 scripts, both ways; none needs
    Hydra."""
    from verl_lint.engine import lint_file
    from verl_lint.settings import SettingsResolver

    seen: set[str] = set()
    real = hs.parse

    def spy(word):
        seen.add(word)
        return real(word)

    resolver = SettingsResolver({"verl_version": "0.9.1"})
    mp = pytest.MonkeyPatch()
    mp.setattr(hs, "parse", spy)
    try:
        for path in sorted(CORPUS.rglob("*.sh")):
            lint_file(path, resolver(path))
    finally:
        mp.undo()
    assert len(seen) > 1500  # 1634 distinct words at verl HEAD
    assert sorted(w for w in seen if not check(w)) == []
