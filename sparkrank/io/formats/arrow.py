"""Formats read in this process as an Arrow dataset (Parquet, CSV/TSV): :class:`ArrowFormat`.

The rows of every file are read with one schema, merged as Spark merges them
(:func:`arrow_dataset`), filtered by ``--where`` in pyarrow, and decoded by
:func:`~sparkrank.data.table.ranking_data_from_table`; a bad row is named in its own file
(:func:`row_in_its_file`), as Spark's ``_metadata.row_index`` names it.
"""

from __future__ import annotations

import logging
import re
from contextlib import contextmanager
from dataclasses import dataclass

import numpy as np

from ...data.block import DataError
from .. import uri as U
from ..where import cannot_read, read_arrow, to_arrow_filter
from .base import Format
from .records import record_start_line



@dataclass(frozen=True)
class ArrowFormat(Format):
    """A format this process reads as a ``pyarrow.dataset``."""

    def local_dataset(self, paths: list, base_dir: str | None = None):
        """A ``pyarrow.dataset.Dataset`` over local ``paths`` (Hive partitions discovered; a list
        of files among them has them under ``base_dir``, :meth:`~sparkrank.io.sources.Source.local_dataset`).
        The hook every concrete Arrow format defines (Parquet, CSV/TSV); this base class is never
        registered as a format itself."""
        raise TypeError(f"{type(self).__name__} is an ArrowFormat without its own local_dataset(paths)")

    def read_local(self, source, *, n_features, dtype, drop_invalid_rows, threads):
        from ...data.arrow import RowError
        from ...data.table import ranking_data_from_table

        dataset = source.local_dataset()
        names = dataset.schema.names
        where = f"{source.name}: "
        source.columns.check(names, where)
        meta = dataset.schema.metadata or {}
        stored_n = int(meta[b"sparkrank.n_features"]) if b"sparkrank.n_features" in meta else None
        read = dict(n_features=n_features, stored_n_features=stored_n, dtype=dtype,
                    drop_invalid_rows=drop_invalid_rows)
        data = self.read_batch_by_batch(dataset, source.columns, source.where, where, read)
        if data is not None:
            return data
        try:
            table, flt = read_arrow(dataset, source.where, where)
        except Exception as exc:  # pyarrow's errors: a filter's types, a CSV value its column's type cannot hold
            if type(exc).__module__.startswith("pyarrow"):
                raise DataError(cannot_read(source.name, source.where, exc)) from None
            raise
        try:
            return ranking_data_from_table(table, source.columns, where=where, **read)
        except RowError as exc:
            raise DataError(row_in_its_file(dataset, flt, source.columns, read) or str(exc)) from None

    def read_batch_by_batch(self, dataset, columns, where_filter: str | None, where: str, read: dict):
        """The rows of ``dataset`` read batch by batch into the final arrays, or ``None`` to read
        them as one table (``read``: the options of
        :func:`~sparkrank.data.table.ranking_data_from_table`)."""
        return None

    def locate_row(self, source, *, dtype, drop_invalid_rows):
        paths = [U.local_path(entry.path) for entry in source.files]
        if not self.local or not paths or None in paths:
            return None
        if source.where_sql:
            return None  # Spark SQL: which rows it kept is unknown here
        dataset = self.local_dataset(paths)
        try:
            flt = to_arrow_filter(source.where, dataset.schema, "") if source.where else None
        except DataError:
            return None  # a number against a string column, which only Spark evaluates
        read = dict(n_features=None, stored_n_features=None, dtype=dtype, drop_invalid_rows=drop_invalid_rows)
        try:
            return row_in_its_file(dataset, flt, source.columns, read)
        except Exception:  # noqa: BLE001 - the error being located stays the one reported
            return None


def unreadable_parquet(path: str) -> str:
    """The message of a file read as Parquet that is not one (or is damaged): the same on both
    engines (pyarrow and Spark word it differently)."""
    from ..uri import display_name

    return f"{display_name(path)}: not a Parquet file, or a damaged one (its footer cannot be read)"


# pyarrow: "Could not open Parquet input source '<path>': Parquet magic bytes not found in footer"
_PARQUET_WITHOUT_FOOTER = re.compile(r"Could not open Parquet input source '(.+?)': .*(?:magic bytes|footer)", re.S)


def arrow_dataset(paths: list, fmt, base_dir: str | None = None):
    """One ``pyarrow.dataset.Dataset`` over local ``paths`` (Hive partitions discovered) with
    the schema of :func:`unified_schema`: pyarrow would otherwise take the first file's types
    for all of them (or refuse to combine several paths' datasets), where Spark reads an
    integer column of one file and a double column of another as doubles.  A file read as
    Parquet that is not one is :func:`unreadable_parquet`."""
    import pyarrow as pa
    import pyarrow.dataset as ds

    def discover(path, schema=None):
        try:
            return ds.dataset(path, format=fmt, partitioning="hive", schema=schema, partition_base_dir=base_dir)
        except pa.ArrowInvalid as exc:
            unreadable = _PARQUET_WITHOUT_FOOTER.search(str(exc)) if fmt == "parquet" else None
            if unreadable is None:
                raise
            raise DataError(unreadable_parquet(unreadable.group(1))) from None

    found = [discover(p) for p in paths]
    schema = unified_schema(found)
    # a path whose own schema is not the merged one is read again with it (CSV files are then
    # parsed to these types)
    datasets = [d if d.schema.equals(schema) else discover(p, schema) for p, d in zip(paths, found)]
    return datasets[0] if len(datasets) == 1 else ds.dataset(datasets)


