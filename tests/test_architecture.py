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
    # the worker; its memory work is handed to a running resident (`rheo_cli.resident`)
    "background": {"memory", "providers", "core", "turn", "resident"},
    # the application layer every front end calls (the memory tools of chat and MCP; backup,
    # export and import through transfer's formats)
    "app": {"turn", "memory", "providers", "core", "background", "transfer", "resident"},
    "ui": {"core", "app"},
    # data in and out: every file format rheo reads or writes (its own export, other
    # programs' chat history), one registry; what reaches the store goes through the engine
    "transfer": {"memory", "core"},
    # the memory served to other clients over the Model Context Protocol
    "mcpserver": {"app", "turn", "memory", "core", "providers", "background", "resident"},
    "repl": {"app", "turn", "memory", "ui", "core", "providers", "background", "resident"},
    "telegram": {"app", "turn", "memory", "ui", "core", "providers", "background", "resident"},
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
        "resident",
    },
    # the resident rheo's thin side (protocol, client, launch, control): standard library
    # only, so every layer above core may reach the resident through it
    # (`test_the_thin_resident_imports_only_the_standard_library`)
    "resident": set(),
    # the resident's warm side: the server and the processes it forks run the command line
    # and the memory work
    "resident.warm": {"cli", "app", "core", "background", "providers", "resident"},
    "entry": {"cli", "core", "providers", "resident"},
}
"""A layer is a top-level package of rheo_cli, ``resident.warm`` (the one subpackage that is a
layer of its own), or ``core`` for its top-level modules."""

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
    if ".".join(parts[1:3]) in LAYERS:
        return ".".join(parts[1:3])
    if parts[1] in LAYERS:
        return parts[1]
    if parts[1] in {"entry", "__main__"}:
        return "entry"
    return "core"


@cache
def imports_of(path: Path, here: str | None = None) -> frozenset[str]:
    """Absolute names of every module ``path`` (module ``here``, else its own name) imports
    (relative imports resolved)."""
    tree = ast.parse(path.read_text())
    here = here or module_name(path)
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


STORES = {
    "sqlite": PACKAGE / "memory" / "store" / "sqlite",
    "postgres": PACKAGE / "memory" / "store" / "postgres",
}
"""The two implementations of the store's interface (`memory.store.api.Store`): the only
places that know which database is behind it."""

DRIVERS = {"postgres": {"psycopg"}}
"""The one exception to "standard library only": the PostgreSQL store imports its driver
(inside functions, only when a postgresql:// store is opened)."""


def store_of(path: Path) -> str | None:
    """The store implementation ``path`` belongs to (``sqlite``, ``postgres``), else None."""
    for name, folder in STORES.items():
        if folder in path.parents:
            return name
    return None


def test_engine_imports_only_the_standard_library_and_itself():
    for path in ENGINE.rglob("*.py"):
        allowed = DRIVERS.get(store_of(path) or "", set())
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


RESIDENT = PACKAGE / "resident"
WARM = RESIDENT / "warm"


def foreign_to_the_thin_resident(path: Path, here: str | None = None) -> list[str]:
    """What ``path`` (a module of the thin resident: ``here``, else its own name) imports
    beyond the standard library and the thin resident itself: nothing may, not even the shared
    text-safety module, so the ``rheo`` command reaches the resident having loaded nothing of
    rheo."""
    found = []
    for name in sorted(imports_of(path, here)):
        if name.split(".")[0] in _stdlib():
            continue
        thin = name == "rheo_cli.resident" or name.startswith("rheo_cli.resident.")
        if thin and layer_of(name) == "resident":
            continue
        found.append(name)
    return found


def test_the_thin_resident_imports_only_the_standard_library():
    thin = [p for p in RESIDENT.rglob("*.py") if WARM not in p.parents]
    assert {p.name for p in thin} >= {"protocol.py", "client.py", "launch.py", "control.py"}
    for path in thin:
        assert layer_of(module_name(path)) == "resident"
        found = foreign_to_the_thin_resident(path)
        assert not found, f"{module_name(path)} imports {found}: standard library only"


