from __future__ import annotations

import django.core.validators
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("catalog", "0002_updated_at")]

    operations = [
        migrations.AddField(
            model_name="servertype",
            name="price_low_usd",
            field=models.FloatField(
                blank=True,
                help_text="Low end of the reported price range, USD.",
                null=True,
                validators=[django.core.validators.MinValueValidator(0, "must not be negative")],
            ),
        ),
        migrations.AddField(
            model_name="servertype",
            name="price_high_usd",
            field=models.FloatField(
                blank=True,
                help_text="High end of the reported price range, USD.",
                null=True,
                validators=[django.core.validators.MinValueValidator(0, "must not be negative")],
            ),
        ),
    ]
