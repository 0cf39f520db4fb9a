"""A trained linear ranker: weights + metadata, saved as JSON (+ .npy for large w).

File format, version 2 (issue 11): ``weights`` and ``intercept`` apply to the *raw*
features exactly as :meth:`RankingModel.predict` does, ``score = weights·x + intercept``, so
any reader (another language, a serving system, SQL) can use them without knowing about
standardization.  A standardized model also carries ``standardized_weights`` (the solver's
weights on ``(x − shift)·scale``) and its ``standardization`` (kind, shift, scale).
Version 1 (no ``format_version`` or 1) stored the solver's weights as ``weights``; it still
loads and predicts the same.  A ``weights_npy`` sidecar holds what ``weights`` holds.
"""

from __future__ import annotations

import json
import math
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from .choices import DEFAULT_PAIR_RULE
from .data.block import RankingData, check_model_width
from .numerics.linalg import is_sparse, matvec
from .numerics.vectors import fit_length
from .standardization import Standardization

FORMAT_VERSION = 2
#: Above this many features the weights are also written to ``<model>.weights.npy``.
NPY_SIDECAR_MIN_FEATURES = 100_000


@dataclass
class RankingModel:
    """Weights of ``f(x) = w·x`` and how they were obtained.

    Attributes
    ----------
    weights : float64 array (n_features,)
        Feature 1 (SVMlight index 1) first.
    solver : str
        ``tron`` (L2 loss) or ``bmrm`` (L1 loss).
    C : float
        LIBLINEAR-convention regularisation (see :mod:`sparkrank.conventions`).
    lam : float
        The same regularisation in the solver's paper's own λ form (BMRM's for tron/bmrm,
        raykar2007's for ncg, li2014's for toppush; see :mod:`sparkrank.conventions`).
    tol : float
    counting : str
    options : dict
        Solver-specific options the model was trained with.
    summary : dict
        Training facts: iterations, objective, objective history, seconds, converged,
        message, rows, groups, pairs.
    standardization : Standardization or None
        When set, ``weights`` are on the standardized features and a row scores
        ``weights·((x − shift)·scale)`` (see :mod:`sparkrank.standardization`); the file's
        ``weights`` are :attr:`raw_weights` (format 2).
    source : str
        Where the model was read from (for error messages; not saved).
    """

    weights: np.ndarray
    solver: str
    C: float
    lam: float
    tol: float
    counting: str = "selection"
    options: dict[str, Any] = field(default_factory=dict)
    summary: dict[str, Any] = field(default_factory=dict)
    created: str = field(default_factory=lambda: time.strftime("%Y-%m-%dT%H:%M:%S%z"))
    standardization: Standardization | None = None
    source: str = field(default="model", repr=False, compare=False)

    def __post_init__(self):
        self.weights = _weight_vector(self.weights, self.source, "weights")
        st = self.standardization
        if st is not None and st.n_features != self.weights.shape[0]:
            raise ValueError(f"{self.source}: the standardization has {st.n_features} features but there are "
                             f"{self.weights.shape[0]} weights")

    def check_width(self, n_columns: int, data: str = "the data") -> None:
        """A ``DataError`` naming the model (and ``data``) when the data has more feature columns
        than the model has weights (:func:`check_model_width`)."""
        check_model_width(n_columns, self.n_features, self.source, data)

    @property
    def n_features(self) -> int:
        return int(self.weights.shape[0])

    @property
    def pairs(self) -> str:
        """The pairs the model was trained on: ``options["pairs"]`` of a RankSVM solver, and
        ``"all"`` when the options leave it out (every model written before the option, and every
        solver without it)."""
        return (self.options or {}).get("pairs", DEFAULT_PAIR_RULE)

    @property
    def raw_weights(self) -> np.ndarray:
        """Weights on the raw features: ``scale·weights`` when standardized, else ``weights``.

        They rank every query exactly as the model does (scores differ by :attr:`intercept`).
        """
        st = self.standardization
        return self.weights if st is None else st.raw_weights(self.weights)

    @property
    def intercept(self) -> float:
        """The constant added to ``x·raw_weights`` (``−(shift·scale)·weights``; 0 without standardization)."""
        st = self.standardization
        return 0.0 if st is None else st.intercept(self.weights)

    def predict(self, X) -> np.ndarray:
        """Scores ``X w`` for a matrix or :class:`RankingData` (in its stored order).

        A matrix with fewer columns than the model is padded with zeros; more columns
        is an error (the model never saw those features).
        """
        if isinstance(X, RankingData):
            X = X.X
        if is_sparse(X):
            import scipy.sparse as sp

            X = sp.csr_matrix(X)
        else:  # dense rows are scored as they are (the same numbers as their CSR)
            X = np.asarray(X)
            X = np.ascontiguousarray(np.atleast_2d(X if X.dtype == np.float32 else X.astype(np.float64, copy=False)))
        self.check_width(X.shape[1])
        if self.standardization is None:
            return matvec(X, self.weights)
        # w'·((x − shift)·scale) = x·(scale·w') − (shift·scale)·w', without densifying x
        return matvec(X, self.raw_weights[: X.shape[1]]) + self.intercept

    def to_dict(self) -> dict[str, Any]:
        """The file's record (format 2): raw-feature ``weights`` and ``intercept`` first."""
        d = {"weights": [float(v) for v in self.raw_weights], "intercept": self.intercept}
        d.update((k, v) for k, v in asdict(self).items() if k not in ("weights", "source"))
        if self.standardization is not None:
            d["standardized_weights"] = [float(v) for v in self.weights]
        d["standardization"] = None if self.standardization is None else self.standardization.to_dict()
        d["n_features"] = self.n_features
        d["format_version"] = FORMAT_VERSION
        d["library"] = "sparkrank"
        return d

    def save(self, path: str | Path) -> None:
        """Write ``path`` (JSON; a local path or any Hadoop URI); with many features also
        ``path + '.weights.npy'``.  Each file is written atomically (temporary name, then
        rename: :mod:`sparkrank.io.fs`), the sidecar first, so a reader never sees a
        half-written model."""
        import io

        from .io import uri as U
        from .io.fs import filesystem

        path = str(path)
        fs = filesystem(path)
        fs.mkdirs(U.parent(path))
        d = self.to_dict()
        if self.n_features >= NPY_SIDECAR_MIN_FEATURES:
            buffer = io.BytesIO()
            np.save(buffer, self.raw_weights)
            fs.write_bytes(path + ".weights.npy", buffer.getvalue())
            d["weights_npy"] = U.basename(path) + ".weights.npy"
        fs.write_text(path, json.dumps(d, indent=1, default=json_default))

    @classmethod
    def load(cls, path: str | Path) -> "RankingModel":
        """Read a model written by :meth:`save` (or any JSON with ``weights``, ``solver``, ``C``)
        from a local path or any Hadoop URI.

        ``weights_npy`` must be a bare file name: the sidecar is only read from beside the
        model file (``../x.npy`` or an absolute path is an error, so a model file cannot
        make this process read arbitrary files).
        """
        import io

        from .io import uri as U
        from .io.fs import filesystem
        from .solvers.result import accepted_records

        path = str(path)
        fs = filesystem(path)
        try:
            d = json.loads(fs.read_text(path))
        except RecursionError:
            raise ValueError(f"cannot read model file {path}: its JSON is nested too deeply") from None
        except (OSError, UnicodeDecodeError, ValueError) as exc:  # ValueError: bad JSON, a 5000-digit number
            raise ValueError(f"cannot read model file {path}: {exc}") from exc
        if not isinstance(d, dict):
            raise ValueError(f"model file {path} holds a JSON {type(d).__name__}, not an object with weights")
        sidecar = d.get("weights_npy")
        weights = None
        if sidecar:
            if not isinstance(sidecar, str) or sidecar != U.basename(sidecar) or sidecar in (".", "..") \
                    or "\\" in sidecar or U.scheme(sidecar):
                raise ValueError(f"model file {path}: weights_npy must be a file name beside the model, "
                                 f"got {sidecar!r}")
            npy = U.join(U.parent(path), sidecar)
            if fs.exists(npy):
                try:
                    weights = np.load(io.BytesIO(fs.read_bytes(npy)), allow_pickle=False)
                except (OSError, ValueError) as exc:
                    raise ValueError(f"cannot read the weights file {npy} of model {path}: {exc}") from exc
        malformed = (TypeError, AttributeError, KeyError, IndexError, OverflowError, RecursionError)
        try:
            model = cls.from_dict(d, weights=weights, source=path)
        except malformed as exc:  # any other shape of a hand-edited or damaged file
            raise ValueError(f"model file {path} is malformed ({type(exc).__name__}: {exc})") from None
        try:  # what the commands print from the training summary, and what `report` plots from it
            convergence_report(model)
            accepted_records(model.summary.get("history") or [])
        except (ValueError, *malformed) as exc:
            raise ValueError(f"model file {path} has a malformed training summary ({type(exc).__name__}: "
                             f"{exc})") from None
        return model

    @classmethod
    def from_dict(cls, d: dict[str, Any], *, weights: np.ndarray | None = None,
                  source: str = "model record") -> "RankingModel":
        """A model from a format-1 or -2 record (``weights`` overrides ``d["weights"]``).

        Every defect is a ``ValueError`` naming ``source``: not an object, a missing or
        ``null`` key, weights that are not one finite number per feature, a standardization
        of another length, an unknown format version, an ``intercept`` that is not the one
        the model scores with (0 without standardization).
        """
        if not isinstance(d, dict):
            raise ValueError(f"{source} holds a JSON {type(d).__name__}, not an object with weights")
        for key in ("weights", "solver", "C"):
            if d.get(key) is None:
                raise ValueError(f"{source} has no {key!r}" if key not in d else f"{source} has {key!r}: null")
        _check_field_types(d, source)
        version = d.get("format_version", 1)
        if version not in (1, FORMAT_VERSION):
            raise ValueError(f"{source} has format_version {version!r}; this version of sparkrank reads 1 and "
                             f"{FORMAT_VERSION}")
        weights = _weight_vector(d["weights"] if weights is None else weights, source, "weights")
        try:
            st = Standardization.from_dict(d["standardization"]) if d.get("standardization") else None
        except (TypeError, ValueError) as exc:
            raise ValueError(f"{source}: bad standardization record: {exc}") from exc
        if st is not None and version >= 2:
            # format 2: `weights` act on raw features; the solver's are `standardized_weights`
            # (or, when a writer left them out, raw / scale)
            if d.get("standardized_weights") is not None:
                weights = _weight_vector(d["standardized_weights"], source, "standardized_weights")
            elif st.n_features == weights.shape[0]:
                weights = weights / st.scale
        model = cls(
            standardization=st,
            source=source,
            weights=weights,
            solver=d["solver"],
            C=float(d["C"]),
            lam=float(d.get("lam", math.nan)),
            tol=float(d.get("tol", math.nan)),
            counting=d.get("counting", "selection"),
            options=d.get("options", {}),
            summary=d.get("summary", {}),
            created=d.get("created", ""),
        )
        if "intercept" in d:
            _check_intercept(d["intercept"], model)
        return model


