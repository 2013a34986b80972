"""POST /api/v1/serving/estimate/: a serving estimate, computed and answered (nothing is stored)."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import permissions
from rest_framework.exceptions import ParseError
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from apps.designs.pricing import price_owner
from apps.serving import services
from apps.serving.serializers import ServingInputSerializer, ServingResultSerializer
from apps.teams.params import team_param
from clusterdesigner.api import ErrorSerializer
from clusterdesigner.engine.core.errors import InputError
from clusterdesigner.ids import as_id
from clusterdesigner.parsers import JSONParser


class ServingEstimateView(APIView):
    """A calculator: anyone may ask, nothing is written, the answer depends only on the request and the
    catalog."""

    permission_classes = [permissions.AllowAny]
    parser_classes = [JSONParser]
    token_scope = "read"  # a read-only API token may ask: nothing is written

    @extend_schema(
        operation_id="serving_estimate",
        parameters=[
            OpenApiParameter(
                "team",
                int,
                description="Price through this team's price book (you must be a member; 400 naming team "
                "otherwise). Without it a signed-in caller's own book applies, an anonymous one the catalog.",
            ),
            OpenApiParameter(
                "site",
                int,
                description="Price the owning option at this saved site (one you can read; 400 naming site "
                "otherwise): its power price, PUE and colocation, as a design placed there. The body's "
                "site, when given, wins.",
            ),
        ],
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
        owner = price_owner(user=request.user, team_id=team_param(request.query_params.get("team")))
        site_id = body.get("site", id_param(request.query_params.get("site"), field="site"))
        site = services.serving_site(user=request.user, site_id=site_id)
        body = {k: v for k, v in body.items() if k != "site"}
        estimate, deploy = services.serving_estimate_with_deploy(request=body, owner=owner, site=site)
        answer = {
            **estimate.result.to_json(),
            "deploy": deploy,
            "prices": estimate.prices,
            "price_findings": estimate.findings,
        }
        return Response(ServingResultSerializer(answer).data)


def id_param(raw: str | None, *, field: str) -> int | None:
    """A query parameter holding an id (``site``): None when absent or blank, a 400 naming ``field`` when
    not a whole number above 0. (``team`` is read as every app reads it, apps/teams/params.py.)"""
    if raw is None or raw.strip() == "":
        return None
    raw = raw.strip()
    value = as_id(raw)
    if value is None:
        raise InputError(f"must be a {field} id, got {raw!r}", field=field)
    return value
