from __future__ import annotations

from typing import Any

from django.http import Http404
from drf_spectacular.utils import OpenApiResponse, extend_schema, extend_schema_view
from rest_framework import mixins, permissions, status, viewsets
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.throttling import ScopedRateThrottle

from apps.analysis import services
from apps.analysis.models import Analysis
from apps.analysis.serializers import (
    ANALYSIS_INPUT_SCHEMA,
    AnalysisInputSerializer,
    AnalysisListSerializer,
    AnalysisSerializer,
)
from apps.teams import access
from clusterdesigner.api import ErrorSerializer
from clusterdesigner.ids import as_id
from clusterdesigner.parsers import JSONParser

ERRORS = {
    400: OpenApiResponse(ErrorSerializer, description="Bad input; fields name what is wrong."),
    401: OpenApiResponse(ErrorSerializer, description="Not signed in."),
    404: OpenApiResponse(ErrorSerializer, description="No such analysis of yours."),
    413: OpenApiResponse(ErrorSerializer, description="Request body over the size limit."),
    429: OpenApiResponse(ErrorSerializer, description="Too many analyses started; wait and retry."),
    503: OpenApiResponse(ErrorSerializer, description="The task queue is unreachable; try again later."),
}
LIST_ERRORS = {
    400: OpenApiResponse(ErrorSerializer, description="A bad filter; fields name it."),
    401: ERRORS[401],
    404: OpenApiResponse(ErrorSerializer, description="No such page."),
}


class CreateThrottle(ScopedRateThrottle):
    """At most the scope's rate of analyses started per user, counted atomically in the shared cache.

    DRF's throttle reads a list of request times and writes it back, so requests at the same moment all read
    the same list and all pass (100 at once passed a 60/minute limit 64 times). Here each request adds one to
    a counter the cache increments atomically (Redis INCR; LocMemCache under its lock) and passes while the
    count is within the rate. The window opens at the first request and lasts the rate's period. With the
    cache unreachable the request passes: the limit protects the workers, it is not worth a 500."""

    scope_attr = "throttle_scope"
    # Not DRF's key: a counter, not a list of times (an old list under the same key would not increment).
    cache_format = "throttle-count:%(scope)s:%(ident)s"

    def allow_request(self, request: Request, view: Any) -> bool:
        if request.method != "POST":
            return True
        self.scope = getattr(view, self.scope_attr, None)
        if not self.scope:
            return True
        self.rate = self.get_rate()
        self.num_requests, self.duration = self.parse_rate(self.rate)
        self.key = self.get_cache_key(request, view)
        if self.key is None or self.num_requests is None or self.duration is None:
            return True
        count = self._count(self.key, self.duration)
        return count is None or count <= self.num_requests

    def _count(self, key: str, duration: int) -> int | None:
        """This request's number in the current window; None when the cache cannot count."""
        for _attempt in range(2):
            if self.cache.add(key, 0, timeout=duration):
                self.cache.set(f"{key}:opened", self.timer(), timeout=duration)
            try:
                return int(self.cache.incr(key))
            except ValueError:  # the window ended between add and incr (or the cache is unavailable)
                continue
        return None

    def wait(self) -> float | None:
        opened = self.cache.get(f"{self.key}:opened")
        if opened is None or self.duration is None:
            return self.duration
        return max(0.0, self.duration - (self.timer() - float(opened)))


@extend_schema_view(
    list=extend_schema(responses={200: AnalysisListSerializer(many=True), **LIST_ERRORS}),
    retrieve=extend_schema(responses={200: AnalysisSerializer, 401: ERRORS[401], 404: ERRORS[404]}),
)
class AnalysisViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, viewsets.GenericViewSet[Any]):
    """Analyses run by Celery workers. POST answers 202 with the id and URL; GET shows status and progress."""

    permission_classes = [permissions.IsAuthenticated]
    # JSON only: params is a nested object, which a form cannot carry.
    parser_classes = [JSONParser]
    throttle_classes = [CreateThrottle]
    throttle_scope = "analysis-create"
    filterset_fields = ["kind", "status"]
    ordering_fields = ["created_at", "finished_at"]

    def get_queryset(self) -> Any:
        if getattr(self, "swagger_fake_view", False):
            return Analysis.objects.none()
        return access.visible_to(self.request.user, Analysis.objects.select_related("design_version"))

    def get_serializer_class(self) -> Any:
        return AnalysisListSerializer if self.action == "list" else AnalysisSerializer

    def get_object(self) -> Analysis:
        raw = str(self.kwargs["pk"])
        pk = as_id(raw)
        analysis = self.get_queryset().filter(pk=pk).first() if pk is not None else None
        if analysis is None:
            raise Http404("No analysis with this id is yours.")
        return services.analysis_refresh(analysis=analysis)

    @extend_schema(request=ANALYSIS_INPUT_SCHEMA, responses={202: AnalysisSerializer, **ERRORS})
    def create(self, request: Request) -> Response:
        form = AnalysisInputSerializer(data=request.data)
        form.is_valid(raise_exception=True)
        analysis = services.analysis_create(owner=request.user, **form.validated_data)
        analysis.refresh_from_db()
        data = AnalysisSerializer(analysis, context={"request": request}).data
        # str(): the URL field is a DRF Hyperlink, and wsgiref rejects header values that are not exactly str.
        return Response(data, status=status.HTTP_202_ACCEPTED, headers={"Location": str(data["url"])})
