"""The package's import structure holds: no import circles between files, no function-level imports
of the package's own modules, and every import goes down the layer order (read from the sources with
``ast``; nothing is imported).

The layers, lowest first (DESIGN §3, with two placements made explicit):

1. ``_math``, ``_types``, ``_linalg``, ``_batching``, ``_autodiff``, ``_precision``, ``_compiling``,
   ``_version`` — arrays, enums, spatial algebra, helpers of the derivative rules, of matrix
   precision and of compile reports;
2. ``geometry`` — shapes and support functions;
3. ``contact`` — contact problems, solvers and their derivative rules, independent of any scene
   (they need no collision code: a ``ContactProblem`` is a Delassus matrix and a free velocity);
4. ``_model`` — ``Model``, ``State``, ``Options`` (whose solver is a ``contact`` solver object);
5. ``collision`` — distance queries (GJK/EPA, smoothing) and "what touches" in a model: pair
   registry, broad phase, closed-form pairs, manifolds, the narrow phase;
6. ``constraints`` — one row producer per constraint kind and the assembler / contact stage;
7. ``dynamics`` — kinematics, mass matrix, bias forces, integration, ``step`` / ``rollout``;
8. ``io`` — MJCF / URDF loading, scene editing, checkpoints;
9. ``envs``, ``viz``, ``scenes``, ``testing`` — applications of the engine and its shipped fixtures;
10. ``cli``, the deprecated ``pipeline`` alias and the package's ``__init__`` — the public surface.

A module may import its own layer and the layers below it. Importing ``a.b.c`` also runs the
``__init__`` of packages ``a.b`` that the importer is not inside, so those count as imported too.
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = "jaxsim_contact"
ROOT = Path(__file__).resolve().parent.parent / PACKAGE

LAYERS: tuple[tuple[str, ...], ...] = (
    ("_math", "_types", "_linalg", "_batching", "_autodiff", "_precision", "_compiling", "_version"),
    ("geometry",),
    ("contact",),
    ("_model",),
    ("collision",),
    ("constraints",),
    ("dynamics",),
    ("io",),
    ("envs", "viz", "scenes", "testing"),
    ("cli", "pipeline", ""),
)


def modules() -> dict[str, Path]:
    """Dotted module name (``""`` for the package itself, ``"a.b"`` for ``a/b.py`` or ``a/b/__init__.py``)
    -> file."""
    out = {}
    for path in ROOT.rglob("*.py"):
        parts = list(path.relative_to(ROOT).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = path
    return out


def _targets(module: str, is_package: bool, node: ast.AST, known) -> list[str]:
    """The package's own modules that an import statement runs (relative names resolved)."""
    names: list[str] = []
    if isinstance(node, ast.ImportFrom):
        if node.level:
            base = module.split(".") if module else []
            if not is_package:
                base = base[:-1]
            base = base[: len(base) - (node.level - 1)]
            absolute = ".".join(base + ([node.module] if node.module else []))
        elif node.module == PACKAGE or (node.module or "").startswith(PACKAGE + "."):
            absolute = node.module[len(PACKAGE) + 1:]
        else:
            return []
        for alias in node.names:
            candidate = f"{absolute}.{alias.name}" if absolute else alias.name
            names.append(candidate if candidate in known else absolute)
    else:
        for alias in node.names:
            if alias.name == PACKAGE or alias.name.startswith(PACKAGE + "."):
                names.append(alias.name[len(PACKAGE) + 1:])
    out = []
    for name in names:
        while name not in known and "." in name:
            name = name.rsplit(".", 1)[0]
        if name not in known:
            name = ""
        out.append(name)
        # the __init__ of every enclosing package the importer is not itself inside
        parts = name.split(".") if name else []
        for k in range(1, len(parts)):
            parent = ".".join(parts[:k])
            if not (module + ".").startswith(parent + "."):
                out.append(parent)
    return out


def import_graph():
    """``(edges, nested)``: module-level imports ``{module: {imported, ...}}`` and the
    function-level ones as ``[(module, imported, line)]``."""
    known = modules()
    edges: dict[str, set[str]] = {m: set() for m in known}
    nested: list[tuple[str, str, int]] = []
    for module, path in known.items():
        tree = ast.parse(path.read_text(), filename=str(path))
        is_package = path.name == "__init__.py"

        def visit(node, inside_function: bool):
            for child in ast.iter_child_nodes(node):
                if isinstance(child, (ast.Import, ast.ImportFrom)):
                    for target in _targets(module, is_package, child, known):
                        if target == module:
                            continue
                        if inside_function:
                            nested.append((module, target, child.lineno))
                        else:
                            edges[module].add(target)
                visit(child, inside_function or isinstance(
                    child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)))

        visit(tree, False)
    return edges, nested


def layer_of(module: str) -> int:
    """Index in :data:`LAYERS` of the longest listed prefix of ``module``."""
    best, best_length = None, -1
    for index, prefixes in enumerate(LAYERS):
        for prefix in prefixes:
            matches = module == prefix or (prefix and module.startswith(prefix + "."))
            if matches and len(prefix) > best_length:
                best, best_length = index, len(prefix)
    if best is None:
        raise AssertionError(f"{PACKAGE}.{module} is in no layer of tests/test_layers.py: add it")
    return best


def cycles(edges) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = [0]

    def connect(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        for w in sorted(edges.get(v, ())):
            if w not in index:
                connect(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(edges):
        if v not in index:
            connect(v)
    return found


def _name(module: str) -> str:
    return f"{PACKAGE}.{module}" if module else PACKAGE


def test_no_import_circle_between_files():
    edges, _ = import_graph()
    found = cycles(edges)
    assert not found, "import circles: " + "; ".join(
        " <-> ".join(_name(m) for m in component) for component in found)


def test_no_function_level_import_of_the_package():
    _, nested = import_graph()
    assert not nested, "function-level imports of the package's own modules: " + "; ".join(
        f"{_name(m)}:{line} imports {_name(t)}" for m, t, line in nested)


def test_imports_go_down_the_layers():
    edges, nested = import_graph()
    upward = []
    for module, targets in sorted(edges.items()):
        for target in sorted(targets):
            if layer_of(target) > layer_of(module):
                upward.append(f"{_name(module)} (layer {layer_of(module) + 1}) imports "
                              f"{_name(target)} (layer {layer_of(target) + 1})")
    assert not upward, "imports against the layer order:\n" + "\n".join(upward)


def test_the_checks_see_a_circle_an_upward_and_a_nested_import():
    """The graph reader itself: a circle, an upward import and a function-level import in a
    synthetic graph are found (so a passing suite is not an empty check)."""
    assert cycles({"a": {"b"}, "b": {"a"}, "c": set()}) == [["a", "b"]]
    assert layer_of("_math") < layer_of("contact._admm") < layer_of("collision._gjk") < layer_of("cli")
    tree = ast.parse("def f():\n    from ..model import Model\n")
    node = tree.body[0].body[0]
    assert _targets("contact.solve", False, node, {"model": None, "contact.solve": None}) == ["model"]
