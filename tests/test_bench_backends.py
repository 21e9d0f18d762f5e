"""The benchmarks on both stores: LoCoMo recall on PostgreSQL within a point of SQLite's,
the schemas a run creates dropped at its end, and the many-clients figure losing nothing.

The PostgreSQL cases need RHEO_TEST_DATABASE_URL (``eval "$(scripts/test-services start)"``)."""

from __future__ import annotations

import json
import os
import sys

import pytest
from helpers import LOCOMO, REPO

sys.path.insert(0, str(REPO / "bench"))
import backends  # noqa: E402
import concurrency  # noqa: E402
import locomo  # noqa: E402

from rheo_cli.memory.store.settings import Settings  # noqa: E402

PG_URL = os.environ.get("RHEO_TEST_DATABASE_URL")
needs_pg = pytest.mark.skipif(not PG_URL, reason="needs RHEO_TEST_DATABASE_URL")


def _bench_schemas() -> set[str]:
    import psycopg

    with psycopg.connect(PG_URL, autocommit=True) as admin:
        rows = admin.execute(
            "SELECT nspname FROM pg_namespace WHERE nspname LIKE 'rheo_bench_%'"
        ).fetchall()
    return {r[0] for r in rows}


@needs_pg
def test_a_run_drops_the_schemas_it_created(tmp_path):
    stores = backends.Stores("postgres", folder=tmp_path, url=PG_URL)
    conn = stores.open("one", "bench")
    conn.close()
    assert stores.schema("one") in _bench_schemas()
    assert stores.size_bytes("one") > 0
    stores.close()
    assert stores.schema("one") not in _bench_schemas()


def test_postgres_without_a_url_is_a_usage_error(capsys, monkeypatch):
    for name in backends.URL_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    assert locomo.main(["--backend", "postgres"]) == 2
    assert "needs --database-url" in capsys.readouterr().err
    assert concurrency.main(["--backend", "postgres"]) == 2


@needs_pg
@pytest.mark.skipif(not LOCOMO.exists(), reason="LoCoMo data not present")
def test_locomo_recall_on_postgres_is_within_a_point_of_sqlite():
    sample = json.loads(LOCOMO.read_text())[0]
    budgets = (500, 2000)
    lite = locomo.evaluate([sample], budgets, Settings())
    pg = locomo.evaluate([sample], budgets, Settings(), backend="postgres", database_url=PG_URL)
    for budget in map(str, budgets):
        a, b = lite["results"]["rheo"][budget], pg["results"]["rheo"][budget]
        assert a["questions"] == b["questions"] > 100
        # recall is given to 4 places: a difference of exactly one point is within a point
        gap = round(abs(a["recall"] - b["recall"]), 4)
        assert gap <= 0.01, (budget, a["recall"], b["recall"])


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_clients_asking_at_once_lose_nothing(backend, capsys):
    if backend == "postgres" and not PG_URL:
        pytest.skip("needs RHEO_TEST_DATABASE_URL")
    args = ["--clients", "2", "--turns", "3", "--history", "300", "--json"]
    args += ["--backend", backend] + (["--database-url", PG_URL] if PG_URL else [])
    assert concurrency.main(args) == 0
    fig = json.loads(capsys.readouterr().out)
    assert fig["turns"] == 6 and fig["errors"] == 0
    assert fig["turns_per_s"] > 0 and fig["context_p95_ms"] >= fig["context_p50_ms"] > 0


def test_an_unreachable_server_is_one_line(capsys):
    bad = ["--backend", "postgres", "--database-url", "postgresql://rheo@127.0.0.1:1/none"]
    assert concurrency.main([*bad, "--clients", "1", "--turns", "1"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("concurrency: cannot connect to PostgreSQL") and err.count("\n") == 1
