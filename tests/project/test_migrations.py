"""make test builds its test databases from the models (pytest-django's --nomigrations: running the 37
migrations took ~12 s of each pytest process's start on PostgreSQL), so the migrations are checked here and in
the fault tests: the models and the migrations agree (a model changed without its migration fails this test,
as it failed every test that read the missing column before); every migration runs from an empty database
on SQLite (tests/project/test_gunicorn_access_log.py's server) and on PostgreSQL (tests/faults/conftest.py's
private_postgres, make test's serial phase)."""

from __future__ import annotations

import io
from typing import Any

import pytest
from django.core.management import call_command


@pytest.mark.django_db
def test_every_model_change_has_its_migration(settings: Any) -> None:
    settings.MIGRATION_MODULES = {}  # the apps' own migrations: --nomigrations hides them from the loader
    out = io.StringIO()
    try:
        call_command("makemigrations", "--check", "--dry-run", stdout=out, stderr=out)
    except SystemExit as exit_:  # --check exits 1 when a migration is missing
        pytest.fail(f"models and migrations disagree (exit {exit_.code}): {out.getvalue()}")
    assert "No changes detected" in out.getvalue()
