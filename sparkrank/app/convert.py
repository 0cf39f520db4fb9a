"""The convert use case: any input format to the format the output's name says
(:func:`~sparkrank.io.formats.registry.output_format`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from ..engines.backend import Backend, ConvertOutput
from ..io.formats.registry import output_format
from .settings import InputSettings, open_input


@dataclass(frozen=True)
class ConvertSettings:
    """``convert``'s output: its path (whose name picks the format), the width to write
    (in-process), Hive partition columns (Spark) and the write mode of a directory."""

    output: str
    n_features: int | None = None
    partition_by: Sequence[str] = ()
    mode: str = "error"


def convert(backend: Backend, inputs: InputSettings, settings: ConvertSettings) -> str:
    """``sparkrank convert``: the output checked first, then ``inputs`` written in the output's
    format by the backend; the line to print."""
    out = ConvertOutput(settings.output, output_format(settings.output), inputs=tuple(inputs.uris),
                        n_features=settings.n_features, partition_by=tuple(settings.partition_by), mode=settings.mode)
    backend.check_convert_output(out)
    return backend.convert(open_input(backend, inputs), out)
