"""The import graph of sparkrank: no cycles, and no arrow pointing up the declared layers.

Every module's imports are read with :mod:`ast` (nothing is imported), including imports
inside functions, so a lazy import cannot hide a cycle or an upward dependency.  The layers
are those of ARCHITECTURE.md; a module belongs to the layer of its longest matching prefix
below, and a new module that matches none fails the test until it is placed.
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "sparkrank"

#: Bottom to top.  A module may import its own layer and the layers below, never above.
LAYERS: list[tuple[str, tuple[str, ...]]] = [
    ("numerics", ("sparkrank.numerics", "sparkrank.conventions", "sparkrank.choices")),
    ("data blocks", ("sparkrank.data.groups", "sparkrank.data.block", "sparkrank.data.folds")),
    ("kernels", ("sparkrank.kernels",)),
    ("sources", ("sparkrank.data", "sparkrank.io", "sparkrank.datasets", "sparkrank.spark.svmlight",
                 "sparkrank.spark.io", "sparkrank.spark.errors", "sparkrank.spark.session",
                 "sparkrank.spark.worker", "sparkrank.spark.shutdown", "sparkrank.spark.failures")),
    ("engines", ("sparkrank.engines", "sparkrank.spark.blocks", "sparkrank.spark.locate",
                 "sparkrank.spark.progress", "sparkrank.spark")),
    ("objectives", ("sparkrank.objectives",)),
    ("solvers", ("sparkrank.solvers",)),
    ("model", ("sparkrank.model", "sparkrank.standardization", "sparkrank.checkpoints", "sparkrank.spark.predict")),
    ("training", ("sparkrank.training",)),
    ("evaluation", ("sparkrank.evaluation", "sparkrank.spark.evaluate")),
    ("selection", ("sparkrank.selection", "sparkrank.tune_checkpoints")),
    ("entry points", ("sparkrank", "sparkrank.__main__", "sparkrank.cli", "sparkrank.ml", "sparkrank.report")),
]


def _modules() -> dict[str, tuple[Path, bool]]:
    """Module name -> (file, is a package ``__init__``)."""
    out = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        is_package = parts[-1] == "__init__"
        out[".".join(parts[:-1] if is_package else parts)] = (path, is_package)
    return out


def import_edges(with_names: bool = False) -> list[tuple]:
    """``(importer, imported, "file:line")`` for every sparkrank-internal import (and the
    imported names, ``()`` for ``import x``, with ``with_names``)."""
    modules = _modules()
    edges = []
    for name, (path, is_package) in modules.items():
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            targets: list[str] = []
            names: tuple[str, ...] = ()
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                names = tuple(a.name for a in node.names)
                if node.level:
                    base = name.split(".") if is_package else name.split(".")[:-1]
                    base = base[: len(base) - (node.level - 1)]
                    module = ".".join(base + ([node.module] if node.module else []))
                else:
                    module = node.module or ""
                # "from pkg import sub" imports the submodule sub
                targets = [f"{module}.{a.name}" if f"{module}.{a.name}" in modules else module for a in node.names]
            for target in targets:
                while target not in modules and "." in target:  # "import a.b.c" of a package member
                    target = target.rsplit(".", 1)[0]
                if target in modules and target != name and target.split(".")[0] == "sparkrank":
                    edge = (name, target, f"{path.relative_to(PACKAGE.parent)}:{node.lineno}")
                    edges.append(edge + (names,) if with_names else edge)
    return edges


def layer_of(module: str) -> int | None:
    best, best_len = None, -1
    for index, (_, prefixes) in enumerate(LAYERS):
        for prefix in prefixes:
            if (module == prefix or module.startswith(prefix + ".")) and len(prefix) > best_len:
                best, best_len = index, len(prefix)
    return best


def test_every_module_has_a_layer():
    missing = sorted(m for m in _modules() if layer_of(m) is None)
    assert not missing, f"modules in no layer of tests/test_architecture.py LAYERS: {missing}"


def test_no_upward_import():
    upward = []
    for a, b, where in import_edges():
        la, lb = layer_of(a), layer_of(b)
        if la is not None and lb is not None and lb > la:
            upward.append(f"{where}: {a} ({LAYERS[la][0]}) imports {b} ({LAYERS[lb][0]})")
    assert not upward, "imports pointing up the layers:\n" + "\n".join(sorted(set(upward)))


def test_no_import_cycle():
    graph: dict[str, dict[str, str]] = {}
    for a, b, where in import_edges():
        graph.setdefault(a, {}).setdefault(b, where)
    # depth-first search; a back edge closes a cycle, reported edge by edge
    state: dict[str, int] = {}
    stack: list[str] = []
    cycles: list[str] = []

    def visit(node: str) -> None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph.get(node, {})):
            if state.get(nxt) == 1:
                loop = stack[stack.index(nxt):] + [nxt]
                cycles.append(" -> ".join(f"{x} ({graph[x][y]})" for x, y in zip(loop, loop[1:])) + f" -> {nxt}")
            elif nxt not in state:
                visit(nxt)
        stack.pop()
        state[node] = 2

    for node in sorted(graph):
        if node not in state:
            visit(node)
    assert not cycles, "import cycles:\n" + "\n".join(cycles)


def test_no_private_name_crosses_a_module():
    """A ``_name`` is its module's own; what another module needs is made public where it belongs."""
    private = sorted({f"{where}: {a} imports {n} from {b}" for a, b, where, names in import_edges(with_names=True)
                      for n in names if n.startswith("_") and not n.startswith("__")})
    assert not private, "private names imported across modules:\n" + "\n".join(private)


def test_the_checks_catch_an_upward_import_and_a_cycle(tmp_path, monkeypatch):
    """The checker itself: a toy package with a cycle and an upward import is flagged."""
    pkg = tmp_path / "sparkrank"
    (pkg / "kernels").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "kernels" / "__init__.py").write_text("")
    (pkg / "kernels" / "a.py").write_text("from ..training import x\n")
    (pkg / "training.py").write_text("def f():\n    from .kernels import a\n")
    monkeypatch.setattr(__import__(__name__), "PACKAGE", pkg)
    edges = {(a, b) for a, b, _ in import_edges()}
    assert ("sparkrank.kernels.a", "sparkrank.training") in edges and ("sparkrank.training", "sparkrank.kernels.a") in edges
    for check in (test_no_upward_import, test_no_import_cycle):
        try:
            check()
        except AssertionError as exc:
            assert "sparkrank.kernels.a" in str(exc) and "sparkrank.training" in str(exc)
        else:
            raise AssertionError(f"{check.__name__} missed the toy package's bad import")
