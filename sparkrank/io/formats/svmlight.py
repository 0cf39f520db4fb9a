"""SVMlight/LETOR text: parsed by the numba scanner in this process and on the executors.

The group id is the ``qid:`` tokens: files with them are grouped, files without are one
ranking, and ``--qid-col ''`` ignores them; the first data line of the first file fixes the qid
rule of every file, on both engines.  Compressed text (gzip by its magic bytes, bzip2 by its
``.bz2`` name) is read whole.  Its columns, as Spark reads them, are ``label``, ``qid`` (when
the files have qids), ``indices`` and ``values``; and ``cost`` (the lines' ``cost:`` tokens, 1
where a line has none) when ``--weight-col cost`` or ``--group-weight-col cost`` asks for it:
SVMlight's cost factor is its only weight column (:mod:`sparkrank.data.svmlight.costs`).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import ClassVar, Sequence

import numpy as np

from ...defaults import LAYOUT
from ...data.block import DataError, RankingData
from ...data.compression import decompressed, is_bzip2_name
from ...data.weights import COST_COLUMN, GroupWeightError
from .. import uri as U
from ..fs import LOCAL
from ..outputs import write_via_local_file
from .base import Format
from .delimited import input_order


@dataclass(frozen=True)
class SvmlightFormat(Format):
    """SVMlight/LETOR text (the format of files no other format names)."""

    def read_spark(self, spark, uris, base_path=None):
        # its own listing skips what is not data (sparkrank.io.uri.skipped_name): no base needed
        from ..spark.svmlight import read_svmlight_dataframe

        return read_svmlight_dataframe(spark, uris[0] if len(uris) == 1 else uris)

    #: the cost: tokens are a weight column (``--weight-col cost``) on both engines
    reads_weights: ClassVar[bool] = True

    def prepare_spark(self, df, columns, where_filter, where, where_sql=False):
        from ..spark.frames import prepare_frame

        if COST_COLUMN not in columns.weights.columns:  # read_spark always parses the costs
            df = df.drop(COST_COLUMN)
        return prepare_frame(df, columns, where_filter, where=where, where_sql=where_sql, numeric_labels=False,
                             check=lambda names: svmlight_column_spec(columns, names, where))

    def fixed_width(self, columns, names):
        return False  # a line leaves out its zero features

    def group_column(self, columns, names):
        if columns.group == ("qid",) and "qid" not in names:
            return None
        return columns.group_name

    def read_local(self, source, *, n_features, dtype, drop_invalid_rows, threads):
        from ...data.svmlight import parse_svmlight_bytes, read_svmlight

        columns = source.columns
        _check_group(columns.group, f"{source.name}: ")
        parts, layout = [], None
        for entry in source.files:
            path = source.local_path(entry.path)
            # dense rows when they are smaller than CSR (LETOR text), so memory stays low
            read = dict(n_features=n_features, dtype=dtype, threads=threads, qid_layout=layout, layout=LAYOUT)
            if is_bzip2_name(path):
                part = parse_svmlight_bytes(decompressed(LOCAL.read_bytes(path)), name=U.display_name(path), **read)
            else:
                part = read_svmlight(path, name=U.display_name(path), **read)
            # The first data line of the first file fixes the qid rule of every file, as on
            # Spark (io/spark/svmlight.py): a later file breaking it fails on its own line.
            layout = layout or part.qid_layout
            parts.append(part)
        X, labels, qid = _stack(parts)
        asked = COST_COLUMN in columns.weights.columns
        from ...data.svmlight.costs import costs_of  # the parser, loaded when text is read

        cost = costs_of(parts, labels.shape[0]) if asked else None
        names = svmlight_columns(qid is not None, asked)  # checked as on Spark, e.g. --feature-cols: there are none
        svmlight_column_spec(columns, names, f"{source.name}: ").check(names, f"{source.name}: ")
        if not columns.group:
            qid = None
        if source.where:
            X, labels, qid, cost = _filter_arrays(X, labels, qid, source.where, f"{source.name}: ", cost)
        weights = {"row_weights": cost if columns.weights.row == COST_COLUMN else None,
                   "group_weights": cost if columns.weights.group == COST_COLUMN else None}
        try:
            return RankingData.from_arrays(X, labels, qid, dtype=dtype, n_features=n_features, layout=LAYOUT,
                                           **weights)
        except GroupWeightError as exc:  # named by the input and the cost column, as on Spark
            raise exc.named(COST_COLUMN, source.name) from None

    def data_shape(self, files, columns, itemsize):
        from ...data import memory

        return memory.svmlight_shape(files, itemsize)

    def locate_bytes(self, sizes):
        return sum(sizes)  # the reader takes all files together

    def locate_row(self, source, *, dtype, drop_invalid_rows):
        """The local reader's message for this SVMlight input read as ``dtype`` (its first bad
        line in file order, named by file and line), or ``None``.  On Spark the text is parsed as
        float64 and a value float32 cannot hold only turns up in a block, among shuffled rows;
        the local reader names its line (``--where``: ``None``, the filtered rows are unknown)."""
        if source.where or any(U.local_path(entry.path) is None for entry in source.files):
            return None
        try:
            self.read_local(source, n_features=None, dtype=dtype, drop_invalid_rows=False, threads=1)
        except DataError as exc:
            return str(exc)
        except Exception:  # noqa: BLE001 - the error being located stays the one reported
            return None
        return None

    def write_local(self, path, data):
        write_via_local_file(path, lambda local: write_text(local, data))


def write_text(path: str, data) -> None:
    """``data`` as SVMlight text in input order, to the local ``path``."""
    from ...data.svmlight import write_svmlight

    inverse, qid = input_order(data)
    write_svmlight(path, data.X[inverse], data.labels[inverse], qid)


def svmlight_columns(has_qid: bool, cost: bool = False) -> list[str]:
    """The columns of SVMlight rows (as :func:`~sparkrank.io.spark.svmlight.read_svmlight_dataframe`
    reads them on Spark; ``cost``: asked for), for the column messages in-process."""
    return ["label", *(["qid"] if has_qid else []), *([COST_COLUMN] if cost else []), "indices", "values"]


def svmlight_column_spec(columns, names: Sequence[str], where: str):
    """The column roles to check against SVMlight rows' column ``names``, on both engines:
    ``columns``, without the group when the rows have no ``qid:`` tokens; a weight column other
    than the cost tokens is one error."""
    _check_group(columns.group, where)
    for col in columns.weights.columns:
        if col != COST_COLUMN:
            raise DataError(f"{where}svmlight input has no weight columns but its cost: tokens (--weight-col "
                            f"{COST_COLUMN}, --group-weight-col {COST_COLUMN}), not {col!r}")
    return columns if "qid" in names else replace(columns, group=())


def _check_group(group: tuple[str, ...], where: str) -> None:
    """SVMlight's group id is its ``qid:`` tokens: only the default or no group applies."""
    if group not in ((), ("qid",)):
        raise DataError(f"{where}SVMlight data keeps its group id in qid: tokens; --qid-col {','.join(group)!r} "
                        "does not apply (use the default, or '' to ignore the qids)")