#: The type each optional field of a model record must have when present (``None`` allowed
#: where the writer may leave it out): a hand-edited file fails on load, naming the field.
_FIELD_TYPES = {"solver": (str,), "C": (int, float), "lam": (int, float, type(None)),
                "tol": (int, float, type(None)), "counting": (str,), "options": (dict, type(None)),
                "summary": (dict, type(None)), "created": (str, type(None))}
_SUMMARY_TYPES = {"feature_cols": (list, type(None)), "history": (list, type(None)), "engine": (str, type(None)),
                  "weight_col": (str, type(None)), "group_weight_col": (str, type(None))}


def _check_field_types(d: dict[str, Any], source: str) -> None:
    """A ``ValueError`` naming ``source`` and the field whose value has the wrong JSON type."""
    def check(record, types, prefix):
        for key, allowed in types.items():
            value = record.get(key)
            if key in record and (isinstance(value, bool) or not isinstance(value, allowed)):
                names = " or ".join(dict.fromkeys("null" if t is type(None) else _JSON_NAMES[t] for t in allowed))
                raise ValueError(f"{source}: {prefix}{key!r} must be {names}, got {json.dumps(value)[:60]}")

    check(d, _FIELD_TYPES, "")
    summary = d.get("summary") or {}
    check(summary, _SUMMARY_TYPES, "summary ")
    if any(not isinstance(c, str) for c in summary.get("feature_cols") or []):
        raise ValueError(f"{source}: summary 'feature_cols' must be a list of column names")
    if any(not isinstance(h, dict) for h in summary.get("history") or []):
        raise ValueError(f"{source}: summary 'history' must be a list of objects (one per iteration)")


