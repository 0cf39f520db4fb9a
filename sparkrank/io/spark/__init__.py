"""Spark on the reading side: the session, SVMlight text parsed on the executors, the column
names of a ranking DataFrame, the start of every Spark task (:mod:`.worker`) and the mapping of
Spark's failures to sparkrank's messages (:mod:`.errors`)."""