def _stack(parts):
    """One ``(X, labels, qid)`` from several parsed SVMlight files (widths padded)."""
    if len(parts) == 1:
        return parts[0].X, parts[0].labels, parts[0].qid
    # All files followed one qid rule (the first file's), so the qid arrays are all present
    # or all absent and of one kind; files without data lines add nothing.
    rows = [p for p in parts if p.labels.shape[0]] or parts[:1]
    width = max(p.X.shape[1] for p in parts)
    if all(isinstance(p.X, np.ndarray) for p in rows):
        X = np.concatenate([np.pad(p.X, ((0, 0), (0, width - p.X.shape[1]))) for p in rows])
    else:
        import scipy.sparse as sp

        X = sp.vstack([sp.csr_matrix(p.X, shape=(p.X.shape[0], width)) if sp.issparse(p.X) else
                       sp.csr_matrix(np.pad(p.X, ((0, 0), (0, width - p.X.shape[1])))) for p in rows], format="csr")
    labels = np.concatenate([p.labels for p in rows])
    qid = None if rows[0].qid is None else np.concatenate([p.qid for p in rows])
    return X, labels, qid


def _filter_arrays(X, labels, qid, text: str, where: str, cost=None):
    """Rows of SVMlight arrays (and their costs) kept by a local ``--where`` over ``label``, ``qid``
    (and ``cost`` when read)."""
    import pyarrow as pa
    import pyarrow.dataset as ds

    from ..where import to_arrow_filter

    columns = {"label": pa.array(labels)}
    if qid is not None:
        columns["qid"] = pa.array(qid)
    if cost is not None:
        columns[COST_COLUMN] = pa.array(cost)
    columns["__row"] = pa.array(np.arange(labels.shape[0]))
    table = pa.table(columns)
    flt = to_arrow_filter(text, pa.schema([f for f in table.schema if f.name != "__row"]), where)
    rows = ds.dataset(table).to_table(filter=flt, columns=["__row"]).column(0).to_numpy()
    return X[rows], labels[rows], None if qid is None else qid[rows], None if cost is None else cost[rows]
