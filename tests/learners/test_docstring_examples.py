"""Every registered learner class shows a runnable ``>>>`` example in its docstring, and it runs.

The examples are doctests (river's style): short, hand-checkable, run here with the
standard library's doctest runner so that a docstring that drifts from the code fails.
"""

from __future__ import annotations

import doctest
import sys

import pytest

import learners

CLASSES = sorted({spec.cls for spec in learners.REGISTRY.values()}, key=lambda c: c.__qualname__)


def test_every_family_is_covered():
    assert {"PAA", "CSPAA", "MPAA", "SOAL", "DADA", "MDADA", "PEA", "MPEA", "OASIS", "KMC"} <= {
        c.__name__ for c in CLASSES}


@pytest.mark.parametrize("cls", CLASSES, ids=lambda c: c.__name__)
def test_the_class_docstring_example_runs(cls):
    (test,) = doctest.DocTestFinder(recurse=False).find(cls, cls.__name__,
                                                        module=sys.modules[cls.__module__], globs={})
    assert len(test.examples) >= 3, f"{cls.__name__} has no >>> example in its docstring"
    report: list[str] = []
    runner = doctest.DocTestRunner(optionflags=doctest.NORMALIZE_WHITESPACE)
    result = runner.run(test, out=report.append)
    assert result.failed == 0, "".join(report)
    assert result.attempted == len(test.examples)
