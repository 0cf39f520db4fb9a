"""The import graph of sparkrank: no cycles, and no arrow pointing up the declared layers, for
modules and for folders; and only the engine registry asks which engine runs.

Every module's imports are read with :mod:`ast` (nothing is imported), including imports
inside functions, so a lazy import cannot hide a cycle or an upward dependency.  The layers
are those of ARCHITECTURE.md; a module belongs to the layer of its longest matching prefix
below, and a new module that matches none fails the test until it is placed.  A folder (a
package directory under ``sparkrank/``, its subfolders included) lies in one layer, so no
folder imports a folder above it, and folders and the top-level modules import each other in
one direction only.
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "sparkrank"

#: Bottom to top.  A module may import its own layer and the layers below, never above.
LAYERS: list[tuple[str, tuple[str, ...]]] = [
    ("numerics", ("sparkrank.numerics", "sparkrank.conventions", "sparkrank.choices", "sparkrank.defaults",
                  "sparkrank.numba_cache")),
    ("data", ("sparkrank.data", "sparkrank.datasets")),
    ("kernels", ("sparkrank.kernels",)),
    ("metrics", ("sparkrank.evaluation",)),
    ("sources", ("sparkrank.io",)),
    ("engines", ("sparkrank.engines",)),
    ("objectives", ("sparkrank.objectives",)),
    ("solvers", ("sparkrank.solvers",)),
    ("model", ("sparkrank.model", "sparkrank.standardization", "sparkrank.checkpoints")),
    ("training", ("sparkrank.training",)),
    ("selection", ("sparkrank.selection", "sparkrank.tune_checkpoints")),
    ("application", ("sparkrank.app", "sparkrank.report")),
    ("entry points", ("sparkrank", "sparkrank.__main__", "sparkrank.cli", "sparkrank.ml")),
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


def _cycles(graph: dict[str, dict[str, str]]) -> list[str]:
    """Every cycle a depth-first search of ``graph`` (node -> {next: "file:line"}) closes, edge by edge."""
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
    return cycles


def test_no_import_cycle():
    graph: dict[str, dict[str, str]] = {}
    for a, b, where in import_edges():
        graph.setdefault(a, {}).setdefault(b, where)
    cycles = _cycles(graph)
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


# -- folders ------------------------------------------------------------------------------------------
def _folders() -> dict[str, str]:
    """Module -> its top-level folder (``sparkrank/io/spark/x.py`` -> ``io``), or the module
    itself for a module at the top (``sparkrank/model.py``, ``sparkrank/__init__.py``)."""
    out = {}
    for module, (path, _) in _modules().items():
        parts = path.relative_to(PACKAGE).parts
        out[module] = parts[0] if len(parts) > 1 else module
    return out


def test_every_folder_lies_in_one_layer():
    folder = _folders()
    layers: dict[str, set[str]] = {}
    for module in folder:
        if layer_of(module) is not None:
            layers.setdefault(folder[module], set()).add(LAYERS[layer_of(module)][0])
    split = {folder: sorted(names) for folder, names in layers.items() if len(names) > 1}
    assert not split, f"folders whose modules sit in several layers: {split}"


def test_no_folder_imports_a_folder_above_it_or_back():
    folder = _folders()
    layer = {}
    for module in folder:
        if layer_of(module) is not None:
            layer[folder[module]] = max(layer.get(folder[module], -1), layer_of(module))
    graph: dict[str, dict[str, str]] = {}
    for a, b, where in import_edges():
        if folder[a] != folder[b]:
            graph.setdefault(folder[a], {}).setdefault(folder[b], where)
    upward = sorted(f"{where}: {fa} ({LAYERS[layer[fa]][0]}) imports {fb} ({LAYERS[layer[fb]][0]})"
                    for fa, targets in graph.items() for fb, where in targets.items()
                    if fa in layer and fb in layer and layer[fb] > layer[fa])
    assert not upward, "folders importing folders above them:\n" + "\n".join(upward)
    cycles = _cycles(graph)
    assert not cycles, "folders (and top-level modules) importing each other in a cycle:\n" + "\n".join(cycles)


# -- only the registry asks which engine runs --------------------------------------------------------
#: The registry: the one module that may ask which engine runs.
REGISTRY = "sparkrank.engines.registry"
#: A backend's hook that says whether an object is its own (asked by the registry only).
ADOPT = "adopt"
#: Names of engines, and of the classes that stand for one engine's rows, engine or backend.
ENGINE_NAMES = {"local", "spark"}
ENGINE_TYPES = {"Engine", "LocalEngine", "SparkEngine", "FoldView", "PaddedEngine", "ScaledEngine", "Backend",
                "InProcessBackend", "LocalBackend", "SparkBackend", "Rows", "EngineRows", "InProcessRows",
                "SparkRows", "SparkSource", "FrameSource", "DataFrame"}


def _type_names(node) -> set[str]:
    """The class names an ``isinstance`` second argument names."""
    items = node.elts if isinstance(node, ast.Tuple) else [node]
    return {item.id if isinstance(item, ast.Name) else item.attr for item in items
            if isinstance(item, (ast.Name, ast.Attribute))}


def engine_branches(tree: ast.AST) -> list[tuple[int, str]]:
    """``(line, what)`` of every test of which engine runs in a module's syntax tree: a comparison
    with an engine's name, an ``isinstance`` of an engine's class, a comparison of a type's name;
    a backend's ``adopt`` hook excepted."""
    exempt = {id(n) for f in ast.walk(tree) if isinstance(f, ast.FunctionDef) and f.name == ADOPT
              for n in ast.walk(f)}
    found = []
    for node in ast.walk(tree):
        if id(node) in exempt:
            continue
        if isinstance(node, ast.Compare):
            operands = [node.left, *node.comparators]
            named = [o.value for o in operands if isinstance(o, ast.Constant) and o.value in ENGINE_NAMES]
            inside = [e.value for o in operands if isinstance(o, (ast.Tuple, ast.List, ast.Set)) for e in o.elts
                      if isinstance(e, ast.Constant) and e.value in ENGINE_NAMES]
            if named or inside:
                found.append((node.lineno, f"compares with the engine name {(named or inside)[0]!r}"))
            if any(isinstance(o, ast.Attribute) and o.attr == "__name__" for o in operands) and any(
                    isinstance(o, ast.Constant) and o.value in ENGINE_TYPES for o in operands):
                found.append((node.lineno, "compares a type's name with an engine's class"))
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in (
                "isinstance", "issubclass") and len(node.args) == 2:
            names = _type_names(node.args[1]) & ENGINE_TYPES
            if names:
                found.append((node.lineno, f"{node.func.id}(..., {sorted(names)[0]})"))
    return found


