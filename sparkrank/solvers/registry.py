"""The solver registry: one declarative entry per solver name.

An entry says which objective a solver minimises, which optimiser runs on it, which
solver-specific options it takes (name, type, range or choices, default, help, and whether
the objective or the optimiser gets it), whether it accepts BMRM's λ and a warm start, and
its default tolerance and iteration cap.  :func:`sparkrank.training.train`, the command line
(``--solver`` choices and the solver-specific options with their ``--help``), ``tune``
(:mod:`sparkrank.selection`), the pyspark.ml ``LinearRanker`` params and the model file all
read it, so adding a solver is one objective or optimiser plus one entry in :data:`SOLVERS`.

Options are checked (:meth:`SolverSpec.check_options`) before any engine pass: an unknown
option or a value of the wrong type, out of range or not among the choices is a
``ValueError`` naming the option and what is allowed.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Literal

from ..choices import DEFAULT_PAIR_RULE, PAIR_RULES, RANKNET_GRADIENTS, TOPPUSH_SCOPES
from ..conventions import DEFAULT_POSITIVE_THRESHOLD
from ..kernels.erfc_sum import MIN_EPSILON
from ..kernels.ranknet import DEFAULT_EPSILON
from ..objectives.base import Objective
from ..objectives.ranknet import RankNetObjective
from ..objectives.ranksvm import HingeRisk, SquaredHingeObjective
from ..objectives.toppush import DEFAULT_TOP_FRACTION, DEFAULT_TOPPUSH_C, TOP_FRACTION_TUNE_VALUES, TopPushObjective
from .apg import apg
from .bmrm import bmrm
from .bundle import DEFAULT_INACTIVE_LIMIT
from .ncg import ncg
from .result import SolverResult
from .tron import tron


#: LIBLINEAR's default C, every solver's unless its entry says otherwise (``SolverSpec.default_C``).
DEFAULT_C = 1.0


@dataclass(frozen=True)
class Option:
    """One solver-specific option.

    Attributes
    ----------
    name : str
        Keyword name (``solver_options`` key; the CLI flag is ``--name``, or ``--no-name``
        for a boolean that defaults to true).
    type : {bool, int, float, str}
    default : any
        Its value when not given (``None``: the objective or optimiser decides).
    help : str
        One line for ``--help`` and docs.
    choices : tuple of str, optional
        Allowed values of a ``str`` option.
    low, high : float, optional
        Open (``low < v``, ``v < high``) or, with ``closed_low`` / ``closed_high``, closed bounds of a number.
    target : {"objective", "optimiser", "both"}
        Who receives it: the objective's constructor, the optimiser's keyword arguments, or both.
    recorded : bool
        :func:`~sparkrank.training.train` passes the default when the option is not given, and the
        model records it: for a default that differs from the objective's own (TopPush's top
        fraction: the objective's 0 is li2014's, the solver's default is measured), so a model
        file always says which value trained it (a file without it predates the option).
    tune_values : tuple of float, optional
        The values ``tune`` tries, each with every C, when the option is not given.
    """

    name: str
    type: type
    default: Any
    help: str
    choices: tuple[str, ...] | None = None
    low: float | None = None
    high: float | None = None
    closed_low: bool = False
    target: Literal["objective", "optimiser", "both"] = "objective"
    closed_high: bool = False
    recorded: bool = False
    tune_values: tuple[Any, ...] | None = None

    def allowed(self) -> str:
        """What values are allowed, in words (for error messages and ``--help``)."""
        if self.choices is not None:
            return "one of " + ", ".join(self.choices)
        if self.type is bool:
            return "true or false"
        kind = "an integer" if self.type is int else "a finite number"
        if self.low is not None and self.high is not None:
            left, right = "[" if self.closed_low else "(", "]" if self.closed_high else ")"
            return f"{kind} in {left}{self.low:g}, {self.high:g}{right}"
        if self.low is not None:
            return f"{kind} {'>=' if self.closed_low else '>'} {self.low:g}"
        return kind

    def check(self, solver: str, value: Any) -> Any:
        """``value`` converted to the option's type, or a ``ValueError`` naming the option."""
        bad = ValueError(f"solver {solver!r} option {self.name}={value!r}: must be {self.allowed()}")
        if self.type is bool:
            if not isinstance(value, bool):
                raise bad
            return value
        if self.type is str:
            if not isinstance(value, str) or (self.choices is not None and value not in self.choices):
                raise bad
            return value
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise bad
        if self.type is int and not float(value).is_integer():
            raise bad
        number = self.type(value)
        if not math.isfinite(number):
            raise bad
        if self.low is not None and not (number >= self.low if self.closed_low else number > self.low):
            raise bad
        if self.high is not None and not (number <= self.high if self.closed_high else number < self.high):
            raise bad
        return number


