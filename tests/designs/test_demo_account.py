"""`manage.py load_demo` creates the README's engineer / engineer superuser only with debug on."""

from __future__ import annotations

import io
from typing import Any

from django.contrib.auth import authenticate
from django.core.management import call_command


def _load_demo(*args: str) -> str:
    out = io.StringIO()
    call_command("load_demo", *args, stdout=out)
    return out.getvalue()


def test_load_demo_with_debug_off_creates_no_account_and_says_so(
    catalog: Any, settings: Any, django_user_model: Any
) -> None:
    settings.DEBUG = False
    output = _load_demo()
    assert "4 demo designs loaded" in output
    assert "debug is off" in output and "no account 'engineer' created" in output
    assert "createsuperuser" in output
    assert not django_user_model.objects.filter(username="engineer").exists()
    assert not django_user_model.objects.filter(is_superuser=True).exists()
    # An explicit name and password are refused the same way: no known password outside debug.
    assert "no account 'ops' created" in _load_demo("--user", "ops", "--password", "ops-pw-123")
    assert not django_user_model.objects.filter(username="ops").exists()


def test_load_demo_with_debug_on_creates_the_local_superuser(
    catalog: Any, settings: Any, django_user_model: Any
) -> None:
    settings.DEBUG = True
    output = _load_demo()
    assert "created superuser 'engineer' (password 'engineer') for local use" in output
    user = authenticate(username="engineer", password="engineer")
    assert user is not None and user.is_superuser and user.is_staff
    assert "already exists" in _load_demo()
    assert django_user_model.objects.filter(username="engineer").count() == 1
