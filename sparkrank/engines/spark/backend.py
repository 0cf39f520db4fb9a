"""The Spark engine's backend: rows read and kept on the executors
(:class:`~sparkrank.engines.spark.SparkEngine`), outputs written from them."""

from __future__ import annotations

import logging

from ...data.block import DataError
from ...io.outputs import write_csv, write_csv_dataframe, write_dataframe
from ..backend import Backend, ConvertOutput, ScoreOutput, is_csv, score_format
from .inputs import SparkRows, SparkSource, build_engine

log = logging.getLogger("sparkrank")


class SparkBackend(Backend):
    """``--engine spark``: an embedded ``local[*]`` session unless ``--master`` or spark-submit."""

    name = "spark"
    #: Evaluates a Spark SQL row filter (``--where-sql``) on the executors.
    spark_sql = True
    options = Backend.options + ("spark", "placement", "num_partitions", "aggregation_depth")

    def __init__(self, settings, session=None):
        super().__init__(settings, session)
        if self.session is None:
            self.session = self._start_session()

    def check_settings(self) -> None:
        if self.settings.threads is not None:
            raise ValueError("--threads is an option of the local engine; Spark uses its executors' cores")

    def _start_session(self):
        from ...io.spark.errors import quiet_query_context_logs, quiet_task_failure_logs
        from ...io.spark.passthrough import spark_conf
        from ...io.spark.session import get_session

        s = self.settings
        conf = spark_conf(s.spark_conf, s.packages, s.driver_memory)
        spark = get_session(s.master, conf=conf, log_level="INFO" if s.verbose else "WARN")
        if not s.verbose:
            quiet_task_failure_logs(spark)
            quiet_query_context_logs()
        return spark

    # -- building ------------------------------------------------------------------------------
    @classmethod
    def build(cls, source, **options):
        return build_engine(source, **options)

    @classmethod
    def adopt(cls, rows):
        if isinstance(rows, SparkSource):
            return SparkRows(rows)
        if type(rows).__name__ == "DataFrame" and hasattr(rows, "sparkSession"):
            return SparkRows(SparkSource(rows))
        return None

    def _engine_options(self) -> dict:
        s = self.settings
        return dict(placement=s.placement, num_partitions=s.partitions, drop_invalid_rows=s.drop_invalid_rows,
                    dtype=s.dtype_type, aggregation_depth=s.aggregation_depth)

    def engine(self, source, n_features=None):
        options = dict(self._engine_options(), spark=self.session, n_features=n_features)
        return build_engine(source, **{k: v for k, v in options.items() if v is not None})

    def tune_rows(self, source):
        df, cols = source.dataframe(self.session)
        return SparkRows(SparkSource(df, cols.label, cols.qid, cols.features, self._engine_options()))

    # -- outputs -------------------------------------------------------------------------------
    def check_scores_output(self, out: ScoreOutput) -> None:
        if out.partition_by and score_format(out.path) == "csv":
            raise ValueError(f"--partition-by writes Hive partitions of Parquet; {out.path} asks for CSV "
                             "(name it without .csv for a Parquet directory)")
        self.check_output_dir(out.path, out.mode)

    def fixed_width(self, source) -> bool:
        df, _ = source.dataframe(self.session)  # lazy: the columns of the frame the engine reads
        return source.fixed_width(df.columns)

    def write_scores(self, source, model, out: ScoreOutput) -> str:
        from .scoring import shaped_scores

        df, cols = source.dataframe(self.session)
        scored = shaped_scores(df, cols, model, data_name=source.name, group=list(source.columns.group),
                               fixed_width=source.fixed_width(df.columns),
                               feature_cols=source.columns.feature_cols, prediction_col=out.prediction_col,
                               keep_cols=out.keep_cols, rank=out.rank, partition_by=out.partition_by)
        if score_format(out.path) == "csv":  # Spark's directory of part files, lines as write_csv makes them
            write_csv_dataframe(scored, out.path, mode=out.mode)
            return f"wrote scores ({', '.join(scored.columns)}) to the CSV directory {out.path}"
        write_dataframe(scored, out.path, mode=out.mode, partition_by=out.partition_by)
        return f"wrote scores ({', '.join(scored.columns)}) to the Parquet directory {out.path}"

    def check_per_query_output(self, path: str, mode: str) -> None:
        if is_csv(path):
            self.check_output_file(path)
        else:
            self.check_output_dir(path, mode)

    def write_per_query(self, source, model, metrics, path, mode):
        from ...conventions import PREDICTION_COL
        from .scoring import per_group_frame, predict_dataframe

        df, cols = source.dataframe(self.session)
        if cols.qid is None:
            raise DataError(f"{source.name} has no qid: tokens; --per-query needs a group id")
        scored = predict_dataframe(df, model, features_col=cols.features, score_col=PREDICTION_COL)
        per = per_group_frame(scored, metrics, label_col=cols.label, qid_col=cols.qid, score_col=PREDICTION_COL)
        if is_csv(path):  # one row per query, gathered to write one CSV file
            rows = [r for r in per.orderBy(cols.qid).collect()]
            write_csv(path, per.columns, [list(r) for r in rows], self.session)
        else:
            write_dataframe(per, path, mode=mode)

    def check_convert_output(self, out: ConvertOutput) -> None:
        if out.n_features is not None:
            raise ValueError("--n-features is written in-process: use --engine local")
        if not out.format.writes_on_spark:
            raise ValueError("SVMlight and CSV/TSV text is written in-process: use --engine local (or a .parquet output)")
        self.check_output_dir(out.path, out.mode)

    def convert(self, source, out: ConvertOutput) -> str:
        from ...io.spark.frames import FEATURES_FROM_COLUMNS

        df, cols = source.dataframe(self.session)
        if cols.features == FEATURES_FROM_COLUMNS and "features" not in df.columns:
            df = df.withColumnRenamed(FEATURES_FROM_COLUMNS, "features")
        out.format.write_spark(df, out.path, mode=out.mode, partition_by=out.partition_by)
        return f"wrote {', '.join(out.inputs)} as the Parquet directory {out.path} (columns {', '.join(df.columns)})"
