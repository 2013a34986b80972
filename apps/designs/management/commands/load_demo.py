from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand

from apps.designs.demo import demo_load


class Command(BaseCommand):
    help = "Load the demo designs (and, with --user, a sign-in account for local use)."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument(
            "--user", default="engineer", help="local account to create if missing ('' for none)"
        )
        parser.add_argument("--password", default="engineer", help="its password (local development only)")

    def handle(self, *args: Any, **options: Any) -> None:
        designs = demo_load()
        self.stdout.write(f"{len(designs)} demo designs loaded")
        if options["user"]:
            model = get_user_model()
            if not model.objects.filter(username=options["user"]).exists():
                model.objects.create_superuser(options["user"], password=options["password"])
                self.stdout.write(
                    f"created user {options['user']!r} (password {options['password']!r}) for local use"
                )