_JSON_NAMES = {str: "a string", int: "a number", float: "a number", dict: "an object", list: "a list"}


def _check_intercept(value: Any, model: RankingModel) -> None:
    """A ``ValueError`` naming the model's file unless the file's ``intercept`` is the one
    :meth:`RankingModel.predict` adds.

    Training never learns an intercept (a constant cannot change a ranking): it is 0 without
    standardization and follows from the weights and the standardization with it.  A file whose
    ``intercept`` says otherwise (hand-edited) would score differently in sparkrank than by the
    file's own ``score = weights·x + intercept`` elsewhere, so it is refused, not ignored.
    """
    source = model.source
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise ValueError(f"{source}: 'intercept' must be a finite number, got {value!r}")
    st = model.standardization
    if st is None:
        if value != 0:
            raise ValueError(f"{source}: 'intercept' is {value!r} but a model without standardization has "
                             "intercept 0 (sparkrank learns none: a constant cannot change a ranking)")
        return
    # the file's value was rounded once when written: allow a few ulps of the sum's terms
    slack = 1e-9 * float(np.sum(np.abs(st.shift * st.scale * model.weights)))
    if abs(value - model.intercept) > slack:
        raise ValueError(f"{source}: 'intercept' is {value!r} but its weights and standardization give "
                         f"{model.intercept!r}; a standardized model's intercept follows from them")


