"""Errors of the Spark side that the command line reports as one clean message (exit 2)."""


class ClusterError(RuntimeError):
    """The cluster cannot run sparkrank's tasks (wrong interpreter, executors keep dying)."""