def test_no_module_outside_the_registry_branches_on_the_engine():
    found = []
    for module, (path, _) in _modules().items():
        if module != REGISTRY:
            found += [f"{path.relative_to(PACKAGE.parent)}:{line}: {what}"
                      for line, what in engine_branches(ast.parse(path.read_text(), str(path)))]
    assert not found, "tests of which engine runs outside sparkrank/engines/registry.py:\n" + "\n".join(found)


def test_the_engine_branch_check_finds_each_kind():
    tree = ast.parse("def f(kind, x):\n    if kind == 'spark':\n        pass\n    if isinstance(x, (int, SparkEngine)):\n"
                     "        pass\n    return type(x).__name__ == 'DataFrame' or kind in ('local', 'x')\n"
                     "class B:\n    def adopt(self, x):\n        return isinstance(x, SparkSource)\n")
    assert [line for line, _ in engine_branches(tree)] == [2, 4, 6, 6]


# -- sizes -------------------------------------------------------------------------------------------
#: The most lines a module of the package may have, and a function's code (its docstring aside).
MAX_MODULE_LINES = 500
MAX_FUNCTION_LINES = 80


def function_sizes(tree: ast.AST) -> list[tuple[int, str, int]]:
    """``(line, name, lines)`` of every function (methods and nested ones too): the lines from its
    first statement after the docstring to its end."""
    out = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            body = node.body
            documented = (len(body) > 1 and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant)
                          and isinstance(body[0].value.value, str))
            start = body[1 if documented else 0].lineno
            out.append((node.lineno, node.name, node.end_lineno - start + 1))
    return out


def size_offenders() -> list[str]:
    """``file:line`` of every module over :data:`MAX_MODULE_LINES` lines and every function whose
    code is over :data:`MAX_FUNCTION_LINES` lines."""
    found = []
    for module, (path, _) in _modules().items():
        text = path.read_text()
        where = path.relative_to(PACKAGE.parent)
        n_lines = len(text.splitlines())
        if n_lines > MAX_MODULE_LINES:
            found.append(f"{where}:1: module of {n_lines} lines (at most {MAX_MODULE_LINES})")
        found += [f"{where}:{line}: function {name} of {n} lines (at most {MAX_FUNCTION_LINES})"
                  for line, name, n in function_sizes(ast.parse(text, str(path))) if n > MAX_FUNCTION_LINES]
    return sorted(found)


def test_no_module_over_500_lines_and_no_function_over_80():
    found = size_offenders()
    assert not found, "too large (split by what the parts do):\n" + "\n".join(found)


def test_the_size_check_finds_a_long_function_and_module(tmp_path, monkeypatch):
    pkg = tmp_path / "sparkrank"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    body = "".join(f"    x{i} = {i}\n" for i in range(MAX_FUNCTION_LINES + 1))
    (pkg / "long.py").write_text(f'def f():\n    """Doc."""\n{body}\n\ndef g():\n    """Doc\n\n    more.\n    """\n'
                                 + "    pass\n" + "\n" * MAX_MODULE_LINES)
    monkeypatch.setattr(__import__(__name__), "PACKAGE", pkg)
    assert size_offenders() == [f"sparkrank/long.py:1: function f of {MAX_FUNCTION_LINES + 1} lines (at most "
                                f"{MAX_FUNCTION_LINES})",
                                f"sparkrank/long.py:1: module of {len((pkg / 'long.py').read_text().splitlines())} "
                                f"lines (at most {MAX_MODULE_LINES})"]
