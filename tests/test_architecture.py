"""Import directions and where SQL lives, checked on the source tree."""

from __future__ import annotations

import ast
import re
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "rheo_cli"
ENGINE = PACKAGE / "memory"


def imports_of(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            prefix = "." * node.level + (node.module or "")
            found.add(prefix)
    return found


def test_engine_imports_only_the_standard_library_and_itself():
    allowed_third_party: set[str] = set()
    for path in ENGINE.rglob("*.py"):
        for name in imports_of(path):
            if name.startswith(".."):
                raise AssertionError(f"{path.name} imports {name} outside the engine")
            if name.startswith("."):
                continue
            top = name.split(".")[0]
            assert top not in {
                "rheo_cli",
                "typer",
                "rich",
                "prompt_toolkit",
                "anthropic",
                "platformdirs",
                "httpx",
                "httpx2",
            }, f"{path.name}: {name}"
            assert top in _stdlib() or top in allowed_third_party, f"{path.name}: {name}"


def _stdlib() -> set[str]:
    import sys

    return set(sys.stdlib_module_names) | {"__future__"}


SQL = re.compile(
    r"\b(SELECT\s.+\sFROM|INSERT\s+INTO|UPDATE\s+\w+\s+SET|DELETE\s+FROM|CREATE\s+"
    r"(TABLE|INDEX|TRIGGER))\b",
    re.I,
)


def test_all_sql_lives_in_the_engine():
    for path in PACKAGE.rglob("*.py"):
        if ENGINE in path.parents:
            continue
        for n, line in enumerate(path.read_text().splitlines(), 1):
            assert not SQL.search(line), f"{path.relative_to(PACKAGE)}:{n}: {line.strip()}"


def test_providers_do_not_import_the_cli_or_engine():
    for path in (PACKAGE / "providers").rglob("*.py"):
        for name in imports_of(path):
            assert not name.startswith(("..cli", "..repl", "..memory", "rheo_cli")), (
                f"{path.name}: {name}"
            )
