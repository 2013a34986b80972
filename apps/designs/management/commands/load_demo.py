from __future__ import annotations

from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand

from apps.designs.demo import demo_load


class Command(BaseCommand):
    help = (
        "Load the demo designs and, with debug on (DJANGO_DEBUG=1, as `make run` sets it), a superuser for "
        "local use. With debug off no account is created: use `manage.py createsuperuser`."
    )

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument(
            "--user", default="engineer", help="local account to create if missing, debug only ('' for none)"
        )
        parser.add_argument("--password", default="engineer", help="its password (debug only)")

    def handle(self, *args: Any, **options: Any) -> None:
        designs = demo_load()
        self.stdout.write(f"{len(designs)} demo designs loaded")
        if not options["user"]:
            return
        # A superuser whose name and password are in the README is a way in for anyone who can reach the
        # server: it exists only where debug is on, i.e. on a developer's own machine.
        if not settings.DEBUG:
            self.stdout.write(
                f"debug is off (DJANGO_DEBUG is not 1): no account {options['user']!r} created. "
                "Create one with `python manage.py createsuperuser`."
            )
            return
        model = get_user_model()
        if model.objects.filter(username=options["user"]).exists():
            self.stdout.write(f"user {options['user']!r} already exists; left as it is")
            return
        model.objects.create_superuser(options["user"], password=options["password"])
        self.stdout.write(
            f"created superuser {options['user']!r} (password {options['password']!r}) for local use "
            "(debug is on)"
        )
