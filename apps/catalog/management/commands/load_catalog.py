from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand

from apps.catalog.services import catalog_load_seed


class Command(BaseCommand):
    help = "Load (or refresh) the seed hardware and price catalog shipped with the project."

    def handle(self, *args: Any, **options: Any) -> None:
        counts = catalog_load_seed()
        self.stdout.write(", ".join(f"{count} {name.replace('_', ' ')}" for name, count in counts.items()))
