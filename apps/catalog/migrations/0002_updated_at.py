from __future__ import annotations

import django.utils.timezone
from django.db import migrations, models

MODELS = [
    "vendor",
    "accelerator",
    "servertype",
    "fabric",
    "switch",
    "storagetier",
    "cloudoffering",
    "cloudprice",
]


class Migration(migrations.Migration):
    dependencies = [("catalog", "0001_initial")]

    operations = [
        migrations.AddField(
            model_name=name,
            name="updated_at",
            field=models.DateTimeField(auto_now=True, default=django.utils.timezone.now),
            preserve_default=False,
        )
        for name in MODELS
    ]
