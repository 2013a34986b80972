# Joins the two 0008 migrations written in parallel (w5: Rubin family and availability; w8: retired rows and
# catalog bounds); neither touches the other's fields.

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [
        ("catalog", "0008_w5_rubin_family_availability"),
        ("catalog", "0008_w8_retired_and_bounds"),
    ]

    operations = []