def test_the_resident_layers_are_told_apart(tmp_path: Path):
    assert layer_of("rheo_cli.resident") == "resident"
    assert layer_of("rheo_cli.resident.client") == "resident"
    assert layer_of("rheo_cli.resident.warm") == "resident.warm"
    assert layer_of("rheo_cli.resident.warm.server") == "resident.warm"
    for path in WARM.rglob("*.py"):
        assert layer_of(module_name(path)) == "resident.warm", path
    above_core = {"background", "app", "repl", "telegram", "mcpserver", "cli", "entry"}
    assert {k for k, v in LAYERS.items() if "resident" in v} == above_core | {"resident.warm"}
    assert not any("resident.warm" in v for v in LAYERS.values()), "nothing imports the warm side"
    sample = tmp_path / "sample.py"
    cases = {
        "from .. import ready\n": ["rheo_cli", "rheo_cli.ready"],
        "from .warm import server\n": ["rheo_cli.resident.warm", "rheo_cli.resident.warm.server"],
        "from ..memory.text import safety\n": [
            "rheo_cli.memory.text",
            "rheo_cli.memory.text.safety",
        ],
        "import anthropic\n": ["anthropic"],
        "import json\nfrom . import protocol\n": [],
    }
    for n, (source, expected) in enumerate(cases.items()):
        sample.write_text(source)
        found = foreign_to_the_thin_resident(sample, f"rheo_cli.resident.sample{n}")
        assert found == expected, source


def test_psycopg_is_imported_only_by_the_postgres_store():
    for path in PACKAGE.rglob("*.py"):
        if store_of(path) == "postgres":
            continue
        tops = {name.split(".")[0] for name in imports_of(path)}
        assert "psycopg" not in tops, f"{module_name(path)} imports psycopg"


def test_sqlite3_is_imported_only_by_the_sqlite_store():
    """The engine is written against the store's `Connection` protocol and rheo's errors,
    never `sqlite3.Connection` or `sqlite3.Error` (the foreign-file reader aside)."""
    for path in PACKAGE.rglob("*.py"):
        if store_of(path) == "sqlite" or module_name(path) in FOREIGN_SQL:
            continue
        tops = {name.split(".")[0] for name in imports_of(path)}
        assert "sqlite3" not in tops, f"{module_name(path)} imports sqlite3"


BACKEND_SQL = re.compile(r"\bPRAGMA\b|\bMATCH\b|tsquery|tsvector|@@|\bsqlite_master\b")
"""What only one database understands: SQLite's pragmas, FTS5's MATCH and its catalog,
PostgreSQL's text search (``tsquery``, ``tsvector``, ``@@``)."""

BACKEND_NAMES = {"dialect", "is_postgres_url"}
"""Names that would let code branch on which database it runs on."""

URL_READERS = {
    "rheo_cli.app.app",
    "rheo_cli.config",
    "rheo_cli.app.locations",
    "rheo_cli.app.health.install",
}
"""The modules that may read the configured store URL: the application object opening the
store (`store.open` chooses the implementation), the configuration, and where ``rheo paths``
and ``rheo doctor`` find the store when config.toml is broken (without opening anything)."""


def code_strings(path: Path) -> list[tuple[int, str]]:
    """String constants of ``path`` that are code, not prose: every one but docstrings and
    other bare string statements (f-string pieces joined)."""
    tree = ast.parse(path.read_text())
    prose = {
        id(node.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant | ast.JoinedStr)
    }
    found = []
    for node in ast.walk(tree):
        if id(node) in prose:
            continue
        text = None
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            text = node.value
        elif isinstance(node, ast.JoinedStr):
            text = "".join(
                v.value
                for v in node.values
                if isinstance(v, ast.Constant) and isinstance(v.value, str)
            )
        if text:
            found.append((node.lineno, text))
    return found


def backend_branches(path: Path, module: str | None = None) -> list[str]:
    """Where ``path`` (module ``module``, else its own name) knows which database it runs on:
    SQL only one of them understands, a ``dialect``-like name, or the store URL read outside
    `URL_READERS`."""
    module = module or module_name(path)
    found = []
    if module not in FOREIGN_SQL:
        for line, text in code_strings(path):
            if BACKEND_SQL.search(text):
                found.append(f"line {line}: {' '.join(text.split())[:60]!r}")
    for node in ast.walk(ast.parse(path.read_text())):
        name = (
            node.id
            if isinstance(node, ast.Name)
            else node.attr
            if isinstance(node, ast.Attribute)
            else node.name
            if isinstance(node, ast.FunctionDef | ast.alias)
            else None
        )
        if name in BACKEND_NAMES:
            found.append(f"line {getattr(node, 'lineno', '?')}: {name}")
        if name == "store_url" and module not in URL_READERS:
            found.append(f"line {getattr(node, 'lineno', '?')}: store_url")
    return found