def unified_schema(datasets):
    """The schema of every file of ``datasets`` (a CSV file's types inferred from that file),
    merged with numbers widened (int32 to int64 to double) as Spark merges them, then the
    Hive partition columns.

    Raises
    ------
    DataError
        Two files whose column types do not merge (a string and a number), naming both.
    """
    import pyarrow as pa

    schema, origin = None, {}  # origin: the file whose type of each column the schema holds
    for dataset in datasets:
        for fragment in dataset.get_fragments():
            own = fragment.physical_schema
            try:
                merged = own if schema is None else pa.unify_schemas([schema, own], promote_options="permissive")
            except (pa.ArrowTypeError, pa.ArrowInvalid):
                raise DataError(_type_conflict(schema, own, origin, fragment.path)) from None
            before = {} if schema is None else dict(zip(schema.names, schema.types))
            origin.update({f.name: fragment.path for f in merged if before.get(f.name) != f.type})
            schema = merged
    if schema is None:  # no files (an empty dataset): nothing to merge
        return datasets[0].schema
    partitions = [d.partitioning.schema for d in datasets if getattr(d, "partitioning", None) is not None]
    return pa.unify_schemas([schema, *partitions], promote_options="permissive")


def _type_conflict(schema, own, origin: dict, path: str) -> str:
    """The message for file ``path`` (schema ``own``) whose column types do not merge with
    ``schema`` (each column's type as in file ``origin[name]``)."""
    import pyarrow as pa

    from ..uri import display_name

    for f in own:
        if f.name in schema.names:
            try:
                pa.unify_schemas([pa.schema([schema.field(f.name)]), pa.schema([f])], promote_options="permissive")
            except (pa.ArrowTypeError, pa.ArrowInvalid):
                return (f"{display_name(path)}: column {f.name!r} is {f.type}, but "
                        f"{schema.field(f.name).type} in {display_name(origin[f.name])}; the files of one input "
                        "must agree on each column's type (integers and doubles are read as doubles)")
    return f"{display_name(path)}: its columns do not merge with those of {display_name(next(iter(origin.values())))}"


def row_in_its_file(dataset, flt, columns, read: dict) -> str | None:
    """``"{file}: row {n}: {detail}"`` for the first bad row of a local Arrow dataset, ``n``
    counted in its own file before ``--where`` (as Spark's ``_metadata.row_index``, so both
    engines name the same file and row; see :mod:`sparkrank.engines.spark.locate`).  Runs only on
    the error path: each file is read again, in the order the dataset concatenated them."""
    import pyarrow.dataset as ds

    children = dataset.children if isinstance(dataset, ds.UnionDataset) else [dataset]
    # the rows --drop-invalid-rows drops were counted in the log already: not again per file
    with _log_held_back():
        return _first_bad_row(children, flt, columns, read)


@contextmanager
def _log_held_back():
    """sparkrank's log off for the block (a second reading's messages said already)."""
    logger = logging.getLogger("sparkrank")
    disabled, logger.disabled = logger.disabled, True
    try:
        yield
    finally:
        logger.disabled = disabled


def _first_bad_row(children, flt, columns, read: dict) -> str | None:
    """:func:`row_in_its_file` over the datasets ``children`` (their files in order)."""
    import pyarrow as pa
    import pyarrow.dataset as ds

    from ...data.arrow import RowError
    from ...data.table import ranking_data_from_table
    from ...data.weights import WeightError

    for child in children:
        for fragment in child.get_fragments(filter=flt):
            table = fragment.to_table(schema=child.schema)
            table = table.append_column("__sparkrank_row", pa.array(np.arange(table.num_rows)))
            if flt is not None:
                table = ds.dataset(table).to_table(filter=flt)
            name = U.display_name(fragment.path)
            try:
                ranking_data_from_table(table, columns, where=f"{name}: ", **read)
                columns.weights.arrays(table)  # data/weights.py: a bad weight is a bad row too
            except (RowError, WeightError) as exc:
                row = table.column('__sparkrank_row')[exc.row].as_py()
                return f"{name}: row {row}{_line_of_record(child, fragment.path, row)}: {exc.detail}"
            except DataError:
                return None
    return None


def _line_of_record(dataset, path: str, row: int) -> str:
    """`` (line L)`` for data record ``row`` of a CSV/TSV file (a quoted field may span lines,
    so its row, a record number, is not its line), else ``""``."""
    import pyarrow.dataset as ds

    if not isinstance(dataset.format, ds.CsvFileFormat):
        return ""
    line = record_start_line(path, dataset.format.parse_options.delimiter, row)
    return "" if line is None else f" (line {line})"
