"""`SpanFactory`'s spans are a slot-less subclass of `Span` (built without an `__init__`): they
read, compare, hash, show and pickle exactly as the Span `SourceText.span` makes."""

import copy
import pickle

from verl_lint.source import SourceText, Span, SpanFactory


def test_a_factory_span_is_the_span_of_the_same_range():
    source = SourceText("a=1\n# é\nb=\"$a\"\n".encode())
    made = SpanFactory(source)(10, 16)
    plain = source.span(10, 16)
    assert isinstance(made, Span) and not hasattr(made, "__dict__")
    assert made == plain and plain == made and hash(made) == hash(plain)
    assert made.positions == plain.positions and repr(made) == repr(plain)
    for twin in (pickle.loads(pickle.dumps(made)), copy.copy(made), copy.deepcopy(made)):
        assert type(twin) is Span and twin == plain and repr(twin) == repr(plain)
    assert made != SpanFactory(source)(10, 15)
