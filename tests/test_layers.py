"""The import graph holds docs/architecture.md's layers: data flows down, seams sit in leaves, nothing cycles.

Every import counts, at module level, under `TYPE_CHECKING` and inside functions alike: a lazy import keeps a module
off the cold path, not out of the design.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).parent.parent
# folder -> import name (pyproject.toml's package-dir)
PACKAGES = {"core": "stratus", "handlers": "stratus.handlers"}

LAYERS: tuple[tuple[str, ...], ...] = (
    # lowest first; a module may import its own layer's modules and any layer below, never above
    (
        "stratus.errors",
        "stratus.version",
        "stratus.json_text",
        "stratus.resilience",
        "stratus.request",
        "stratus.metrics",
        "stratus.stores.base",
        "stratus.stores.records",
        "stratus.stores.urls",
        "stratus.stores.bounded",
    ),
    (
        "stratus.server",
        "stratus.config",
        "stratus.stores.memory",
        "stratus.stores.redis",
        "stratus.stores.dynamodb",
        "stratus.stores.lazy",
    ),
    ("stratus.auth", "stratus.stores.factory", "stratus.pipeline"),
    ("stratus.protocol",),
    ("stratus.gateway",),
    ("stratus.composition",),
    ("stratus.transport", "stratus.observability"),
    ("stratus",),
    ("stratus.handlers",),
)


def _module_name(folder: str, path: Path) -> str:
    parts = path.relative_to(ROOT / folder).with_suffix("").parts
    return ".".join((PACKAGES[folder], *(parts[:-1] if parts[-1] == "__init__" else parts)))


def _modules() -> dict[str, Path]:
    return {_module_name(folder, path): path for folder in PACKAGES for path in (ROOT / folder).rglob("*.py")}


def _imports(path: Path, known: dict[str, Path]) -> Iterator[str]:
    """Every module of ours `path` imports, wherever the import statement stands."""
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            targets = [node.module, *(f"{node.module}.{alias.name}" for alias in node.names)]
        else:
            continue
        yield from (target for target in targets if target in known)


def _layer(module: str) -> int:
    """The layer of the most specific prefix naming `module`."""
    best, depth = -1, -1
    for index, layer in enumerate(LAYERS):
        for prefix in layer:
            if (module == prefix or module.startswith(prefix + ".")) and prefix.count(".") > depth:
                best, depth = index, prefix.count(".")
    return best


def _graph() -> dict[str, set[str]]:
    modules = _modules()
    return {name: set(_imports(path, modules)) - {name} for name, path in modules.items()}


def test_every_module_has_a_layer() -> None:
    assert [module for module in _modules() if _layer(module) < 0] == []


def test_no_module_imports_a_layer_above_its_own() -> None:
    upward = [
        f"{module} ({_layer(module)}) imports {target} ({_layer(target)})"
        for module, targets in sorted(_graph().items())
        for target in sorted(targets)
        if _layer(target) > _layer(module) and not module.startswith(target + ".")
    ]
    assert upward == []


def test_no_two_modules_import_each_other_however_indirectly() -> None:
    graph = _graph()
    cycles: list[list[str]] = []
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(module: str) -> None:
        state[module] = 1
        stack.append(module)
        for target in sorted(graph[module]):
            if state.get(target) == 1:
                cycles.append([*stack[stack.index(target) :], target])
            elif target not in state:
                visit(target)
        stack.pop()
        state[module] = 2

    for module in sorted(graph):
        if module not in state:
            visit(module)
    assert cycles == []


@pytest.mark.parametrize("source", ["stratus.stores.base", "stratus.errors"])
def test_the_check_sees_an_import_added_against_the_layers(source: str, tmp_path: Path) -> None:
    """A back-import written into a leaf is caught: the test can fail."""
    modules = _modules()
    leaf = tmp_path / "leaf.py"
    leaf.write_text(modules[source].read_text(encoding="utf-8") + "\nfrom stratus.transport.app import build_app\n")
    added = set(_imports(leaf, modules))
    assert any(_layer(target) > _layer(source) for target in added)


def _test_modules() -> dict[str, Path]:
    tests = ROOT / "tests"
    return {
        ".".join(("tests", *path.relative_to(tests).with_suffix("").parts)): path
        for path in tests.rglob("*.py")
        if path.name.startswith("test_")
    }


def test_no_test_file_imports_a_test_module() -> None:
    """Helpers shared between tests live in tests/fixtures: a fixture (or another test) that imports a test module
    runs that module's imports and collection-time code wherever it is used, and ties the two together."""
    test_modules = _test_modules()
    importing = [
        f"{path.relative_to(ROOT)} imports {target}"
        for path in sorted((ROOT / "tests").rglob("*.py"))
        for target in sorted(set(_imports(path, test_modules)))
    ]
    assert importing == []
