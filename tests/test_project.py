"""Project-level behaviour: the engine's isolation, settings from the environment, offline API docs."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import pytest
from django.core.management import call_command

from clusterdesigner.settings import database_from_url

from .conftest import ROOT


def _python(code: str, **env: str) -> subprocess.CompletedProcess[str]:
    full_env = {k: v for k, v in os.environ.items() if not k.startswith("DJANGO_")}
    full_env.update(env)
    return subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=full_env, capture_output=True, text=True
    )


def test_importing_the_engine_loads_neither_django_nor_celery() -> None:
    result = _python(
        "import sys, pkgutil, importlib, clusterdesigner.engine as e\n"
        "for m in pkgutil.walk_packages(e.__path__, 'clusterdesigner.engine.'): "
        "importlib.import_module(m.name)\n"
        "print(sorted(n for n in sys.modules if n.split('.')[0] in {'django', 'celery', 'rest_framework'}))\n"
        "print('clusterdesigner.engine.cost.cost' in sys.modules)"  # the parts' modules were imported
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["[]", "True"]


def test_missing_secret_key_with_debug_off_stops_start_up_with_a_clear_message() -> None:
    result = _python("import clusterdesigner.settings", DJANGO_DEBUG="0")
    assert result.returncode != 0
    assert "DJANGO_SECRET_KEY is not set" in result.stderr


def test_database_url_parses_postgres_and_sqlite() -> None:
    pg = database_from_url("postgres://bob:s%40cret@db.internal:6543/clusters?sslmode=require")
    assert (pg["ENGINE"], pg["NAME"], pg["USER"], pg["PASSWORD"], pg["HOST"], pg["PORT"]) == (
        "django.db.backends.postgresql",
        "clusters",
        "bob",
        "s@cret",
        "db.internal",
        "6543",
    )
    assert pg["OPTIONS"] == {"sslmode": "require"}
    lite = database_from_url("sqlite:///var/db.sqlite3")
    assert lite["NAME"] == str(ROOT / "var" / "db.sqlite3")


def test_unsupported_database_scheme_is_refused() -> None:
    from django.core.exceptions import ImproperlyConfigured

    with pytest.raises(ImproperlyConfigured, match="mysql"):
        database_from_url("mysql://x@y/z")


def test_openapi_schema_validates_without_warnings(monkeypatch: pytest.MonkeyPatch) -> None:
    # The command turns on drf-spectacular's line numbers for its warnings (GENERATOR_STATS, process-wide and
    # never turned off): finding them parses a class's whole module once per class (~4 s of CPU here, and
    # again for each new class in every later schema this process generates). Warnings are still raised,
    # counted and fail the command; they only name no line.
    from drf_spectacular.drainage import GENERATOR_STATS

    monkeypatch.setattr(type(GENERATOR_STATS), "enable_trace_lineno", lambda self: None)
    call_command("spectacular", "--validate", "--fail-on-warn", "--file", os.devnull)
    assert GENERATOR_STATS._trace_lineno is False, "the command turned line numbers on another way"


def test_swagger_ui_is_served_without_a_cdn(client: object) -> None:
    response = client.get("/api/v1/docs/")  # type: ignore[attr-defined]
    assert response.status_code == 200
    html = response.content.decode()
    scripts = re.findall(r'<script[^>]+src="([^"]+)"', html)
    assert scripts and all(src.startswith("/") for src in scripts), scripts
    assert "swagger-ui" in " ".join(scripts)
    assert "<script>" not in html.replace(" ", "")  # no inline script: the CSP forbids it


def test_plotly_js_is_served_from_the_installed_package(client: object) -> None:
    import plotly

    response = client.get("/static/vendor/plotly.min.js")  # type: ignore[attr-defined]
    assert response.status_code == 200
    body = b"".join(response.streaming_content) if response.streaming else response.content  # type: ignore[attr-defined]
    from clusterdesigner.staticfinders import PLOTLY_DIR

    assert body == (PLOTLY_DIR / "plotly.min.js").read_bytes()
    assert plotly.__version__


def test_pages_send_a_content_security_policy_without_inline_script(client: object, db: object) -> None:
    response = client.get("/catalog/")  # type: ignore[attr-defined]
    policy = response["Content-Security-Policy"]
    script_src = next(part for part in policy.split(";") if part.strip().startswith("script-src"))
    assert "'unsafe-inline'" not in script_src and "'self'" in script_src


def test_deploy_checks_are_clean_with_production_settings() -> None:
    result = subprocess.run(
        [sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env={
            **{k: v for k, v in os.environ.items() if not k.startswith("DJANGO_")},
            "DJANGO_SECRET_KEY": "x" * 30 + "-production-like-secret-key-0123456789",
            "DJANGO_SECURE_SSL": "1",
            "DJANGO_ALLOWED_HOSTS": "clusters.example.com",
        },
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "no issues" in result.stdout + result.stderr


def test_engine_commands_run_on_a_fresh_checkout_from_the_shipped_seed_catalog(tmp_path: object) -> None:
    # No database file yet (before `migrate`): `manage.py estimate` and `tco` fall back to the seed catalog.
    request = (
        '{"model": {"preset": "llama3-8b"}, "training": {"tokens": 1e12, "global_batch_seqs": 512},'
        ' "cluster": {"accelerator": "h100-sxm", "gpus_per_node": 8, "nodes": 8, "fabric": "ib-ndr400"},'
        ' "parallelism": {"tp": 1, "pp": 1, "dp": 64, "micro_batch": 2, "recompute": "selective",'
        ' "sharding": "zero1"}}'
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("DJANGO_") and k != "DATABASE_URL"}
    env.update(DJANGO_DEBUG="1", DATABASE_URL=f"sqlite:///{tmp_path}/missing/db.sqlite3")
    result = subprocess.run(
        [sys.executable, "manage.py", "estimate", "-", "--compact"],
        cwd=ROOT,
        env=env,
        input=request,
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stderr
    assert "using the shipped seed catalog" in result.stderr
    response = json.loads(result.stdout)
    assert response["summary"]["cluster"]["accelerator"] == "h100-sxm"
    # 8B on 64 H100 at the engine's calibrated rate: a real estimate, not an error envelope.
    assert 0.25 < response["mfu"] < 0.6
