"""The layers, held by the source tree: which package may import which, no cycles between
packages, and every SQL statement inside the engine (found in string constants, not lines)."""

from __future__ import annotations

import ast
import re
import sys
from functools import cache
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "rheo_cli"
ENGINE = PACKAGE / "memory"

LAYERS: dict[str, set[str]] = {
    # layer -> the rheo layers it may import (besides itself)
    "memory": set(),
    "providers": set(),
    # errors, paths, clock, config, prompts, runtime: the wiring every layer above shares
    "core": {"memory", "providers"},
    "turn": {"memory", "providers", "core"},
    "background": {"memory", "providers", "core", "turn"},
    # the application layer every front end calls (the memory tools of chat and MCP; backup,
    # export and import through transfer's formats)
    "app": {"turn", "memory", "providers", "core", "background", "transfer"},
    "ui": {"core", "app"},
    # data in and out: every file format rheo reads or writes (its own export, other
    # programs' chat history), one registry; what reaches the store goes through the engine
    "transfer": {"memory", "core"},
    # the memory served to other clients over the Model Context Protocol
    "mcpserver": {"app", "turn", "memory", "core", "providers", "background"},
    "repl": {"app", "turn", "memory", "ui", "core", "providers", "background"},
    "telegram": {"app", "turn", "memory", "ui", "core", "providers", "background"},
    "cli": {
        "app",
        "telegram",
        "turn",
        "memory",
        "ui",
        "core",
        "providers",
        "background",
        "repl",
        "transfer",
        "mcpserver",
    },
    # the resident rheo: its thin client (standard library) and the warm server that runs
    # the command line for it
    "resident": {"cli", "app", "core", "background", "providers"},
    "entry": {"cli", "core", "providers", "resident"},
}
"""A layer is a top-level package of rheo_cli, or ``core`` for its top-level modules."""

SHARED = {"rheo_cli.memory.text.safety"}
"""Engine modules every layer may import: the one text-safety module (redaction, masking,
terminal-safe display), standard library only and importing nothing else of rheo."""


def module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def layer_of(module: str) -> str:
    parts = module.split(".")
    if len(parts) == 1:
        return "core"
    if parts[1] in LAYERS:
        return parts[1]
    if parts[1] in {"entry", "__main__"}:
        return "entry"
    return "core"


@cache
def imports_of(path: Path) -> frozenset[str]:
    """Absolute names of every module ``path`` imports (relative imports resolved)."""
    tree = ast.parse(path.read_text())
    here = module_name(path)
    package = here if path.name == "__init__.py" else here.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            found.add(target)
            found.update(f"{target}.{alias.name}" for alias in node.names)
    return frozenset(found)


def _stdlib() -> set[str]:
    return set(sys.stdlib_module_names) | {"__future__"}


DRIVERS = {"rheo_cli.memory.store.pg": {"psycopg"}}
"""The one exception to "standard library only": the PostgreSQL store's adapter imports its
driver (inside functions, only when a postgresql:// store is opened)."""


def test_engine_imports_only_the_standard_library_and_itself():
    for path in ENGINE.rglob("*.py"):
        allowed = DRIVERS.get(module_name(path), set())
        for name in imports_of(path):
            top = name.split(".")[0]
            if top == "rheo_cli":
                assert name.startswith("rheo_cli.memory"), f"{module_name(path)} imports {name}"
                continue
            assert top in _stdlib() | allowed, f"{module_name(path)}: {name}"


def test_the_shared_modules_import_nothing_of_rheo():
    for name in SHARED:
        path = PACKAGE.parent.joinpath(*name.split(".")).with_suffix(".py")
        inner = [n for n in imports_of(path) if n.startswith("rheo_cli")]
        assert not inner, f"{name} imports {inner}"


def test_psycopg_is_imported_only_by_the_postgres_store():
    for path in PACKAGE.rglob("*.py"):
        if module_name(path) in DRIVERS:
            continue
        tops = {name.split(".")[0] for name in imports_of(path)}
        assert "psycopg" not in tops, f"{module_name(path)} imports psycopg"


def test_layers_import_only_downwards():
    for path in PACKAGE.rglob("*.py"):
        here = layer_of(module_name(path))
        for name in imports_of(path):
            if not name.startswith("rheo_cli."):
                continue
            there = layer_of(name)
            if there == here or name in SHARED or name.rpartition(".")[0] in SHARED:
                continue
            if here == "cli" and there == "repl":
                # `rheo chat` starts the REPL through one function; nothing else crosses.
                assert module_name(path) == "rheo_cli.cli.chat", f"{module_name(path)}: {name}"
                assert name.startswith("rheo_cli.repl.app"), name
                continue
            assert there in LAYERS[here], (
                f"{module_name(path)} ({here}) imports {name} ({there}): "
                f"{here} may import only {sorted(LAYERS[here])}"
            )


FRONT_ENDS = ("cli", "repl", "telegram", "mcpserver", "ui")
"""The front ends (and what they share): they render what the application layer returns."""
BELOW_APP = ("rheo_cli.memory", "rheo_cli.turn", "rheo_cli.background")