def _weight_vector(value: Any, source: str, key: str) -> np.ndarray:
    """``value`` as a 1-D float64 array of finite numbers, or a ``ValueError`` naming ``source``."""
    try:
        w = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{source}: {key!r} must be a list of numbers ({exc})") from exc
    if w.ndim != 1:
        raise ValueError(f"{source}: {key!r} must be one number per feature (a 1-D list), got shape {w.shape}")
    bad = np.flatnonzero(~np.isfinite(w))
    if bad.size:
        raise ValueError(f"{source}: {key!r} has {bad.size} non-finite value(s), e.g. weight {int(bad[0])} is "
                         f"{w[bad[0]]!r}; such a model cannot score anything")
    return w


def json_default(o):
    """``json.dumps`` ``default=`` for numpy scalars and arrays (model, tune and checkpoint files)."""
    if isinstance(o, np.bool_):
        return bool(o)
    if isinstance(o, np.integer):
        return int(o)
    if isinstance(o, np.floating):
        return float(o)
    if isinstance(o, np.ndarray):
        return o.tolist()
    raise TypeError(f"not JSON serialisable: {type(o).__name__}")


def convergence_report(model: RankingModel) -> tuple[str, bool]:
    """One plain line on whether the model's solver converged, and whether to warn.

    From the training summary: the solver's message, its stopping measure (gradient ratio,
    gap or relative gap) against the tolerance, and the iteration count.  The warning flag
    is set when the fit did not converge (iteration cap, a failed line search, no step) or
    converged to all-zero weights (or, as the solver found, to within its tolerance of them).
    """
    s = model.summary or {}
    if "converged" not in s:
        return f"{model.source}: convergence unknown (the model file has no training summary)", False
    measure, value = s.get("stopping_measure"), s.get("stopping_value")
    if not measure:  # format-1 summaries: the last log record has the measure
        last = (s.get("history") or [{}])[-1]
        measure, value = next(((k.replace("_", " "), last[k]) for k in ("grad_ratio", "relative_gap", "gap")
                               if k in last), ("", None))
    detail = ""
    if measure and value is not None and math.isfinite(float(value)):
        detail = f", final {measure} {float(value):.3g} (tol {model.tol:.3g})"
    what = f"{model.solver} after {s.get('iterations', '?')} iterations: {s.get('message', 'no message')}{detail}"
    if s["converged"]:
        if s.get("zero_solution"):
            # the solver's message says why w = 0 is the answer and what to change (TopPush: a
            # larger top fraction; no C helps)
            where = "w = 0" if not np.any(model.weights) else "within the tolerance of w = 0"
            return f"converged to {where}: {what}; every row gets the same score", True
        if not np.any(model.weights):
            # A certified optimum at w = 0 (e.g. TopPush when no direction lifts the positives
            # above every query's top negative) is an honest answer but ranks nothing.
            return (f"converged to w = 0: {what}; every row gets the same score: no direction lowers the "
                    f"loss enough to pay for ‖w‖² at C={model.C:g} (a larger -C helps only if the regulariser, "
                    "not the loss itself, holds w at 0)"), True
        return f"converged: {what}", False
    capped = str(s.get("message", "")).startswith("reached max_iter")
    advice = ("the iteration cap stopped it before the tolerance; retrain with a larger --max-iter"
              if capped else "the scores are not those of the optimum")
    return f"NOT converged: {what}; {advice}", True


def model_weights_for(model, n_features: int) -> np.ndarray:
    """Weights on the raw features of ``n_features`` columns that rank exactly like ``model``.

    A standardized model's own weights act on scaled columns; its ``raw_weights`` act on the
    raw ones and give the same ranking (the scores differ only by a constant).
    """
    return fit_length(model.raw_weights, n_features)
