"""The suite runs in-process by default: a test that starts rheo in another process, or starts
a fake HTTP server itself, is marked ``boundary`` (or ``resident``/``realclients``, which imply
it), so ``-m "not boundary"`` runs the in-process tests alone. Fixtures that start a fake
server (``api``...) are enforced at collection (`conftest.pytest_collection_modifyitems`);
the rest is found here, by reading the test files: a test that calls `run_rheo` or
`api_env`, runs ``sys.executable`` or ``-m rheo_cli...`` through `subprocess`, `pty` or an
MCP stdio client, or makes a `FakeAnthropic`, `FakeOpenAI` or `FakeTelegram`, directly or
through a function or fixture of its own module, must carry the mark or sit in a module
that does. tests/resident is left out: its conftest marks every test there ``resident``."""

from __future__ import annotations

import ast
from pathlib import Path

TESTS = Path(__file__).resolve().parent
EXEMPT = ("resident",)
"""The resident's tests, whose conftest marks every one of them ``resident``."""
MARKS = {"boundary", "resident", "realclients"}
HELPERS = {"run_rheo", "api_env"}
"""`helpers` functions that start rheo (or set up a process to talk to the fake API)."""
SPAWNERS = {"run", "Popen", "call", "check_call", "check_output", "spawn", "StdioServerParameters"}
"""Calls that start a process (subprocess's, pty's, the MCP SDK's stdio client's)."""
SERVERS = {"FakeAnthropic", "FakeOpenAI", "FakeTelegram"}
"""The fake HTTP APIs a real SDK talks to."""


def _marks(decorators: list[ast.expr]) -> set[str]:
    """The ``pytest.mark.NAME`` names used in ``decorators`` (``pytest.mark.boundary`` or
    ``pytest.mark.boundary(...)``) or in a ``pytestmark`` value."""
    found = set()
    for node in decorators:
        for sub in ast.walk(node):
            if (
                isinstance(sub, ast.Attribute)
                and isinstance(sub.value, ast.Attribute)
                and sub.value.attr == "mark"
            ):
                found.add(sub.attr)
    return found


def _called(node: ast.AST) -> set[str]:
    """Names of the functions ``node`` calls (``f(...)`` and ``x.f(...)``)."""
    names = set()
    for sub in ast.walk(node):
        if isinstance(sub, ast.Call):
            func = sub.func
            if isinstance(func, ast.Name):
                names.add(func.id)
            elif isinstance(func, ast.Attribute):
                names.add(func.attr)
    return names


def _runs_python_or_rheo(node: ast.AST) -> bool:
    """``node`` names ``sys.executable`` or a ``rheo_cli`` module as a string."""
    for sub in ast.walk(node):
        if isinstance(sub, ast.Attribute) and sub.attr == "executable":
            return True
        if (
            isinstance(sub, ast.Constant)
            and isinstance(sub.value, str)
            and (sub.value == "rheo_cli" or sub.value.startswith("rheo_cli."))
        ):
            return True
    return False


def _starts_itself(node: ast.AST, servers: bool) -> bool:
    """``node`` (a function) starts rheo (or, with ``servers``, a fake HTTP server) without
    help from another function of its module."""
    called = _called(node)
    if called & (HELPERS | SERVERS if servers else HELPERS):
        return True
    return bool(called & SPAWNERS) and _runs_python_or_rheo(node)


