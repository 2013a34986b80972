"""POST /api/v1/serving/estimate/: a serving estimate, computed and answered (nothing is stored)."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import permissions
from rest_framework.exceptions import ParseError
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from apps.serving import services
from apps.serving.serializers import ServingInputSerializer, ServingResultSerializer
from clusterdesigner.api import ErrorSerializer
from clusterdesigner.parsers import JSONParser


class ServingEstimateView(APIView):
    """A calculator: anyone may ask, nothing is written, the answer depends only on the request and the
    catalog."""

    permission_classes = [permissions.AllowAny]
    parser_classes = [JSONParser]
    token_scope = "read"  # a read-only API token may ask: nothing is written

    @extend_schema(
        operation_id="serving_estimate",
        request=ServingInputSerializer,
        responses={
            200: ServingResultSerializer,
            400: OpenApiResponse(ErrorSerializer, description="Bad input; fields name what is wrong."),
            413: OpenApiResponse(ErrorSerializer, description="Request body over the size limit."),
        },
    )
    def post(self, request: Request) -> Response:
        form = ServingInputSerializer(data=request.data)
        form.is_valid(raise_exception=True)
        body = request.data
        if not isinstance(body, dict):  # not reached: is_valid refuses a body that is not an object
            raise ParseError("the body must be a JSON object")
        result, deploy = services.serving_estimate_with_deploy(request=body)
        return Response(ServingResultSerializer({**result.to_json(), "deploy": deploy}).data)
