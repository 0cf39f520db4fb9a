"""Spark settings given on the command line: ``--conf KEY=VALUE`` (repeatable) and ``--packages``.

They reach the embedded session as it starts (:func:`~sparkrank.io.spark.session.get_session`),
as spark-submit's flags of the same names would: ``--packages`` is ``spark.jars.packages`` (Maven
coordinates, fetched by Spark's launcher), and settings that only a starting JVM reads
(``spark.driver.memory``, ``spark.jars*``, ``spark.driver.extraJavaOptions``) work because the
command starts that JVM.  Under spark-submit the JVM exists already: give those to spark-submit.
"""

from __future__ import annotations

import argparse


def spark_setting(text: str) -> tuple[str, str]:
    """``KEY=VALUE`` of ``--conf`` (argparse type): the key must look like a Spark setting."""
    key, sep, value = text.partition("=")
    key = key.strip()
    if not sep or not key:
        raise argparse.ArgumentTypeError(f"{text!r} is not KEY=VALUE (e.g. spark.executor.memory=4g)")
    if not key.startswith("spark."):
        raise argparse.ArgumentTypeError(f"{key!r} is not a Spark setting (they start with 'spark.'; Hadoop's are "
                                         "spark.hadoop.KEY)")
    return key, value


def spark_conf(settings: list[tuple[str, str]] | None, packages: str | None,
               driver_memory: str | None) -> dict[str, str]:
    """The session settings of ``--conf``, ``--packages`` and ``--driver-memory``; a setting given
    twice with different values is refused (``ValueError``), never silently one of them."""
    conf: dict[str, str] = {}
    given = list(settings or ())
    if driver_memory:
        given.append(("spark.driver.memory", driver_memory))
    for key, value in given:
        if key in conf and conf[key] != value:
            raise ValueError(f"{key} is given twice: {conf[key]!r} and {value!r}")
        conf[key] = value
    if packages:
        listed = [p for p in conf.get("spark.jars.packages", "").split(",") if p]
        conf["spark.jars.packages"] = ",".join(listed + [p for p in packages.split(",") if p and p not in listed])
    return conf