def _is_fixture(node: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    return any("fixture" in ast.unparse(d) for d in node.decorator_list)


def unmarked(path: Path, source: str | None = None) -> list[str]:
    """``FILE::TEST`` of every test in ``path`` that starts rheo in another process and carries
    none of `MARKS`, on itself, its class or its module."""
    tree = ast.parse(source if source is not None else path.read_text())
    module_marks: set[str] = set()
    functions: dict[str, ast.FunctionDef | ast.AsyncFunctionDef] = {}
    tests: list[tuple[ast.FunctionDef | ast.AsyncFunctionDef, set[str]]] = []
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "pytestmark" for t in node.targets
        ):
            module_marks |= _marks([node.value])
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            functions[node.name] = node
            if node.name.startswith("test_"):
                tests.append((node, _marks(node.decorator_list)))
        elif isinstance(node, ast.ClassDef) and node.name.startswith("Test"):
            class_marks = _marks(node.decorator_list)
            for method in node.body:
                if isinstance(method, ast.FunctionDef | ast.AsyncFunctionDef):
                    functions.setdefault(method.name, method)
                    if method.name.startswith("test_"):
                        tests.append((method, class_marks | _marks(method.decorator_list)))
    if module_marks & MARKS:
        return []
    starts: dict[tuple[str, bool], bool] = {}

    def reaches(name: str, servers: bool, seen: frozenset[str]) -> bool:
        """Whether the module's function ``name`` starts rheo or (``servers``) a fake server,
        itself or through the module's functions it calls; or starts rheo through the
        module's fixtures it takes (a fixture starting a fake server is found exactly at
        collection, by conftest)."""
        if (name, servers) in starts:
            return starts[(name, servers)]
        node = functions[name]
        called = _called(node) & set(functions)
        taken = {a.arg for a in node.args.args} & set(functions)
        result = (
            _starts_itself(node, servers)
            or any(reaches(f, servers, seen | {name}) for f in called - seen - {name})
            or any(
                reaches(f, False, seen | {name})
                for f in taken - seen - {name}
                if _is_fixture(functions[f])
            )
        )
        starts[(name, servers)] = result
        return result

    return [
        f"{path.relative_to(TESTS) if path.is_relative_to(TESTS) else path}::{test.name}"
        for test, marks in tests
        if not marks & MARKS and reaches(test.name, True, frozenset())
    ]


def test_every_test_that_starts_rheo_or_a_fake_server_is_marked_boundary():
    found = []
    for path in sorted(TESTS.rglob("test_*.py")):
        if path.relative_to(TESTS).parts[0] not in EXEMPT:
            found += unmarked(path)
    assert found == [], "mark these @pytest.mark.boundary:\n" + "\n".join(found)


def test_the_check_sees_each_way_of_starting_rheo():
    source = """
import subprocess, sys, pytest
from helpers import run_rheo, api_env

def test_direct(home):
    run_rheo("history", "recent")

def helper(args):
    return subprocess.run([sys.executable, "-m", "rheo_cli", *args])

def test_through_a_helper(home):
    helper(["maintain"])

@pytest.fixture
def worker(home):
    proc = subprocess.Popen(["python3", "-m", "rheo_cli.app.worker_process", "--worker"])
    yield proc

def test_through_a_fixture(worker):
    pass

def test_with_the_fake_apis_environment(api, home):
    env = api_env(api, home)

def test_redis_is_not_rheo(home):
    subprocess.Popen(["redis-server", "--port", "0"])

def test_its_own_fake_server(home):
    with FakeOpenAI() as server:
        pass

def test_in_process(rheo):
    rheo("ask", "hi")

@pytest.mark.boundary
def test_marked(home):
    run_rheo("ask", "hi")

@pytest.mark.parametrize("n", [1])
@pytest.mark.boundary
def test_marked_among_others(home, n):
    helper([])

class TestGroup:
    def test_in_a_class(self):
        helper([])
"""
    found = unmarked(TESTS / "example" / "test_x.py", source)
    assert [f.split("::")[1] for f in found] == [
        "test_direct",
        "test_through_a_helper",
        "test_through_a_fixture",
        "test_with_the_fake_apis_environment",
        "test_its_own_fake_server",
        "test_in_a_class",
    ]
    marked_module = "import pytest\npytestmark = [pytest.mark.boundary]\n" + source
    assert unmarked(TESTS / "example" / "test_x.py", marked_module) == []