#: The optimisers' shared option: diagonal preconditioning (TRON's PCG, preconditioned NCG).
PRECONDITION = Option("precondition", bool, True,
                      "diagonally preconditioned CG and its units-free stopping rule (default on; off: plain "
                      "CG and the Euclidean rule, see docs/solvers.md, Conditioning)", target="optimiser")


@dataclass(frozen=True)
class SolverSpec:
    """How a solver name maps to an objective, an optimiser and their options.

    Attributes
    ----------
    name : str
    loss : str
        What is minimised, with its paper (for logs and ``--help``).
    method : str
        The optimiser, in words.
    make_objective : callable
        ``(engine, C, **objective_options) -> Objective`` (``counting=`` too when
        :attr:`counts_pairs`).
    run : callable
        ``(objective, w0, *, tol, max_iter, callback=None, **optimiser_options) -> SolverResult``.
    default_max_iter : int
    default_tol : float
    tol_meaning : str
        What the tolerance bounds (``--tol`` help).
    options : tuple of Option
    takes_lambda : bool
        Whether BMRM's λ (``λ‖w‖² + (1/N)Σ loss``) is a valid way to give the regularisation.
    warm_start : bool
        Whether ``run`` accepts a starting ``w0`` (a dual method such as TopPush does not).
    counts_pairs : bool
        Whether the objective counts support pairs (takes the ``counting`` method).
    resumes : bool
        Whether ``run`` takes ``resume=`` (its state in checkpoints continues bit for bit).
    default_C : float
        ``C`` when neither ``C`` nor ``λ`` is given (LIBLINEAR's 1, unless measurements chose another).
    tune_metric : str
        The validation metric ``tune`` selects by when none is given: what the loss optimises
        (pairwise accuracy for the pairwise losses, the positives at the top for TopPush).
    """

    name: str
    loss: str
    method: str
    make_objective: Callable[..., Objective]
    run: Callable[..., SolverResult]
    default_max_iter: int
    default_tol: float
    tol_meaning: str
    options: tuple[Option, ...] = ()
    takes_lambda: bool = False
    warm_start: bool = True
    counts_pairs: bool = False
    resumes: bool = True
    default_C: float = DEFAULT_C
    tune_metric: str = "pairwise_accuracy"
    _by_name: dict = field(init=False, repr=False, compare=False)

    def __post_init__(self):
        object.__setattr__(self, "_by_name", {o.name: o for o in self.options})

    def option(self, name: str) -> Option | None:
        return self._by_name.get(name)

    def check_options(self, options: dict[str, Any] | None) -> dict[str, Any]:
        """The given options, type-checked; unknown names or bad values are a ``ValueError``."""
        checked = {}
        for name, value in (options or {}).items():
            option = self._by_name.get(name)
            if option is None:
                allowed = ", ".join(self._by_name) or "none"
                raise ValueError(f"solver {self.name!r} has no option {name!r}; its options: {allowed}")
            checked[name] = option.check(self.name, value)
        return checked

    def with_recorded_defaults(self, options: dict[str, Any] | None) -> dict[str, Any]:
        """``options`` plus the default of every :attr:`Option.recorded` option not given."""
        return {**{o.name: o.default for o in self.options if o.recorded}, **(options or {})}

    def tuned_options(self, options: dict[str, Any] | None) -> dict[str, tuple[Any, ...]]:
        """The options ``tune`` searches (their :attr:`Option.tune_values`) because ``options`` leaves them open."""
        return {o.name: o.tune_values for o in self.options
                if o.tune_values is not None and o.name not in (options or {})}

    def split_options(self, options: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
        """Checked options as ``(objective's, optimiser's)``."""
        checked = self.check_options(options)
        objective = {k: v for k, v in checked.items() if self._by_name[k].target in ("objective", "both")}
        optimiser = {k: v for k, v in checked.items() if self._by_name[k].target in ("optimiser", "both")}
        return objective, optimiser


SOLVERS: dict[str, SolverSpec] = {}


def register(spec: SolverSpec) -> SolverSpec:
    """Add ``spec`` to :data:`SOLVERS` (a name can be registered once)."""
    if spec.name in SOLVERS:
        raise ValueError(f"solver {spec.name!r} is already registered")
    SOLVERS[spec.name] = spec
    return spec


def unregister(name: str) -> None:
    """Remove a solver (tests that register a toy solver put the registry back)."""
    SOLVERS.pop(name, None)


def solver_spec(name: str) -> SolverSpec:
    """The entry of ``name``, or a ``ValueError`` naming the registered solvers."""
    if name not in SOLVERS:
        raise ValueError(f"unknown solver {name!r}; choose one of {', '.join(SOLVERS)}")
    return SOLVERS[name]


#: The RankSVM losses' option of which pairs they sum over (lee-lin2014 §5); RankNCG and TopPush
#: do not take it (their losses are defined on all pairs / all negatives, no adjacent form).
PAIRS = Option("pairs", str, DEFAULT_PAIR_RULE,
               "train on all preference pairs of a query, or only on those whose labels are adjacent levels "
               "of the query (the next distinct label up; lee-lin2014 §5); the metrics still count all pairs",
               choices=PAIR_RULES)

# Default tol 1e-4 for TRON and NCG (LIBLINEAR: 1e-3): in the preconditioned, units-free norm 1e-3
# left MQ2008's objective 1.5e-4 above the optimum, 1e-4 left 6e-6 for 3-4 more Newton steps
# (docs/solvers.md, Conditioning and stopping rules).
register(SolverSpec(
    "tron", "L2 squared hinge (lee-lin2014)", "L2-loss RankSVM, trust-region Newton",
    SquaredHingeObjective, tron, 1000, 1e-4, "relative gradient norm",
    # the objective too: its value passes then bring the preconditioner's moments along
    options=(replace(PRECONDITION, target="both"), PAIRS), takes_lambda=True, counts_pairs=True))
register(SolverSpec(
    "bmrm", "L1 hinge (airola2011)", "L1-loss RankSVM, cutting planes",
    HingeRisk.from_c, bmrm, 5000, 1e-3, "absolute gap", takes_lambda=True, counts_pairs=True,
    options=(
        Option("inactive_limit", int, DEFAULT_INACTIVE_LIMIT, "drop a cutting plane after this many QPs in a row "
               "in which it was not tight (SVMstruct's rule); a larger value keeps a larger bundle",
               low=1, closed_low=True, target="optimiser"),
        PAIRS,
    )))
register(SolverSpec(
    "ncg", "log-sigmoid pairwise likelihood (raykar2007)", "log-sigmoid pairwise likelihood (RankNCG), nonlinear CG",
    RankNetObjective, ncg, 1000, 1e-4, "relative gradient norm",
    options=(
        Option("gradient", str, "fast", "gradient by the ε-exact fast erfc sums (fast) or the exact "
               "O(m²)-per-query sum (direct)", choices=RANKNET_GRADIENTS),
        Option("epsilon", float, DEFAULT_EPSILON, "accuracy ε of the fast erfc sums, relative to Σ|q|",
               low=MIN_EPSILON, high=1.0, closed_low=True),
        Option("monitor", bool, None, "compute the exact log-likelihood every iteration (an O(pairs) pass; "
               "default: only when free, with the direct gradient)"),
        PRECONDITION,
    )))
register(SolverSpec(
    "toppush", "TopPush: positives above the top negatives (li2014; top-k push)",
    "accuracy at the top (TopPush), accelerated projected gradient",
    TopPushObjective, apg, 5000, 1e-3, "certified relative duality gap",
    options=(
        Option("threshold", float, DEFAULT_POSITIVE_THRESHOLD, "labels above this are positives"),
        Option("scope", str, "group", "push each query's positives above its own top negatives (group) "
               "or above the top negatives of one global ranking (global)", choices=TOPPUSH_SCOPES),
        Option("top_fraction", float, DEFAULT_TOP_FRACTION,
               "compare each positive with the mean of the top ceil(tau*n-) negatives of its query (or of the "
               "global ranking) instead of the single top one; 0 is li2014's TopPush, whose optimum is often w = 0 "
               "on noisy data", low=0.0, high=1.0, closed_low=True, closed_high=True, recorded=True,
               tune_values=TOP_FRACTION_TUNE_VALUES),
    ), warm_start=False, resumes=False, default_C=DEFAULT_TOPPUSH_C,
    tune_metric="positives_at_top"))
