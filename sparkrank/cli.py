"""Command line: ``sparkrank train | predict | evaluate | convert``.

Every command reads SVMlight/LETOR text (``.gz`` too) or Parquet; ``sample:train`` and
``sample:test`` name the small synthetic data set bundled with the package.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from pathlib import Path

import numpy as np

from . import __version__
from .conventions import DEFAULT_NDCG_DISCOUNT, DEFAULT_ZERO_IDCG
from .data.block import DataError
from .kernels.counting import COUNTING_METHODS, DEFAULT_COUNTING

ENGINES = ("local",)

EPILOG = """\
examples:
  sparkrank train --input sample:train --model model.json
  sparkrank evaluate --model model.json --input sample:test
  sparkrank predict --model model.json --input sample:test --output scores.txt
  sparkrank convert --input train.txt --output train.parquet

Regularisation: -C is LIBLINEAR's C in ½‖w‖² + C·Σ_pairs loss; --lambda is the BMRM
λ in λ‖w‖² + (1/N)·Σ_pairs loss; they are the same model when C = 1/(2λN).
"""


def _add_common(p: argparse.ArgumentParser) -> None:
    p.add_argument("-v", "--verbose", action="store_true", help="debug logging")
    p.add_argument("-q", "--quiet", action="store_true", help="only warnings and errors")


def _add_input(p: argparse.ArgumentParser, help_text: str) -> None:
    p.add_argument("--input", required=True, metavar="PATH", help=help_text)
    p.add_argument("--dtype", choices=("float64", "float32"), default="float64",
                   help="feature storage precision (default float64)")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="sparkrank",
        description="Exact linear learning-to-rank (RankSVM by TRON or BMRM) without materialising pairs.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"sparkrank {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True

    p = sub.add_parser("train", help="train a model",
                       description="Train a linear ranker and write the model (JSON).")
    _add_input(p, "training data: SVMlight/LETOR file (.gz ok), Parquet file/dir, or sample:train")
    p.add_argument("--model", required=True, metavar="OUT", help="where to write the model JSON")
    p.add_argument("--solver", choices=("tron", "bmrm"), default="tron",
                   help="tron: L2-loss RankSVM, trust-region Newton (default); bmrm: L1-loss RankSVM, cutting planes")
    reg = p.add_mutually_exclusive_group()
    reg.add_argument("-C", "--C", dest="C", type=float, help="LIBLINEAR-style C (default 1)")
    reg.add_argument("--lambda", dest="lam", type=float, help="BMRM-style λ (alternative to -C)")
    p.add_argument("--tol", type=float, default=1e-3,
                   help="tron: relative gradient norm; bmrm: absolute gap (default 1e-3)")
    p.add_argument("--counting", choices=COUNTING_METHODS, default=DEFAULT_COUNTING,
                   help="pair-counting structure (default selection tree; 'pairs' is the O(m²) baseline)")
    p.add_argument("--max-iter", type=int, default=None, help="cap on outer iterations")
    p.add_argument("--init-model", metavar="MODEL", help="warm start from this model's weights")
    p.add_argument("--n-features", type=int, default=None, help="feature count (default: largest index seen)")
    p.add_argument("--engine", choices=ENGINES, default="local", help="where to compute (default local)")
    _add_common(p)

    p = sub.add_parser("predict", help="score rows with a model",
                       description="Write one score per input row, in input order.")
    p.add_argument("--model", required=True, help="model JSON")
    _add_input(p, "rows to score (SVMlight/Parquet)")
    p.add_argument("--output", required=True, metavar="SCORES", help="text file, one score per line")
    _add_common(p)

    p = sub.add_parser("evaluate", help="ranking metrics of a model on data",
                       description="Print one JSON object: pairwise accuracy, AUC, NDCG@k, mean NDCG, objective.")
    p.add_argument("--model", required=True, help="model JSON")
    _add_input(p, "labelled rows (SVMlight/Parquet)")
    p.add_argument("--k", type=int, nargs="+", default=[1, 3, 5, 10], help="NDCG cut-offs (default 1 3 5 10)")
    p.add_argument("--ndcg-discount", choices=("letor", "yahoo"), default=DEFAULT_NDCG_DISCOUNT,
                   help="letor: 1/log2(max(2,i)) (default); yahoo: 1/log2(i+1)")
    p.add_argument("--zero-idcg", choices=("zero", "one", "skip"), default=DEFAULT_ZERO_IDCG,
                   help="NDCG of queries whose labels are all 0 (default zero, as LETOR's script)")
    p.add_argument("--per-query", metavar="CSV", help="also write per-query metrics to this CSV")
    _add_common(p)

    p = sub.add_parser("convert", help="convert between SVMlight and Parquet",
                       description="SVMlight/LETOR -> Parquet (indices/values lists), or Parquet -> SVMlight.")
    _add_input(p, "source file (SVMlight or Parquet)")
    p.add_argument("--output", required=True, help="target: *.parquet for Parquet, anything else for SVMlight")
    _add_common(p)
    return parser


def _setup_logging(args) -> None:
    level = logging.DEBUG if args.verbose else logging.WARNING if args.quiet else logging.INFO
    logging.basicConfig(level=level, format="%(asctime)s %(name)s %(message)s", datefmt="%H:%M:%S",
                        stream=sys.stderr)


def _load(args, n_features: int | None = None):
    from .data.io import read_ranking_data

    return read_ranking_data(args.input, n_features=n_features, dtype=np.dtype(args.dtype).type)


def _cmd_train(args) -> int:
    from .model import RankingModel
    from .training import train

    data = _load(args, args.n_features)
    w0 = None
    if args.init_model:
        init = RankingModel.load(args.init_model)
        data = data.with_features(max(data.n_features, init.n_features))
        w0 = np.zeros(data.n_features)
        w0[: init.n_features] = init.weights
    model = train(data, solver=args.solver, C=args.C, lam=args.lam, tol=args.tol,
                  counting=args.counting, max_iter=args.max_iter, w0=w0)
    model.save(args.model)
    s = model.summary
    print(f"trained {args.solver}: {s['iterations']} iterations, objective {s['objective']:.6g}, "
          f"{s['seconds']:.2f}s, {s['n_pairs']} pairs; model written to {args.model}")
    return 0


def _load_for_model(args, model):
    data = _load(args)
    if data.n_features > model.n_features:
        raise DataError(f"{args.input} has {data.n_features} feature columns but the model has {model.n_features}")
    return data.with_features(model.n_features)


def _cmd_predict(args) -> int:
    from .model import RankingModel

    model = RankingModel.load(args.model)
    data = _load_for_model(args, model)
    scores = data.to_input_order(model.predict(data))
    np.savetxt(args.output, scores, fmt="%.17g")
    print(f"wrote {scores.shape[0]} scores to {args.output}")
    return 0


def _cmd_evaluate(args) -> int:
    from .engines.local import LocalEngine
    from .evaluation import evaluate_ranking, per_group_metrics
    from .model import RankingModel
    from .training import training_objective_value

    model = RankingModel.load(args.model)
    data = _load_for_model(args, model)
    scores = model.predict(data)
    opts = dict(ks=tuple(args.k), discount=args.ndcg_discount, zero_idcg=args.zero_idcg)
    result = evaluate_ranking(data.groups, scores, **opts)
    result["objective"] = (training_objective_value(model, LocalEngine(data))
                           if data.groups.n_pairs else float("nan"))
    result["solver"] = model.solver
    result["C"] = model.C
    print(json.dumps(result, indent=1))
    if args.per_query:
        per = per_group_metrics(data.groups, scores, **opts)
        _write_per_query(args.per_query, data.qids, per)
    return 0


def _write_per_query(path: str, qids, per: dict) -> None:
    names = list(per)
    n = len(next(iter(per.values()))) if per else 0
    ids = qids if qids is not None else np.zeros(n, dtype=np.int64)
    with open(path, "w") as f:
        f.write(",".join(["qid", *names]) + "\n")
        for i in range(n):
            f.write(",".join([str(ids[i]), *(repr(float(per[k][i])) for k in names)]) + "\n")


def _cmd_convert(args) -> int:
    from .data.io import write_parquet
    from .data.svmlight import write_svmlight

    data = _load(args)
    out = Path(args.output)
    if out.suffix in (".parquet", ".pq"):
        write_parquet(out, data)
    else:
        inverse = np.argsort(data.row_order)
        qid = None if data.qids is None else np.repeat(data.qids, data.groups.group_sizes)[inverse]
        write_svmlight(out, data.X[inverse], data.labels[inverse], qid)
    print(f"wrote {data.n_rows} rows ({data.n_features} features, {data.groups.n_groups} groups) to {out}")
    return 0


COMMANDS = {"train": _cmd_train, "predict": _cmd_predict, "evaluate": _cmd_evaluate, "convert": _cmd_convert}


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``sparkrank`` console script."""
    args = build_parser().parse_args(argv)
    _setup_logging(args)
    try:
        return COMMANDS[args.command](args)
    except (DataError, FileNotFoundError, ValueError) as exc:
        print(f"sparkrank {args.command}: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
