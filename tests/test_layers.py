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
PACKAGES = {"core": "stratus", "handlers": "stratus.handlers", "emulator": "stratus.emulator"}

LAYERS: tuple[tuple[str, ...], ...] = (
    # lowest first; a module may import its own layer's modules and any layer below, never above. A name stands for
    # that module, or for every module of that sub-package, except the EXACT names: a package's __init__ alone.
    (
        "stratus.errors",
        "stratus.frozen",
        "stratus.version",
        "stratus.types",
        "stratus.json_text",
        "stratus.resilience",
        "stratus.request",
        "stratus.metrics",
        "stratus.stores",
        "stratus.stores.base",
        "stratus.stores.records",
        "stratus.stores.task_records",
        "stratus.stores.urls",
        "stratus.stores.bounded",
        "stratus.setting_values",
        "stratus.mcp_http_variables",
        "stratus.net",
        "stratus.waterfall",
        "stratus.tracing",
        "stratus.otel_tracing",
        "stratus.otlp_http",
    ),
    (
        "stratus.server",
        "stratus.settings",
        "stratus.stores.memory",
        "stratus.stores.redis",
        "stratus.stores.dynamodb",
        "stratus.stores.lazy",
    ),
    # The authorization front's configuration and key sit with the resource server that verifies its tokens; its
    # endpoints are HTTP, beside the transport.
    (
        "stratus.auth",
        "stratus.stores.factory",
        "stratus.pipeline",
        "stratus.auth.front_config",
        "stratus.auth.front_key",
    ),
    ("stratus.protocol",),
    ("stratus.gateway",),
    ("stratus.composition",),
    ("stratus.transport", "stratus.observability"),
    ("stratus",),
    ("stratus.handlers",),
    ("stratus.emulator",),  # a development tool that runs the handlers as Lambda would
    ("stratus.handlers.cli",),  # the command line starts any of the above (`stratus local` is the emulator)
)
EXACT = {"stratus", "stratus.stores"}
"""`stratus` is the public API (core/__init__.py); `stratus.stores` only its package docstring."""


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


def _names(entry: str, module: str) -> bool:
    if module == entry:
        return True
    return entry not in EXACT and module.startswith(entry + ".")


def _layer(module: str) -> int:
    """The layer of the most specific entry naming `module`; -1 when none does."""
    best, depth = -1, -1
    for index, layer in enumerate(LAYERS):
        for entry in layer:
            if _names(entry, module) and entry.count(".") > depth:
                best, depth = index, entry.count(".")
    return best


def _graph(modules: dict[str, Path]) -> dict[str, set[str]]:
    return {name: set(_imports(path, modules)) - {name} for name, path in modules.items()}


def _without_layer(modules: dict[str, Path]) -> list[str]:
    return [module for module in modules if _layer(module) < 0]


def _upward(graph: dict[str, set[str]]) -> list[str]:
    return [
        f"{module} ({_layer(module)}) imports {target} ({_layer(target)})"
        for module, targets in sorted(graph.items())
        for target in sorted(targets)
        if _layer(target) > _layer(module) and not module.startswith(target + ".")
    ]


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
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
    return cycles


def test_every_module_has_a_layer() -> None:
    assert _without_layer(_modules()) == []


def test_no_module_imports_a_layer_above_its_own() -> None:
    assert _upward(_graph(_modules())) == []


def test_no_two_modules_import_each_other_however_indirectly() -> None:
    assert _cycles(_graph(_modules())) == []


BOUNDED = {
    "stratus.gateway": ("stratus.composition", "stratus.handlers.loading", "stratus.handlers.gateway_admin"),
    "stratus.emulator": ("stratus.handlers.cli",),
}
"""Add-ons that are products of their own: outside each, only the modules that choose it import it (the composition
root, `load_served` serving STRATUS_GATEWAY_CONFIG, `stratus gateway ...`; the command line's `stratus local`). What
an add-on shares with the rest (the address guard, the HTTP/1.1 client, body reading) is the leaf stratus.net."""


def _within(module: str, package: str) -> bool:
    return module == package or module.startswith(package + ".")


def _crossings(graph: dict[str, set[str]]) -> list[str]:
    return [
        f"{module} imports {target}"
        for module, targets in sorted(graph.items())
        for target in sorted(targets)
        for package, choosers in BOUNDED.items()
        if _within(target, package) and not _within(module, package) and module not in choosers
    ]


def test_the_gateway_and_the_emulator_are_imported_only_by_what_chooses_them() -> None:
    assert _crossings(_graph(_modules())) == []


@pytest.mark.parametrize(
    ("source", "line", "target"),
    [
        (
            "stratus.transport.oauth.clients",
            "from stratus.gateway.served import GatewayServer",
            "stratus.gateway.served",
        ),
        ("stratus.handlers.adapter", "import stratus.emulator.stack", "stratus.emulator.stack"),
    ],
)
def test_an_import_of_the_gateway_or_the_emulator_written_elsewhere_is_caught(
    source: str, line: str, target: str, tmp_path: Path
) -> None:
    modules = _modules()
    changed = tmp_path / "changed.py"
    changed.write_text(modules[source].read_text(encoding="utf-8") + f"\n{line}\n")
    assert _crossings(_graph({**modules, source: changed})) == [f"{source} imports {target}"]


