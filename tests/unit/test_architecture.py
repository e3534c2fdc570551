"""The pure core imports nothing from the edges: no HTTP, no CLI, no disk cache, no YAML editor.

Two checks: what importing a module really loads (a fresh interpreter per module), and every
import statement in its source, including those inside functions (which a run would load later).
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest

import kmultiarch

PACKAGE = Path(kmultiarch.__file__).parent
PURE = ["reference", "platform", "manifest", "policy", "scheduling", "workloads"]
EDGES = (
    "httpx",
    "httpcore",
    "click",
    "diskcache",
    "ruamel",
    "kmultiarch.registry",
    "kmultiarch.cli",
    "kmultiarch.commands",
    "kmultiarch.cache",
    "kmultiarch.resolver",
    "kmultiarch.engine",
    "kmultiarch.inputs",
    "kmultiarch.yamlstream",
    "kmultiarch.yamledit",
)


def _is_edge(name: str) -> bool:
    return any(name == edge or name.startswith(f"{edge}.") for edge in EDGES)


def _loaded_by(module: str) -> list[str]:
    code = f"import json, sys, {module}; print(json.dumps(sorted(sys.modules)))"
    result = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        cwd=PACKAGE.parent,
        timeout=60,
    )
    loaded: list[str] = json.loads(result.stdout)
    return loaded


@pytest.mark.parametrize("module", PURE)
def test_importing_a_pure_module_loads_no_edge(module: str) -> None:
    loaded = _loaded_by(f"kmultiarch.{module}")
    assert f"kmultiarch.{module}" in loaded
    assert [name for name in loaded if _is_edge(name)] == []


def test_the_check_sees_an_edge_when_there_is_one() -> None:
    loaded = _loaded_by("kmultiarch.cli")
    assert "click" in loaded
    assert _is_edge("httpx") and _is_edge("kmultiarch.registry.auth")
    assert not _is_edge("kmultiarch.reference") and not _is_edge("httpxyz")


def _imported_names(source: str) -> list[str]:
    names: list[str] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names.extend(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:  # relative: resolve against the package
                names.append(f"kmultiarch.{node.module}" if node.module else "kmultiarch")
            elif node.module:
                names.append(node.module)
                names.extend(f"{node.module}.{alias.name}" for alias in node.names)
    return names


@pytest.mark.parametrize("module", PURE)
def test_no_import_statement_reaches_an_edge(module: str) -> None:
    source = (PACKAGE / f"{module}.py").read_text(encoding="utf-8")
    assert [name for name in _imported_names(source) if _is_edge(name)] == []


def test_the_source_check_sees_function_level_imports() -> None:
    source = "def f():\n    import diskcache\n    from kmultiarch import cli\n"
    assert [n for n in _imported_names(source) if _is_edge(n)] == ["diskcache", "kmultiarch.cli"]
