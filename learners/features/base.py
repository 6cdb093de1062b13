"""Shared machinery of the featurizers: the error type, option validation and batching.

A featurizer turns raw items (image bytes, text, URLs, index/value pairs) into rows of a
``scipy.sparse.csr_matrix`` of float64 with a fixed number of columns. Every featurizer is
rebuilt from its JSON-able :meth:`BaseFeaturizer.config`, so the app, the replay and an
exported model featurize identically.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, ClassVar, TypeVar

import numpy as np
import scipy.sparse as sp

from ..params import Param

#: a matrix of rows: CSR or a dense numpy array (:func:`scale_rows` keeps the type)
RowsT = TypeVar("RowsT", sp.csr_matrix, np.ndarray)


class FeatureError(ValueError):
    """A raw item cannot be featurized; the message is meant for the person who supplied it.

    reason: what is wrong with the item (e.g. ``text is not valid UTF-8 at byte 17``).
    position: 0-based position of the item in the batch given to ``transform``, or None
        when it came from ``transform_one``. ``str(error)`` is ``"item <position>: <reason>"``
        when the position is known.
    """

    def __init__(self, reason: str, position: int | None = None) -> None:
        self.reason = reason
        self.position = position
        super().__init__(reason if position is None else f"item {position}: {reason}")

    def at(self, position: int) -> FeatureError:
        """The same error, located at ``position`` in a batch."""
        return FeatureError(self.reason, position)


def decode_utf8(raw: Any, what: str) -> str:
    """``raw`` as str: a str is returned as is, bytes must be valid UTF-8.

    what: the item kind used in messages ("text", "URL"). Raises FeatureError otherwise.
    """
    if isinstance(raw, str):
        return raw
    if isinstance(raw, (bytes, bytearray, memoryview)):
        try:
            return bytes(raw).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise FeatureError(f"{what} is not valid UTF-8 at byte {exc.start}") from None
    raise FeatureError(f"{what} item must be a string, got {type(raw).__name__}")


def empty_rows(n: int, n_features: int) -> sp.csr_matrix:
    """An all-zero CSR float64 matrix of shape ``(n, n_features)``."""
    return sp.csr_matrix((n, n_features), dtype=np.float64)


#: The ``intercept`` option of the featurizers whose rows are unit-norm (docs/algorithms/common.md,
#: "Intercept"). A stored config without it means 0 (its features never change); a new project
#: gets :data:`NEW_PROJECT_INTERCEPT` (``new_project`` of the featurizers that declare it).
INTERCEPT = Param("intercept", 0.0, float, "value of a constant feature appended to every row, "
                  "so that the learners (which have no bias term) can learn an offset; 0 = none",
                  low=0.0, high=10.0)
#: the intercept a new project's featurizer appends (measured: benchmarks/LABEL_EFFICIENCY.md)
NEW_PROJECT_INTERCEPT = 0.5

#: The ``norm`` option of the featurizers whose rows are unit-norm before scaling (url-ngrams,
#: hashed-ngrams, deskew-hog; docs/algorithms/common.md): the L2 norm each row is scaled to,
#: before any intercept column. A stored config without it means 1 (its rows never change); a
#: new project gets the featurizer's ``new_project`` value. Applied by :func:`scale_rows`.
ROW_NORM = Param("norm", 1.0, float, "L2 norm of each row (before any intercept column; a blank "
                 "row stays zero)", low=0.0, low_open=True, high=100.0)


def hashed_columns(low: int) -> Param:
    """The width option of a hashing featurizer: 2**18 columns by default, at least ``low``."""
    return Param("n_features", 2**18, int, "number of hashed columns (2 MB of weights per class "
                 "at 2**18)", low=low, high=2**24, log=True)


def scale_rows(rows: RowsT, norm: float) -> RowsT:
    """Unit-norm ``rows`` (CSR or a dense array) scaled to L2 norm ``norm`` (:data:`ROW_NORM`).

    At ``norm`` 1 the rows are returned as they are, so a stored config keeps its rows bit for bit.
    """
    return rows * norm if norm != 1.0 else rows


class BaseFeaturizer:
    """Base class of every featurizer (implements the ``Featurizer`` protocol).

    Subclasses set ``kind``, ``name``, ``version`` and ``options`` (the :class:`Param` list of
    their config), read their validated options from :meth:`config` into named attributes and
    compute ``n_features`` in ``__init__`` after calling ``super().__init__`` (counting the
    intercept column, :meth:`intercept_columns`), and implement :meth:`_parse` (validate one raw
    item, raising FeatureError) and :meth:`_rows` (turn a list of parsed items into CSR rows,
    without the intercept column: :meth:`_finish` appends it). ``new_project`` holds option
    values a new project gets (:meth:`default_config`) that differ from what a stored config
    without the option means (the option's default).
    """

    kind: ClassVar[str] = ""
    #: the featurizer's name among its kind's (``learners.features.featurizer_names``)
    name: ClassVar[str] = ""
    #: bumped whenever the same config would produce different numbers; a config written by
    #: another version is refused rather than silently featurized differently.
    version: ClassVar[int] = 1
    options: ClassVar[tuple[Param, ...]] = ()
    new_project: ClassVar[dict[str, Any]] = {}

    n_features: int

    def __init__(self, **options: Any) -> None:
        self._options = validate_options(self.kind, self.options, options)

    @classmethod
    def default_config(cls) -> dict[str, Any]:
        """A new project's config: every option, at ``new_project`` or else its default."""
        return {"kind": cls.kind, "name": cls.name, "version": cls.version,
                **{p.name: p.default for p in cls.options}, **cls.new_project}

    def intercept_columns(self) -> int:
        """1 when the config appends an intercept column (:data:`INTERCEPT` > 0), else 0."""
        return 1 if self._options.get("intercept", 0.0) > 0.0 else 0

    def config(self) -> dict[str, Any]:
        """JSON-able config; ``make_featurizer(f.config())`` rebuilds an identical featurizer."""
        return {"kind": self.kind, "name": self.name, "version": self.version, **self._options}

    def transform_one(self, raw: Any) -> sp.csr_matrix:
        """One raw item as a CSR float64 row of shape ``(1, n_features)``; FeatureError if bad."""
        return self._finish(self._rows([self._parse(raw)]), 1)

    def transform(self, raws: Iterable[Any]) -> sp.csr_matrix:
        """Raw items as CSR float64 ``(n, n_features)``.

        Raises FeatureError naming the 0-based position of the first bad item (nothing is
        returned for the others).
        """
        if isinstance(raws, (str, bytes, bytearray, memoryview, dict)):
            raise TypeError("transform takes a sequence of items; use transform_one for one item")
        parsed = []
        for i, raw in enumerate(raws):
            try:
                parsed.append(self._parse(raw))
            except FeatureError as exc:
                raise exc.at(i) from None
        if not parsed:
            return empty_rows(0, self.n_features)
        return self._finish(self._rows(parsed), len(parsed))

    def _finish(self, M: sp.spmatrix, n: int) -> sp.csr_matrix:
        out = sp.csr_matrix(M, dtype=np.float64)
        if self.intercept_columns():
            column = np.full((n, 1), self._options["intercept"])
            out = sp.hstack([out, sp.csr_matrix(column)], format="csr")
        if out.shape != (n, self.n_features):  # an internal bug, not a user error
            raise AssertionError(f"{self.kind} featurizer produced shape {out.shape}, "
                                 f"expected {(n, self.n_features)}")
        out.eliminate_zeros()
        out.sort_indices()
        return out

    def _parse(self, raw: Any) -> Any:
        raise NotImplementedError

    def _rows(self, parsed: Sequence[Any]) -> sp.spmatrix:
        raise NotImplementedError

    def __repr__(self) -> str:
        opts = ", ".join(f"{k}={v!r}" for k, v in self._options.items())
        return f"{type(self).__name__}({opts})"


def validate_options(kind: str, params: Sequence[Param], values: dict[str, Any]) -> dict[str, Any]:
    """Defaults of ``params`` overlaid with ``values``, each validated.

    Raises ValueError naming an unknown option (and listing the valid ones) or a bad value
    (naming the option and its valid range).
    """
    by_name = {p.name: p for p in params}
    unknown = set(values) - set(by_name)
    if unknown:
        raise ValueError(f"unknown option(s) {sorted(unknown)} for the {kind} featurizer; "
                         f"valid: {', '.join(sorted(by_name)) or 'none'}")
    out = {p.name: p.default for p in params}
    for key, value in values.items():
        out[key] = by_name[key].validate(value)
    return out
