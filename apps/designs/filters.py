from __future__ import annotations

import django_filters
from django.db.models import QuerySet

from apps.designs.models import Design
from apps.teams import access


class DesignFilterSet(django_filters.FilterSet):
    name = django_filters.CharFilter(lookup_expr="icontains")
    mine = django_filters.BooleanFilter(method="filter_mine", label="Only designs I can edit")

    class Meta:
        model = Design
        fields = ["name", "visibility", "is_demo", "mine"]

    def filter_mine(self, queryset: QuerySet[Design], name: str, value: bool) -> QuerySet[Design]:
        user = getattr(self.request, "user", None)
        # "Mine": the designs this user may change (their own, and their teams' where they edit).
        editable = access.editable_by(user, Design.objects.all()).values("pk")
        return queryset.filter(pk__in=editable) if value else queryset.exclude(pk__in=editable)
