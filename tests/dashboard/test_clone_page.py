"""The design page's Clone button: any reader copies a design into a private one they own and lands on it."""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.test import Client

from apps.designs.models import Design
from apps.designs.services import design_create, design_update

pytestmark = pytest.mark.django_db

CSRF = re.compile(r'name="csrfmiddlewaretoken" value="([^"]+)"')


def _signed_in(user: Any) -> Client:
    client = Client(enforce_csrf_checks=True)
    client.force_login(user)
    return client


def _clone_form(client: Client, design: Design) -> tuple[str, str]:
    """The Clone form's action and CSRF token, as the design page renders them."""
    page = client.get(f"/designs/{design.pk}/").content.decode()
    forms = re.findall(r'<form method="post" action="([^"]+)"[^>]*>(.*?)</form>', page, re.S)
    action, inner = next((a, f) for a, f in forms if 'id="clone-design"' in f)
    return action, CSRF.search(inner).group(1)  # type: ignore[union-attr]


def test_a_reader_clones_a_demo_and_lands_on_their_own_copy(bob: Any, demos: list[Any]) -> None:
    demo = demos[3]
    client = _signed_in(bob)
    assert 'id="edit-design"' not in client.get(f"/designs/{demo.pk}/").content.decode()
    action, csrf = _clone_form(client, demo)
    assert action == f"/designs/{demo.pk}/clone/"

    response = client.post(action, {"csrfmiddlewaretoken": csrf}, follow=True)
    copy = Design.objects.get(owner=bob)
    assert response.redirect_chain == [(f"/designs/{copy.pk}/", 302)]
    assert (copy.name, copy.visibility, copy.version, copy.is_demo) == (
        f"Copy of {demo.name}",
        "private",
        1,
        False,
    )
    assert copy.current.spec == demo.current.spec
    body = response.content.decode()
    assert 'id="edit-design"' in body and f'href="/designs/{copy.pk}/edit/"' in body
    assert "· by bob</span>" in body
    assert f"Cloned “{demo.name}” (version 1): this copy is yours to edit." in body
    assert Design.objects.filter(pk=demo.pk, owner__username="demo").exists()  # the demo is untouched


def test_clone_copies_the_current_version_and_says_so_on_an_old_one(bob: Any, demos: list[Any]) -> None:
    mine = design_create(owner=bob, name="Bob's", spec=demos[0].current.spec)
    design_update(design=mine, user=bob, base_version=1, spec=demos[3].current.spec)
    client = _signed_in(bob)
    assert ">Clone current version</button>" in client.get(f"/designs/{mine.pk}/?version=1").content.decode()
    assert ">Clone</button>" in client.get(f"/designs/{mine.pk}/").content.decode()
    action, csrf = _clone_form(client, mine)
    client.post(action, {"csrfmiddlewaretoken": csrf})
    assert Design.objects.get(name="Copy of Bob's").current.spec == demos[3].current.spec


def test_clone_of_a_design_you_cannot_read_is_404(bob: Any, demos: list[Any], django_user_model: Any) -> None:
    alice = django_user_model.objects.create_user("alice", password="pw-alice-123")
    private = design_create(owner=alice, name="Alice's private", spec=demos[0].current.spec)
    client = Client()
    client.force_login(bob)
    assert client.post(f"/designs/{private.pk}/clone/").status_code == 404
    assert not Design.objects.filter(owner=bob).exists()


def test_clone_takes_a_signed_in_post_with_the_csrf_token(bob: Any, demos: list[Any]) -> None:
    url = f"/designs/{demos[0].pk}/clone/"
    signed_out = Client().post(url)
    assert signed_out.status_code == 302 and signed_out["Location"] == f"/accounts/login/?next={url}"
    client = _signed_in(bob)
    assert client.get(url).status_code == 405
    assert client.post(url).status_code == 403  # no CSRF token
    assert not Design.objects.filter(owner=bob).exists()


def test_clone_of_a_design_the_catalog_no_longer_supports_says_why_and_copies_nothing(
    bob: Any, demos: list[Any]
) -> None:
    from apps.designs.models import DesignVersion

    demo = demos[3]
    spec = demo.current.spec
    spec["cluster"]["accelerator"] = "retired-gpu"  # a catalog row the stored spec names has gone
    DesignVersion.objects.filter(pk=demo.current.pk).update(spec=spec)
    client = _signed_in(bob)
    action, csrf = _clone_form(client, demo)
    response = client.post(action, {"csrfmiddlewaretoken": csrf}, follow=True)
    assert response.redirect_chain == [(f"/designs/{demo.pk}/", 302)]
    message = re.search(r'<li class="error">(.*?)</li>', response.content.decode(), re.S).group(1)  # type: ignore[union-attr]
    assert message.startswith(f"Could not clone “{demo.name}”: spec.cluster.accelerator: ")
    assert "retired-gpu" in message
    assert not Design.objects.filter(owner=bob).exists()