def test_a_module_added_outside_every_layer_is_caught(tmp_path: Path) -> None:
    """A new top-level module of core/ belongs to no layer until LAYERS names it: the public API's entry covers
    core/__init__.py alone, not everything below it."""
    modules = {**_modules(), "stratus.newcomer": tmp_path / "newcomer.py"}
    assert _without_layer(modules) == ["stratus.newcomer"]


@pytest.mark.parametrize("source", ["stratus.stores.base", "stratus.errors", "stratus.protocol.dispatch"])
def test_a_back_import_written_into_a_module_is_caught(source: str, tmp_path: Path) -> None:
    """The same module with one import of the transport added: the check names exactly that import."""
    modules = _modules()
    changed = tmp_path / "changed.py"
    changed.write_text(modules[source].read_text(encoding="utf-8") + "\nfrom stratus.transport.app import build_app\n")
    graph = _graph({**modules, source: changed})
    assert _upward(graph) == [
        f"{source} ({_layer(source)}) imports stratus.transport.app ({_layer('stratus.transport.app')})"
    ]


def test_a_cycle_written_into_two_modules_is_caught(tmp_path: Path) -> None:
    modules = _modules()
    changed = tmp_path / "tool_calls.py"
    changed.write_text(
        modules["stratus.protocol.tool_calls"].read_text(encoding="utf-8") + "\nimport stratus.protocol.dispatch\n"
    )
    cycles = _cycles(_graph({**modules, "stratus.protocol.tool_calls": changed}))
    assert cycles == [["stratus.protocol.dispatch", "stratus.protocol.tool_calls", "stratus.protocol.dispatch"]]


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


PARTS = {
    "admitter",
    "dispatcher",
    "endpoint",
    "handshake",
    "lifecycle",
    "pipeline",
    "reads",
    "relays",
    "session_api",
    "session_streams",
    "stateless",
    "tasks",
    "tool_calls",
}
"""The names the parts a request passes through are held by (docs/architecture.md, "One tools/call")."""
HELD = PARTS | {"auth", "circuit", "retries", "running", "server", "stores"}
"""What a part holds that no other part may reach through it: its own parts, the server it serves, its stores."""
ROOTS = {"stratus.composition", "stratus.transport.app"}
"""The composition roots, which build every part from the others and so may read what each holds."""


def _reaching_through(path: Path) -> Iterator[str]:
    """Each `part.held` (or `self.part.held`) in `path`: another part's collaborator reached through it."""
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if not isinstance(node, ast.Attribute) or node.attr not in HELD:
            continue
        holder = node.value
        held_by = (
            holder.attr if isinstance(holder, ast.Attribute) else holder.id if isinstance(holder, ast.Name) else ""
        )
        if held_by in PARTS:
            yield f"{path.name}:{node.lineno} reaches {held_by}.{node.attr}"


def _reaches(modules: dict[str, Path]) -> list[str]:
    return [
        found for module, path in sorted(modules.items()) if module not in ROOTS for found in _reaching_through(path)
    ]


def test_no_part_reaches_through_another_to_what_it_holds() -> None:
    """docs/architecture.md promises that no part is reached through another: each gets what it uses from the
    composition root."""
    assert _reaches(_modules()) == []


def test_a_part_reached_through_another_is_caught(tmp_path: Path) -> None:
    modules = _modules()
    changed = tmp_path / "handshake.py"
    source = modules["stratus.transport.handshake"].read_text(encoding="utf-8")
    changed.write_text(source + "\n\ndef _tools(self):\n    return self.dispatcher.server.tools\n")
    found = _reaches({**modules, "stratus.transport.handshake": changed})
    assert [line.rpartition(" reaches ")[2] for line in found] == ["dispatcher.server"]


DURABLE_SDK = "aws_durable_execution_sdk_python"
DURABLE_SDK_USERS = {"stratus.handlers.durable_worker", "stratus.emulator.durable_service"}
"""Only the durable task worker's module imports the durable execution SDK (only its function ships it): a serving
function that imported it would pay for it on every cold start, or fail where it is not installed. Beside it,
`stratus local`'s durable execution service (the testing SDK's, built by the first durable start; no function imports
the emulator)."""


def _sdk_importers(modules: dict[str, Path]) -> list[str]:
    importing = []
    for name, path in sorted(modules.items()):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = [alias.name for alias in node.names] if isinstance(node, ast.Import) else []
            if isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module]
            if any(each == DURABLE_SDK or each.startswith(DURABLE_SDK + ".") for each in names):
                importing.append(name)
                break
    return importing


def test_only_the_durable_worker_imports_the_durable_execution_sdk(tmp_path: Path) -> None:
    modules = _modules()
    assert set(_sdk_importers(modules)) == DURABLE_SDK_USERS
    changed = tmp_path / "durable_launcher.py"
    changed.write_text(
        modules["stratus.handlers.task_worker"].read_text(encoding="utf-8")
        + "\n\ndef _late() -> None:\n    from aws_durable_execution_sdk_python import DurableContext\n"
    )
    assert "stratus.handlers.task_worker" in _sdk_importers({**modules, "stratus.handlers.task_worker": changed})
