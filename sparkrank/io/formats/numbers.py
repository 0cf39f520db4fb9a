"""Which text is a number, as the readers of both engines take it."""

#: The numbers pyarrow's CSV reader reads as floats (the in-process engine's reader), as a Java
#: (and Python) regex: decimal and scientific notation, and inf, infinity and nan in any case,
#: signed, with blanks around them.  Spark's CSV schema inference knows only ``Inf``, ``-Inf``
#: and ``NaN`` and leaves a column holding ``inf`` or ``nan`` a string column (see
#: :func:`sparkrank.io.spark.frames.text_number`); its cast of a string to a double takes them all.
TEXT_NUMBER = r"^\s*[+-]?((\d+\.?\d*|\.\d+)([eE][+-]?\d+)?|(?i:inf|infinity|nan))\s*$"
