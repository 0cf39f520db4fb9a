"""A trained linear ranker: weights + metadata, saved as JSON (+ .npy for large w)."""

from __future__ import annotations

import json
import math
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import scipy.sparse as sp

from .data.block import RankingData
from .engines.linalg import csr_dot
from .standardization import Standardization

FORMAT_VERSION = 1
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
        ``weights·((x − shift)·scale)`` (see :mod:`sparkrank.standardization`).
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

    @property
    def n_features(self) -> int:
        return int(self.weights.shape[0])

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
        if not sp.issparse(X):
            X = sp.csr_matrix(np.atleast_2d(np.asarray(X, dtype=np.float64)))
        X = sp.csr_matrix(X)
        if X.shape[1] > self.n_features:
            raise ValueError(f"data has {X.shape[1]} feature columns but the model has {self.n_features}")
        if self.standardization is None:
            return csr_dot(X, self.weights)
        # w'·((x − shift)·scale) = x·(scale·w') − (shift·scale)·w', without densifying x
        return csr_dot(X, self.raw_weights[: X.shape[1]]) + self.intercept

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["weights"] = [float(v) for v in self.weights]
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
            np.save(buffer, self.weights)
            fs.write_bytes(path + ".weights.npy", buffer.getvalue())
            d["weights_npy"] = U.basename(path) + ".weights.npy"
        fs.write_text(path, json.dumps(d, indent=1, default=_json_default))

    @classmethod
    def load(cls, path: str | Path) -> "RankingModel":
        """Read a model written by :meth:`save` (or any JSON with ``weights``, ``solver``, ``C``).

        ``weights_npy`` must be a bare file name: the sidecar is only read from beside the
        model file (``../x.npy`` or an absolute path is an error, so a model file cannot
        make this process read arbitrary files).
        """
        import io

        from .io import uri as U
        from .io.fs import filesystem

        path = str(path)
        fs = filesystem(path)
        try:
            d = json.loads(fs.read_text(path))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise ValueError(f"cannot read model file {path}: {exc}") from exc
        sidecar = d.get("weights_npy") if isinstance(d, dict) else None
        weights = None
        if sidecar:
            if not isinstance(sidecar, str) or sidecar != U.basename(sidecar) or sidecar in (".", "..") \
                    or "\\" in sidecar or U.scheme(sidecar):
                raise ValueError(f"model file {path}: weights_npy must be a file name beside the model, "
                                 f"got {sidecar!r}")
            npy = U.join(U.parent(path), sidecar)
            if fs.exists(npy):
                weights = np.load(io.BytesIO(fs.read_bytes(npy)), allow_pickle=False)
        return cls.from_dict(d, weights=weights, source=path)

    @classmethod
    def from_dict(cls, d: dict[str, Any], *, weights: np.ndarray | None = None,
                  source: str = "model record") -> "RankingModel":
        """A model from :meth:`to_dict` output (``weights`` overrides ``d["weights"]``)."""
        for key in ("weights", "solver", "C"):
            if key not in d:
                raise ValueError(f"{source} has no {key!r}")
        if weights is None:
            weights = np.asarray(d["weights"], dtype=np.float64)
        st = d.get("standardization")
        return cls(
            standardization=None if not st else Standardization.from_dict(st),
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


def _json_default(o):
    if isinstance(o, np.bool_):
        return bool(o)
    if isinstance(o, np.integer):
        return int(o)
    if isinstance(o, np.floating):
        return float(o)
    if isinstance(o, np.ndarray):
        return o.tolist()
    raise TypeError(f"not JSON serialisable: {type(o).__name__}")
