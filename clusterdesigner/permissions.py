"""Default API permission, pagination and filter backend (kept apart from api.py: DRF imports these while it
loads)."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest
from django_filters import BooleanFilter
from django_filters.rest_framework import DjangoFilterBackend
from drf_spectacular.contrib.django_filters import DjangoFilterExtension
from drf_spectacular.plumbing import get_manager, get_view_model
from rest_framework import permissions
from rest_framework.pagination import PageNumberPagination
from rest_framework.request import Request

from clusterdesigner.schema import FILTER_TEXT


class IsStaffOrReadOnly(permissions.BasePermission):
    """Anyone reads; only staff write (the catalog's rule)."""

    def has_permission(self, request: Request, view: Any) -> bool:
        if request.method in permissions.SAFE_METHODS:
            return True
        return bool(request.user and request.user.is_staff)


class Pagination(PageNumberPagination):
    page_size_query_param = "page_size"
    max_page_size = 500

    def get_page_size(self, request: Request) -> int | None:
        """A page_size that is not a whole number from 1 is a 400 naming it (DRF silently uses the default);
        above max_page_size it is capped."""
        raw = request.query_params.get(self.page_size_query_param)
        if raw is None:
            return self.page_size
        if not (raw.isascii() and raw.isdigit()) or int(raw) < 1:
            from rest_framework.exceptions import ValidationError

            raise ValidationError({self.page_size_query_param: ["must be a whole number from 1"]})
        return min(int(raw), self.max_page_size)

    def get_page_number(self, request: Request, paginator: Any) -> Any:
        """``?page=`` (empty) is a 400 like any page that is not a whole number (DRF reads it as page 1)."""
        raw = request.query_params.get(self.page_query_param)
        if raw is not None and raw not in self.last_page_strings and not (raw.isascii() and raw.isdigit()):
            from rest_framework.exceptions import ValidationError

            raise ValidationError({self.page_query_param: ["must be a whole number from 1"]})
        return super().get_page_number(request, paginator)

    def get_schema_operation_parameters(self, view: Any) -> list[dict[str, Any]]:
        parameters = super().get_schema_operation_parameters(view)
        for parameter in parameters:
            if parameter["name"] in (self.page_query_param, self.page_size_query_param):
                parameter["schema"]["minimum"] = 1
        return parameters


class StrictFilterBackend(DjangoFilterBackend):
    """django-filter ignores a filter whose value is empty or unreadable (``?kind=``, ``?has_nvlink=maybe``)
    and returns everything, which looks like a match. In the API a filter that is given must have a valid
    value: anything else is a 400 naming it. (The HTML catalog pages keep django-filter's form behaviour.)"""

    def get_filterset(self, request: HttpRequest, queryset: Any, view: Any) -> Any:
        filterset = super().get_filterset(request, queryset, view)
        if filterset is None or not filterset.is_valid():
            return filterset
        errors = {}
        for name, declared in filterset.filters.items():
            if name not in request.GET:  # DRF's Request passes .GET through: its query_params
                continue
            raw = request.GET.get(name, "")
            if isinstance(declared, BooleanFilter) and raw.lower() not in ("true", "false"):
                errors[name] = ["must be true or false"]
            elif filterset.form.cleaned_data.get(name) in (None, "", [], ()):
                errors[name] = ["give a value (not only whitespace), or leave this filter out"]
        if errors:
            from rest_framework.exceptions import ValidationError

            raise ValidationError(errors)
        return filterset


class StrictFilterSchema(DjangoFilterExtension):
    """The schema states what StrictFilterBackend refuses: an empty text filter (``?vendor=``) or one of only
    whitespace (``?vendor=%20``, which the filter strips to empty), and a boolean filter (a method filter
    reads as a string) that is not true or false are 400s."""

    target_class = "clusterdesigner.permissions.StrictFilterBackend"  # imported when the schema is built
    priority = 1

    def get_schema_operation_parameters(self, auto_schema: Any, *args: Any, **kwargs: Any) -> list[Any]:
        # the base named, not super(): mypy's untyped_calls_exclude (pyproject.toml) sees the callee's module
        parameters: list[dict[str, Any]] = DjangoFilterExtension.get_schema_operation_parameters(
            self, auto_schema, *args, **kwargs
        )
        model = get_view_model(auto_schema.view)
        filterset_class = model and self.target.get_filterset_class(
            auto_schema.view, get_manager(model).none()
        )
        declared = filterset_class.base_filters if filterset_class else {}
        for parameter in parameters:
            schema = parameter.get("schema", {})
            if isinstance(declared.get(parameter["name"]), BooleanFilter):
                schema.clear()
                schema["type"] = "boolean"
            elif schema.get("type") == "string" and "enum" not in schema:
                schema["minLength"] = 1
                schema["pattern"] = FILTER_TEXT
        return parameters
