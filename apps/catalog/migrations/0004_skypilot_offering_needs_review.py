from __future__ import annotations

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("catalog", "0003_server_price_range")]

    operations = [
        migrations.AddField(
            model_name="cloudoffering",
            name="needs_review",
            field=models.BooleanField(
                default=False, help_text="Created by an import; check the accelerator, GPU count and network."
            ),
        ),
    ]
