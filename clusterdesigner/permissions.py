"""Default API permission and pagination (kept apart from api.py: DRF imports these while it loads)."""

from __future__ import annotations

from typing import Any

from rest_framework import permissions
from rest_framework.pagination import PageNumberPagination
from rest_framework.request import Request


class IsStaffOrReadOnly(permissions.BasePermission):
    """Anyone reads; only staff write (the catalog's rule)."""

    def has_permission(self, request: Request, view: Any) -> bool:
        if request.method in permissions.SAFE_METHODS:
            return True
        return bool(request.user and request.user.is_staff)


class Pagination(PageNumberPagination):
    page_size_query_param = "page_size"
    max_page_size = 500