def test_front_ends_import_nothing_below_the_application_layer():
    for top in FRONT_ENDS:
        for path in (PACKAGE / top).rglob("*.py"):
            below = sorted(n for n in imports_of(path) if n.startswith(BELOW_APP))
            assert not below, f"{module_name(path)} imports {below}: call rheo_cli.app instead"


def test_no_import_cycles_between_packages():
    graph: dict[str, set[str]] = {}
    for path in PACKAGE.rglob("*.py"):
        here = module_name(path)
        pkg = here.rpartition(".")[0] if path.name != "__init__.py" else here
        for name in imports_of(path):
            if name.startswith("rheo_cli."):
                target = _existing_package(name)
                if target and target != pkg and not pkg.startswith(target + "."):
                    graph.setdefault(pkg, set()).add(target)
    seen: dict[str, int] = {}

    def visit(node: str, stack: list[str]) -> None:
        seen[node] = 1
        for nxt in graph.get(node, ()):
            if seen.get(nxt) == 1:
                raise AssertionError("import cycle: " + " -> ".join([*stack, node, nxt]))
            if nxt not in seen:
                visit(nxt, [*stack, node])
        seen[node] = 2

    for node in list(graph):
        if node not in seen:
            visit(node, [])


def _existing_package(name: str) -> str | None:
    """The package holding module ``name`` (or ``name`` itself when it is a package)."""
    parts = name.split(".")
    while parts:
        folder = PACKAGE.parent.joinpath(*parts)
        if (folder / "__init__.py").exists():
            return ".".join(parts)
        if folder.with_suffix(".py").exists():
            return ".".join(parts[:-1])
        parts = parts[:-1]
    return None


SQL = re.compile(
    r"\b(SELECT\s.+?\sFROM|INSERT\s+(OR\s+\w+\s+)?INTO|UPDATE\s+\w+\s+SET|DELETE\s+FROM|"
    r"CREATE\s+(VIRTUAL\s+)?(TABLE|INDEX|TRIGGER|VIEW)|DROP\s+(TABLE|INDEX|TRIGGER)|PRAGMA\s+\w+)",
    re.S,  # rheo writes SQL keywords in capitals; prose in strings stays prose
)


def sql_strings(path: Path) -> list[tuple[int, str]]:
    """String constants in ``path`` (f-string pieces joined) that read as SQL."""
    tree = ast.parse(path.read_text())
    found = []
    for node in ast.walk(tree):
        text = None
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            text = node.value
        elif isinstance(node, ast.JoinedStr):
            text = "".join(
                v.value
                for v in node.values
                if isinstance(v, ast.Constant) and isinstance(v.value, str)
            )
        if text and SQL.search(text):
            found.append((node.lineno, " ".join(text.split())[:80]))
    return found


FOREIGN_SQL = {"rheo_cli.transfer.llm_logs"}
"""The one exception to "all SQL lives in the engine": the reader of another program's SQLite
file (the llm CLI's logs.db), whose SQL is about that program's tables, not rheo's store. It
opens its file read-only and writes nothing (`test_the_foreign_sql_reader_only_reads`)."""


def test_all_sql_lives_in_the_engine():
    for path in PACKAGE.rglob("*.py"):
        if ENGINE in path.parents or module_name(path) in FOREIGN_SQL:
            continue
        found = sql_strings(path)
        assert not found, f"{path.relative_to(PACKAGE)}: SQL outside the engine: {found}"


WRITES = re.compile(
    r"\b(INSERT|UPDATE\s+\w+\s+SET|DELETE\s+FROM|REPLACE\s+INTO|CREATE|DROP|ALTER|ATTACH|"
    r"VACUUM|REINDEX)\b"
)


def test_the_foreign_sql_reader_only_reads():
    for name in FOREIGN_SQL:
        path = PACKAGE.parent.joinpath(*name.split(".")).with_suffix(".py")
        source = path.read_text()
        assert "mode=ro" in source, f"{name} must open its file read-only (mode=ro)"
        assert source.count("sqlite3.connect(") == 1, f"{name}: one read-only connection"
        store = [n for n in imports_of(path) if n.startswith("rheo_cli.memory.store.db")]
        assert not store, f"{name} must not open rheo's store: {store}"
        found = sql_strings(path)
        assert found, f"{name} holds no SQL: take it out of FOREIGN_SQL"
        tree = ast.parse(source)
        texts = [n.value for n in ast.walk(tree) if isinstance(n, ast.Constant)]
        writing = [t for t in texts if isinstance(t, str) and WRITES.search(t)]
        assert not writing, f"{name} writes: {writing}"


def test_the_sql_check_sees_multi_line_statements(tmp_path: Path):
    sample = tmp_path / "sample.py"
    sample.write_text('Q = """\n    SELECT id\n    FROM turns\n    WHERE x = 1\n"""\n')
    assert sql_strings(sample), "a multi-line SELECT must be found"
    sample.write_text('MESSAGE = "select the item from the list"\n')
    assert sql_strings(sample) == [], "plain English is not SQL"
