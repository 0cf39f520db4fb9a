"""Where data and models live: URIs, file systems, input sources and outputs.

* :mod:`.uri` — what a path string names (a local path, a ``sample:`` name, a Hadoop URI);
* :mod:`.fs` — the file operations sparkrank needs, on the local disk for scheme-less paths
  and through Hadoop's ``FileSystem`` (the JVM gateway) for every URI with a scheme;
* :mod:`.formats` — input formats (Parquet, SVMlight, CSV/TSV, Delta) registered by name;
* :mod:`.sources` — :func:`open_source`: one object that gives a Spark DataFrame, a local
  :class:`~sparkrank.data.block.RankingData` or an engine;
* :mod:`.where` — the ``--where`` filter on the local engine (a subset of Spark SQL);
* :mod:`.outputs` — output checks before training, atomic model writes, Spark write modes,
  safe CSV.
"""
