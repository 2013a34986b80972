"""Measured runs REST API: the owner's runs with the engine against each, a CSV import (all rows or none), a
log excerpt parser (its own view, which a read-only token may call: it saves nothing), the summary by regime
and the calibration switch."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import OpenApiResponse, extend_schema, extend_schema_view
from rest_framework import permissions, status, viewsets
from rest_framework.decorators import action
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from apps.measurements import selectors, services
from apps.measurements.logs import log_parse
from apps.measurements.models import MeasuredRun
from apps.measurements.serializers import (
    CalibrationSerializer,
    CsvImportSerializer,
    LogInputSerializer,
    MeasuredRunInputSerializer,
    MeasuredRunSerializer,
    ParsedLogSerializer,
    SummarySerializer,
)
from clusterdesigner.api import ErrorSerializer
from clusterdesigner.parsers import JSONParser
from clusterdesigner.views import or_404

ERRORS = {
    400: OpenApiResponse(ErrorSerializer, description="Bad input; fields name what is wrong."),
    401: OpenApiResponse(ErrorSerializer, description="Not signed in."),
    404: OpenApiResponse(ErrorSerializer, description="No such run of yours."),
}


@extend_schema_view(
    list=extend_schema(responses={200: MeasuredRunSerializer(many=True), **ERRORS}),
    retrieve=extend_schema(responses={200: MeasuredRunSerializer, **ERRORS}),
    destroy=extend_schema(responses={204: None, **ERRORS}),
)
class MeasuredRunViewSet(viewsets.ModelViewSet[MeasuredRun]):
    """Your measured training runs, each beside the engine's estimate of it. Only the owner sees a run."""

    serializer_class = MeasuredRunSerializer
    permission_classes = [permissions.IsAuthenticated]
    parser_classes = [JSONParser]
    ordering_fields = ["measured_on", "created_at", "nodes"]
    lookup_value_regex = r"[0-9]{1,18}"
    http_method_names = ["get", "post", "patch", "delete", "head", "options"]

    def get_queryset(self) -> Any:
        return selectors.run_list(user=self.request.user)

    def get_object(self) -> MeasuredRun:
        return or_404(selectors.run_get(user=self.request.user, run_id=int(self.kwargs["pk"])))

    def _out(self, runs: list[MeasuredRun], many: bool = True) -> Any:
        rows = {row.run.pk: row for row in selectors.run_rows(runs=runs)}
        return MeasuredRunSerializer(runs if many else runs[0], many=many, context={"rows": rows}).data

    def list(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        page = self.paginate_queryset(self.filter_queryset(self.get_queryset()))
        return self.get_paginated_response(self._out(list(page or [])))

    def retrieve(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        return Response(self._out([self.get_object()], many=False))

    @extend_schema(request=MeasuredRunInputSerializer, responses={201: MeasuredRunSerializer, **ERRORS})
    def create(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        form = MeasuredRunInputSerializer(data=request.data)
        form.is_valid(raise_exception=True)
        run = services.run_create(owner=request.user, data=form.validated_data)
        return Response(self._out([run], many=False), status=status.HTTP_201_CREATED)

    @extend_schema(request=MeasuredRunInputSerializer, responses={200: MeasuredRunSerializer, **ERRORS})
    def partial_update(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        run = self.get_object()
        form = MeasuredRunInputSerializer(run, data=request.data, partial=True)
        form.is_valid(raise_exception=True)
        run = services.run_update(run=run, data=form.validated_data)
        return Response(self._out([run], many=False))

    def destroy(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        services.run_delete(run=self.get_object())
        return Response(status=status.HTTP_204_NO_CONTENT)

    @extend_schema(request=CsvImportSerializer, responses={201: MeasuredRunSerializer(many=True), **ERRORS})
    @action(detail=False, methods=["post"], url_path="import")
    def import_csv(self, request: Request) -> Response:
        """Import runs from CSV text (a header row of the run's field names): every row saved, or none."""
        form = CsvImportSerializer(data=request.data)
        form.is_valid(raise_exception=True)
        runs = services.runs_import_csv(owner=request.user, text=form.validated_data["csv"])
        return Response(self._out(runs), status=status.HTTP_201_CREATED)

    @extend_schema(responses={200: SummarySerializer, **ERRORS})
    @action(detail=False, methods=["get"])
    def summary(self, request: Request) -> Response:
        """Your runs' errors against the engine (all, then by regime) and the factors fitted on them."""
        return Response(SummarySerializer(selectors.summary_get(user=request.user)).data)

    @extend_schema(request=CalibrationSerializer, responses={200: SummarySerializer, **ERRORS})
    @action(detail=False, methods=["post"])
    def calibration(self, request: Request) -> Response:
        """Switch your calibration on or off for your designs' training estimates."""
        form = CalibrationSerializer(data=request.data)
        form.is_valid(raise_exception=True)
        services.calibration_set(owner=request.user, enabled=form.validated_data["enabled"])
        return Response(SummarySerializer(selectors.summary_get(user=request.user)).data)


class LogParseView(APIView):
    """The figures of a Megatron-LM, NeMo or torchtitan log excerpt; nothing is saved."""

    permission_classes = [permissions.IsAuthenticated]
    parser_classes = [JSONParser]
    token_scope = "read"  # a read-only API token may ask: nothing is written

    @extend_schema(request=LogInputSerializer, responses={200: ParsedLogSerializer, **ERRORS})
    def post(self, request: Request) -> Response:
        form = LogInputSerializer(data=request.data)
        form.is_valid(raise_exception=True)
        return Response(ParsedLogSerializer(log_parse(text=form.validated_data["log"]).to_json()).data)
