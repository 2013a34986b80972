from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("analysis", "0003_unique_live_input"),
    ]

    operations = [
        migrations.AddField(
            model_name="analysischunk",
            name="heartbeat_at",
            field=models.DateTimeField(
                blank=True,
                help_text="The last sign of life of the worker computing it (renewed every "
                "ANALYSIS_HEARTBEAT_S); older than ANALYSIS_LEASE_S, the worker is taken for dead and the "
                "chunk is queued again.",
                null=True,
            ),
        ),
    ]
