"""Input and output formats as objects that own their decisions (:mod:`.base`): file names,
the readers in this process and on Spark, the writer, and how a bad row is found again.
The formats by name are :data:`~sparkrank.io.formats.registry.FORMATS`."""
