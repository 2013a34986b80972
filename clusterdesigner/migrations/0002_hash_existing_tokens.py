"""Existing DRF tokens (stored in plain text) become hashed ApiTokens with the scope they had in effect,
everything ("catalog"), so the scripts that send them keep working; the plain-text rows are deleted."""

from __future__ import annotations

import hashlib
from typing import Any

from django.db import migrations


def hash_tokens(apps: Any, schema_editor: Any) -> None:
    Token = apps.get_model("authtoken", "Token")
    ApiToken = apps.get_model("clusterdesigner", "ApiToken")
    for token in Token.objects.all():
        ApiToken.objects.create(
            user_id=token.user_id,
            key_hash=hashlib.sha256(token.key.encode()).hexdigest(),
            prefix=token.key[:4],
            scope="catalog",
        )
    Token.objects.all().delete()


class Migration(migrations.Migration):
    dependencies = [
        ("clusterdesigner", "0001_initial"),
        ("authtoken", "0004_alter_tokenproxy_options"),
    ]

    operations = [migrations.RunPython(hash_tokens, migrations.RunPython.noop)]
