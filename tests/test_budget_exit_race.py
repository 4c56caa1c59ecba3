"""The file budget's alarm going off while a `with` is being left (after the work, before the
alarm is disarmed) must not escape the block: a loaded machine hit it (a LintTimeout out of a
`--jobs` worker)."""

from __future__ import annotations

import contextlib
import signal
import sys

import pytest

from verl_lint.engine import LintTimeout, file_budget

pytestmark = pytest.mark.skipif(not hasattr(signal, "setitimer"), reason="no SIGALRM here")


def _leaving_frame():
    """A frame of contextlib's __exit__, as the alarm sees it when a `with` is left."""
    frames = []

    @contextlib.contextmanager
    def grab():
        yield
        frames.append(sys._getframe(1))

    with grab():
        pass
    return frames[0]


def test_an_alarm_while_leaving_a_with_is_not_raised_there():
    leaving = _leaving_frame()
    went_on = False
    with file_budget(30) as budget:
        handler = signal.getsignal(signal.SIGALRM)
        handler(signal.SIGALRM, leaving)  # raised there, it would escape the `with`
        went_on = True
    assert went_on and budget.expired
    with file_budget(30) as budget:
        with pytest.raises(LintTimeout):  # anywhere else it stops the work
            handler = signal.getsignal(signal.SIGALRM)
            handler(signal.SIGALRM, sys._getframe())
            raise AssertionError("not raised")
