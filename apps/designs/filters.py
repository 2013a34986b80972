from __future__ import annotations

import django_filters
from django.db.models import QuerySet

from apps.designs.models import Design


class DesignFilterSet(django_filters.FilterSet):
    name = django_filters.CharFilter(lookup_expr="icontains")
    mine = django_filters.BooleanFilter(method="filter_mine", label="Only my designs")

    class Meta:
        model = Design
        fields = ["name", "visibility", "is_demo", "mine"]

    def filter_mine(self, queryset: QuerySet[Design], name: str, value: bool) -> QuerySet[Design]:
        user = getattr(self.request, "user", None)
        return queryset.filter(owner=user) if value else queryset.exclude(owner=user)
