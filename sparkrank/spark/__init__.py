"""The Spark side: session, distributed blocks and the :class:`SparkEngine`."""