def test_no_backend_branch_outside_the_two_stores():
    """Everything that differs between SQLite and PostgreSQL is the store's own: the engine,
    the CLI, the worker and doctor ask the store (``store.kind`` for messages,
    ``serves_one_tenant``, ``health()``...) instead of branching on the database."""
    offenders = {}
    for path in PACKAGE.rglob("*.py"):
        if store_of(path) is None and (found := backend_branches(path)):
            offenders[str(path.relative_to(PACKAGE))] = found
    assert not offenders, f"backend branches outside store/sqlite and store/postgres: {offenders}"


def test_the_backend_check_sees_each_kind_of_branch(tmp_path: Path):
    sample = tmp_path / "sample.py"
    cases = {
        "dialect": "def f(conn):\n    return dialect(conn) == 'postgres'\n",
        "pragma": "def f(conn):\n    conn.execute('PRAGMA busy_timeout = 0')\n",
        "match": "Q = 'SELECT rowid FROM turns_fts WHERE turns_fts MATCH ?'\n",
        "tsquery": 'Q = f"SELECT id FROM turns WHERE fts @@ {q}"\n',
        "url": "def f(rt):\n    return 1 if rt.store_url else 2\n",
    }
    for kind, source in cases.items():
        sample.write_text(source)
        assert backend_branches(sample, "rheo_cli.cli.sample"), f"the check misses a {kind}"
    sample.write_text('"""Prose may say PRAGMA, MATCH and @@."""\nX = "match this"\n')
    assert backend_branches(sample, "rheo_cli.cli.sample") == [], "prose is not a branch"


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
        store = [n for n in imports_of(path) if n.startswith("rheo_cli.memory.store")]
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


def _module_paths() -> dict[str, Path]:
    return {module_name(path): path for path in PACKAGE.rglob("*.py")}


def module_imports(path: Path, modules: dict[str, Path], here: str | None = None) -> set[str]:
    """The rheo modules ``path`` imports, at module level or inside a function: for
    ``from P import n`` the module ``P.n`` when it is one, else ``P`` itself. The parent
    packages Python imports on the way are not counted: they are not what the code uses; nor
    are imports under ``if TYPE_CHECKING:``, which never run (annotations only)."""
    tree = ast.parse(path.read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            node.body = []
    here = here or module_name(path)
    package = here if path.name == "__init__.py" else here.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name in modules)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            for alias in node.names:
                if f"{target}.{alias.name}" in modules:
                    found.add(f"{target}.{alias.name}")
                elif target in modules:
                    found.add(target)
    found.discard(here)
    return found


def import_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm),
    each sorted: every module of one can reach every other by imports."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(graph.get(node, ())):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return cycles


def test_import_cycles_are_found_with_the_imports_inside_functions(tmp_path):
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": set()}
    assert import_cycles(graph) == [["a", "b", "c"]]
    assert import_cycles({"a": {"b"}, "b": set()}) == []
    pkg = tmp_path / "rheo_cli" / "memory"
    pkg.mkdir(parents=True)
    (pkg / "one.py").write_text(
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from . import three\n"
        "def f():\n    from . import two\n"
    )
    for name in ("two", "three"):
        (pkg / f"{name}.py").write_text("")
    modules = {f"rheo_cli.memory.{n}": pkg / f"{n}.py" for n in ("one", "two", "three")}
    found = module_imports(pkg / "one.py", modules, here="rheo_cli.memory.one")
    assert found == {"rheo_cli.memory.two"}


def test_no_import_cycles_between_modules():
    modules = _module_paths()
    graph = {name: module_imports(path, modules) for name, path in modules.items()}
    cycles = import_cycles(graph)
    assert not cycles, "modules importing each other (directly or round a loop): " + "; ".join(
        " <-> ".join(c) for c in cycles
    )


LONGEST = 80
"""Lines of body (its docstring not counted) a function may have."""


def body_lines(node: ast.FunctionDef | ast.AsyncFunctionDef) -> int:
    """Lines from the first statement after the docstring to the function's last line."""
    body = node.body
    first = body[0]
    if (
        isinstance(first, ast.Expr)
        and isinstance(first.value, ast.Constant)
        and isinstance(first.value.value, str)
        and len(body) > 1
    ):
        first = body[1]
    return (node.end_lineno or node.lineno) - first.lineno + 1


def test_no_function_is_longer_than_eighty_lines():
    long = []
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                lines = body_lines(node)
                if lines > LONGEST:
                    long.append(f"{module_name(path)}.{node.name} ({lines} lines)")
    assert not long, "split these functions: " + ", ".join(long)
