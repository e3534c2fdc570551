"""The package's layers (docs/architecture.md), checked two ways.

import-linter's contracts in pyproject.toml are the rule (layers import only downward; the core
imports no third-party I/O library; only the CLI imports click); these tests run them, look for
import cycles, lazy imports included, and check what importing a core module really loads in a
fresh interpreter.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import grimp
import pytest

import kmultiarch

PACKAGE = Path(kmultiarch.__file__).parent
REPO = PACKAGE.parent
CORE = sorted(
    ".".join(path.relative_to(PACKAGE / "core").with_suffix("").parts)
    for path in (PACKAGE / "core").rglob("*.py")
    if path.stem != "__init__"
)
EDGES = (
    "httpx",
    "httpcore",
    "click",
    "diskcache",
    "ruamel",
    "yaml",
    "redis",
    "kmultiarch.registry",
    "kmultiarch.cli",
    "kmultiarch.resolve",
    "kmultiarch.engine",
    "kmultiarch.io",
    "kmultiarch.yaml",
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
        cwd=REPO,
        timeout=60,
    )
    loaded: list[str] = json.loads(result.stdout)
    return loaded


def test_the_core_has_the_modules_the_architecture_names() -> None:
    expected = {"images.reference", "images.platform", "images.oci", "policy.model", "lock"}
    expected |= {"resolution", "operators.workloads"}
    assert expected | {"placement.scheduling", "patch"} <= set(CORE)


@pytest.mark.parametrize("module", CORE)
def test_importing_a_core_module_loads_no_edge(module: str) -> None:
    loaded = _loaded_by(f"kmultiarch.core.{module}")
    assert f"kmultiarch.core.{module}" in loaded
    assert [name for name in loaded if _is_edge(name)] == []


def test_the_check_sees_an_edge_when_there_is_one() -> None:
    loaded = _loaded_by("kmultiarch.cli.app")
    assert "click" in loaded
    assert _is_edge("httpx") and _is_edge("kmultiarch.registry.credentials")
    assert not _is_edge("kmultiarch.core.images.reference") and not _is_edge("httpxyz")


def test_importing_the_package_loads_nothing_else() -> None:
    loaded = _loaded_by("kmultiarch")
    assert [name for name in loaded if name.startswith("kmultiarch")] == [
        "kmultiarch",
        "kmultiarch.version",
    ]


def test_import_linter_contracts_hold() -> None:
    lint_imports = shutil.which("lint-imports") or str(Path(sys.executable).parent / "lint-imports")
    result = subprocess.run(
        [lint_imports, "--no-cache"], capture_output=True, text=True, cwd=REPO, timeout=120
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "0 broken" in result.stdout


def _cycles(graph: grimp.ImportGraph) -> list[list[str]]:
    found: list[list[str]] = []
    for module in sorted(graph.modules):
        for imported in sorted(graph.find_modules_directly_imported_by(module)):
            chain = graph.find_shortest_chain(importer=imported, imported=module)
            if chain:
                found.append([module, *chain])
    return found


def test_there_is_no_import_cycle_lazy_imports_included() -> None:
    graph = grimp.build_graph("kmultiarch", cache_dir=None)
    assert _cycles(graph) == []


def test_the_cycle_check_sees_a_cycle(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    package = tmp_path / "cyclic"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "a.py").write_text("def f():\n    from cyclic import b\n")
    (package / "b.py").write_text("from cyclic import a\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    graph = grimp.build_graph("cyclic", cache_dir=None)
    assert _cycles(graph) != []


def test_the_public_api() -> None:
    assert kmultiarch.ImageRef.parse("nginx").name == "docker.io/library/nginx"
    assert str(kmultiarch.Platform.parse("linux/arm64")) == "linux/arm64"
    assert set(kmultiarch.__all__) >= {"ImageRef", "Platform", "Policy", "mutate_text"}
    with pytest.raises(AttributeError):
        _ = kmultiarch.no_such_name  # type: ignore[attr-defined]


def test_mutate_text_runs_the_engine_with_the_given_resolver() -> None:
    from kmultiarch.core.resolution import Resolution

    text = (
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: web\n"
        "spec:\n  containers:\n  - name: web\n    image: example.com/web:1\n"
    )
    amd64 = frozenset({kmultiarch.Platform.parse("linux/amd64")})

    def resolve(references: list[kmultiarch.ImageRef]) -> dict[kmultiarch.ImageRef, Resolution]:
        return {
            reference: Resolution(reference, amd64, "sha256:" + "0" * 64)
            for reference in references
        }

    result = kmultiarch.mutate_text(text, resolve=resolve)
    assert "kubernetes.io/arch" in result.stream()
    assert result.findings == []
    assert kmultiarch.mutate_text(result.stream(), resolve=resolve).stream() == result.stream()
