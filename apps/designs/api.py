"""Designs REST API: CRUD with versions, clone, synchronous evaluation, share links, exports."""

from __future__ import annotations

from collections.abc import Hashable
from typing import Any

from django.db import connection
from django.http import Http404, HttpResponse
from django.urls import reverse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema, extend_schema_view
from rest_framework import mixins, permissions, status, viewsets
from rest_framework.decorators import action
from rest_framework.exceptions import APIException, ValidationError
from rest_framework.request import Request
from rest_framework.response import Response

from apps.designs import diffs, drafts, runners, selectors, services, share_links
from apps.designs import prices as design_prices
from apps.designs.export_files import EXPORTS, export_response
from apps.designs.filters import DesignFilterSet
from apps.designs.models import DesignVersion, ShareLink
from apps.designs.pricing import evaluation_memo_key_by_token
from apps.designs.result_serializers import DesignDiffSerializer
from apps.designs.serializers import (
    AnalysisStartedSerializer,
    CloneSerializer,
    DesignInputSerializer,
    DesignSerializer,
    DesignUpdateSerializer,
    DesignVersionSerializer,
    DraftInputSerializer,
    DraftSaveSerializer,
    DraftSerializer,
    EvaluationSerializer,
    PriceStatusSerializer,
    SharedDesignSerializer,
    ShareLinkCreatedSerializer,
    ShareLinkInputSerializer,
    ShareLinkSerializer,
    VersionQuerySerializer,
)
from apps.teams import services as team_services
from apps.teams.serializers import TeamMoveSerializer
from clusterdesigner import fastpath, memo
from clusterdesigner.api import ErrorSerializer, FileNegotiation
from clusterdesigner.api_tokens import (
    api_token_accepted_quietly,
    api_token_header_hash,
    api_token_passes_quietly,
)
from clusterdesigner.ids import MAX_ID
from clusterdesigner.memo import JSONText
from clusterdesigner.parsers import JSONParser
from clusterdesigner.renderers import JSONRenderer
from clusterdesigner.views import or_404

ERRORS = {
    400: OpenApiResponse(ErrorSerializer, description="Bad input; fields name what is wrong."),
    401: OpenApiResponse(ErrorSerializer, description="Not signed in."),
    404: OpenApiResponse(ErrorSerializer, description="No such design visible to you."),
}
LIST_ERRORS = {
    400: OpenApiResponse(ErrorSerializer, description="A bad filter; fields name it."),
    401: ERRORS[401],
    404: OpenApiResponse(ErrorSerializer, description="No such page."),
}
TOO_LARGE = {413: OpenApiResponse(ErrorSerializer, description="Request body over the size limit.")}

DIFF_FORMATS = ("json", "xlsx")
DIFF_ORDER = OpenApiParameter(
    "order",
    str,
    required=False,
    description="The order in which the attribution sets the changed inputs to their new values, "
    "comma-separated input paths, each once (default: their order in the spec).",
)
DIFF_SCHEMA: dict[str, Any] = dict(
    responses={
        (200, "application/json"): DesignDiffSerializer,
        (200, diffs.XLSX_TYPE): OpenApiTypes.BINARY,
        **ERRORS,
    },
)


UPDATE_SCHEMA: dict[str, Any] = dict(
    request=DesignUpdateSerializer,
    parameters=[
        OpenApiParameter(
            "If-Match",
            str,
            OpenApiParameter.HEADER,
            required=False,
            description='The version the edit is based on, e.g. "3" (or "version" in the body).',
        )
    ],
    description=(
        "Edit the design, making a new version (with an optional message saying why). Send the version the "
        'edit is based on, as If-Match or as "version" in the body: without it the answer is 428, and if '
        "the design was edited since, 409."
    ),
    responses={
        200: DesignSerializer,
        409: OpenApiResponse(ErrorSerializer, description="Edited since."),
        428: OpenApiResponse(ErrorSerializer, description="No version given."),
        **ERRORS,
        **TOO_LARGE,
    },
)


DRAFT_ERRORS = {
    **ERRORS,
    404: OpenApiResponse(
        ErrorSerializer,
        description="No such design that you may edit (viewers and others have no drafts), or no draft.",
    ),
}
# Every draft action needs edit access, GET included: a draft is an edit in progress.
DRAFT_ACTIONS = {"draft", "save_draft"}

# POST actions that only read the design (a clone is a new design of the caller's; an evaluation is derived).
READ_ACTIONS = {"clone", "evaluate", "analyse"}
# The scope an API token needs to evaluate: it stores nothing (the action's, and the fast path's probe's).
EVALUATE_SCOPE = "read"


class VersionRequired(APIException):
    """An edit that names no base version: 428, in the envelope like every error (clusterdesigner.api)."""

    status_code = status.HTTP_428_PRECONDITION_REQUIRED
    default_code = "version_required"
    default_detail = (
        'Send the version you edited ("version" in the body or an If-Match header) so concurrent edits '
        "cannot overwrite each other."
    )


def _base_version(request: Request, body: dict[str, Any]) -> int | None:
    header = request.headers.get("If-Match", "").strip().strip("W/").strip('"')
    if header:
        try:
            return int(header)
        except ValueError:
            return -1
    return body.get("version")


@extend_schema_view(
    list=extend_schema(responses={200: DesignSerializer(many=True), **LIST_ERRORS}),
    retrieve=extend_schema(responses={200: DesignSerializer, **ERRORS}),
    destroy=extend_schema(responses={204: None, **ERRORS}),
)
class DesignViewSet(
    mixins.ListModelMixin, mixins.RetrieveModelMixin, mixins.DestroyModelMixin, viewsets.GenericViewSet[Any]
):
    """Saved designs. The owner edits and deletes; others read only designs shared with the organisation."""

    serializer_class = DesignSerializer
    filterset_class = DesignFilterSet
    permission_classes = [permissions.IsAuthenticated]
    # JSON only: a spec is a nested object, which a form cannot carry.
    parser_classes = [JSONParser]
    ordering_fields = ["updated_at", "created_at", "name"]
    search_fields = ["name", "description"]
    # What an API token must hold to send this view an unsafe method (clusterdesigner.api_tokens); evaluate
    # computes from a stored design and writes none of it, so a read-only token may ask it.
    token_scope = "designs"

    def get_queryset(self) -> Any:
        return selectors.design_list(user=self.request.user).prefetch_related("versions")

    def get_object(self) -> Any:
        """The design for this request (apps/teams/access.py's rule): reading, cloning and evaluating need
        read access, deleting needs admin (owner, or a team owner), every other write needs edit. A design the
        user may read but not change is a 404 for the change, as one they cannot see."""
        design_id = url_id(self.kwargs["pk"])
        design = or_404(selectors.design_get(user=self.request.user, design_id=design_id))
        if self.action == "destroy":
            design = or_404(selectors.design_get_administered(user=self.request.user, design_id=design_id))
        elif self.action in DRAFT_ACTIONS or (
            self.request.method not in permissions.SAFE_METHODS and self.action not in READ_ACTIONS
        ):
            design = or_404(selectors.design_get_editable(user=self.request.user, design_id=design_id))
        return design

    def _respond(self, design: Any, code: int = 200) -> Response:
        response = Response(DesignSerializer(design, context={"request": self.request}).data, status=code)
        response["ETag"] = f'"{design.version}"'
        return response

    def retrieve(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        return self._respond(self.get_object())

    @extend_schema(request=DesignInputSerializer, responses={201: DesignSerializer, **ERRORS, **TOO_LARGE})
    def create(self, request: Request) -> Response:
        form = DesignInputSerializer(data=request.data)
        form.is_valid(raise_exception=True)
        design = services.design_create(owner=request.user, **form.validated_data)
        return self._respond(design, status.HTTP_201_CREATED)

    @extend_schema(**UPDATE_SCHEMA)
    def partial_update(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        design = self.get_object()
        form = DesignUpdateSerializer(data=request.data)
        form.is_valid(raise_exception=True)
        data = dict(form.validated_data)
        base = _base_version(request, data)
        data.pop("version", None)
        if base is None:
            raise VersionRequired()
        # A services.VersionConflict is the handler's 409, naming the current version.
        design = services.design_update(design=design, user=request.user, base_version=base, **data)
        return self._respond(design)

    @extend_schema(**UPDATE_SCHEMA)
    def update(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        """The same as PATCH: fields left out keep their value."""
        return self.partial_update(request, *args, **kwargs)

    def perform_destroy(self, instance: Any) -> None:
        services.design_delete(design=instance)

    @extend_schema(filters=False, responses={200: DesignVersionSerializer(many=True), **ERRORS})
    @action(detail=True, methods=["get"])
    def versions(self, request: Request, pk: str) -> Response:
        design = self.get_object()
        page = self.paginate_queryset(design.versions.select_related("created_by").all())
        return self.get_paginated_response(DesignVersionSerializer(page, many=True).data)

    @extend_schema(
        methods=["get"],
        responses={200: DraftSerializer, **DRAFT_ERRORS},
        description="Your unsaved draft of the design (404 when you have none).",
    )
    @extend_schema(
        methods=["put"],
        request=DraftInputSerializer,
        responses={200: DraftSerializer, **DRAFT_ERRORS, **TOO_LARGE},
        description=(
            "Write your draft (made from the current version if you have none): the fields given replace the "
            "draft's, the rest are kept; no version is made. The spec is checked as a saved one is (400 "
            "naming the field; the draft keeps its last good state)."
        ),
    )
    @extend_schema(
        methods=["delete"], responses={204: None, **DRAFT_ERRORS}, description="Discard your draft."
    )
    @action(detail=True, methods=["get", "put", "delete"])
    def draft(self, request: Request, pk: str) -> Response:
        design = self.get_object()  # edit access, or 404
        if request.method == "DELETE":
            drafts.draft_discard(design=design, user=request.user)
            return Response(status=status.HTTP_204_NO_CONTENT)
        if request.method == "PUT":
            form = DraftInputSerializer(data=request.data)
            form.is_valid(raise_exception=True)
            data = dict(form.validated_data)
            found = drafts.draft_put(
                design=design, user=request.user, base_version=data.pop("version", None), **data
            )
        else:
            found = or_404(drafts.draft_get(design=design, user=request.user))
        return Response(DraftSerializer(found).data)

    @extend_schema(
        request=DraftSaveSerializer,
        responses={
            201: DesignSerializer,
            409: OpenApiResponse(
                ErrorSerializer, description="Saved since the draft's base version: the draft is kept."
            ),
            **DRAFT_ERRORS,
        },
        description="Save your draft as the design's next version, with a message; the draft is then gone.",
    )
    @action(detail=True, methods=["post"], url_path="draft/save")
    def save_draft(self, request: Request, pk: str) -> Response:
        design = self.get_object()
        form = DraftSaveSerializer(data=request.data)
        form.is_valid(raise_exception=True)
        saved = drafts.draft_save(design=design, user=request.user, message=form.validated_data["message"])
        return self._respond(saved, status.HTTP_201_CREATED)

    @extend_schema(request=CloneSerializer, responses={201: DesignSerializer, **ERRORS})
    @action(detail=True, methods=["post"])
    def clone(self, request: Request, pk: str) -> Response:
        form = CloneSerializer(data=request.data)
        form.is_valid(raise_exception=True)
        design = services.design_clone(design=self.get_object(), owner=request.user, **form.validated_data)
        return self._respond(design, status.HTTP_201_CREATED)

    @extend_schema(
        request=TeamMoveSerializer,
        responses={200: DesignSerializer, **ERRORS},
        description=(
            "Move the design into a team: for those who may edit it and are an owner or editor of that team "
            "(400 naming team otherwise). The team's members then read it by role; it stays shared with the "
            "organisation if it was."
        ),
    )
    @action(detail=True, methods=["post"])
    def move(self, request: Request, pk: str) -> Response:
        design = self.get_object()  # edit access, or 404
        form = TeamMoveSerializer(data=request.data)
        form.is_valid(raise_exception=True)
        team_services.owned_move(user=request.user, obj=design, team_id=form.validated_data["team"])
        return self._respond(or_404(selectors.design_get(user=request.user, design_id=design.pk)))

    @extend_schema(
        request=None,
        parameters=[VersionQuerySerializer],
        responses={200: EvaluationSerializer, 202: AnalysisStartedSerializer, **ERRORS},
        description=(
            "Training and cost result for a fixed layout, synchronously. For a design whose layout is "
            '"search", starts an analysis and answers 202 with its id and URL.'
        ),
    )
    @action(detail=True, methods=["post"], token_scope=EVALUATE_SCOPE)
    def evaluate(self, request: Request, pk: str) -> Response:
        # Reading is enough (get_object's rule for this action): the design and version in one query.
        design_id = url_id(pk)
        try:
            number = _int_param(request, "version")
        except ValidationError:
            # A design you can't see: 404 before the bad version number's 400.
            or_404(selectors.design_get(user=request.user, design_id=design_id))
            raise
        version = or_404(
            selectors.design_version_get_visible(user=request.user, design_id=design_id, number=number)
        )
        if version.spec.get("parallelism") == "search":
            # Too long for a request: the registered runner (the analysis app's) starts it on the workers.
            run = runners.searched_runner()(user=request.user, version=version)
            started = {"id": run.id, "url": request.build_absolute_uri(run.path), "status": run.status}
            return Response(started, status=status.HTTP_202_ACCEPTED)
        result = services.design_evaluate_json(version=version)
        response = Response(result)
        if isinstance(result, JSONText) and result.kept_as is not None and number is None:
            memo.keep(response, result.kept_as)  # the current version's kept text (_evaluate_probe)
        return response

    @extend_schema(
        responses={200: PriceStatusSerializer, **ERRORS},
        description=(
            "Whether the current version's prices are stale: each figure resolved now (design value, price"
            " book entry, catalog) against the one last seen or accepted, and the verdict before and after."
        ),
    )
    @action(detail=True, methods=["get"], url_path="prices")
    def prices(self, request: Request, pk: str) -> Response:
        status_now = design_prices.design_price_status_now(design=self.get_object())
        return Response(PriceStatusSerializer(status_now).data)

    @extend_schema(
        request=None,
        responses={200: PriceStatusSerializer, **ERRORS},
        description="Accept the prices the current version resolves now (editors, owners): no longer stale.",
    )
    @action(detail=True, methods=["post"], url_path="prices/accept")
    def prices_accept(self, request: Request, pk: str) -> Response:
        design = self.get_object()  # edit access, or 404
        return Response(PriceStatusSerializer(design_prices.design_price_accept(design=design)).data)

    @extend_schema(
        parameters=[
            OpenApiParameter("format", str, enum=list(EXPORTS), required=True),
            VersionQuerySerializer,
        ],
        responses={
            # Each format's own type (the schema said application/octet-stream for all of them): text for
            # the text formats (CSV, shell, YAML, JSON), binary only for the spreadsheet.
            **{
                (200, content_type): OpenApiTypes.BINARY if extension == "xlsx" else OpenApiTypes.STR
                for content_type, extension, *_ in EXPORTS.values()
            },
            **ERRORS,
        },
        description=(
            "Assumptions and results as CSV or XLSX, or a launch configuration for the chosen layout."
        ),
    )
    @action(detail=True, methods=["get"], url_path="export", content_negotiation_class=FileNegotiation)
    def export(self, request: Request, pk: str) -> HttpResponse:
        design = self.get_object()
        version = or_404(selectors.design_version_get(design=design, number=_int_param(request, "version")))
        evaluation = services.design_evaluate(version=version)
        return export_response(
            evaluation.result,
            request.query_params.get("format"),
            f"design-{design.pk}-v{version.number}",
            fabric_kind=selectors.evaluation_fabric_kind(evaluation=evaluation),
        )

    @extend_schema(
        filters=False,
        parameters=[
            OpenApiParameter("from", int, description="The old version (default: the one before to)."),
            OpenApiParameter("to", int, description="The new version (default: the current one)."),
            DIFF_ORDER,
            OpenApiParameter("format", str, enum=list(DIFF_FORMATS), description="json (default) or xlsx."),
        ],
        operation_id="designs_diff_versions",
        description="What changed between two versions of the design and why the answer moved: the inputs "
        "that differ, the outputs with their deltas, and the change in the verdict's NPV difference "
        "attributed to the inputs one at a time (and by Shapley value for at most 8 inputs).",
        **DIFF_SCHEMA,
    )
    @action(detail=True, methods=["get"], content_negotiation_class=FileNegotiation)
    def diff(self, request: Request, pk: str) -> HttpResponse | Response:
        design = self.get_object()
        new_number = _int_param(request, "to") or design.version
        old_number = _int_param(request, "from") or max(new_number - 1, 1)
        new = or_404(selectors.design_version_get(design=design, number=new_number))
        old = or_404(selectors.design_version_get(design=design, number=old_number))
        return _diff_response(request, old, new)

    @extend_schema(
        filters=False,
        parameters=[
            OpenApiParameter(
                "a", int, required=True, description="The old design's id (its current version)."
            ),
            OpenApiParameter(
                "b", int, required=True, description="The new design's id (its current version)."
            ),
            DIFF_ORDER,
            OpenApiParameter("format", str, enum=list(DIFF_FORMATS), description="json (default) or xlsx."),
        ],
        operation_id="designs_diff_two_designs",
        description="Two designs compared as two versions: design a's current version → design b's.",
        **DIFF_SCHEMA,
    )
    @action(detail=False, methods=["get"], url_path="diff", content_negotiation_class=FileNegotiation)
    def diff_designs(self, request: Request) -> HttpResponse | Response:
        sides = []
        for name in ("a", "b"):
            number = _int_param(request, name)
            if number is None:
                raise ValidationError({name: ["This field is required."]})
            sides.append(or_404(selectors.design_version_get_visible(user=request.user, design_id=number)))
        return _diff_response(request, sides[0], sides[1])

    @extend_schema(methods=["get"], filters=False, responses={200: ShareLinkSerializer(many=True), **ERRORS})
    @extend_schema(
        methods=["post"],
        request=ShareLinkInputSerializer,
        responses={201: ShareLinkCreatedSerializer, **ERRORS},
    )
    @action(detail=True, methods=["get", "post"], url_path="share-links")
    def share_links(self, request: Request, pk: str) -> Response:
        # Listing and making links is for those who may edit the design; a link itself never writes.
        design = or_404(selectors.design_get_editable(user=request.user, design_id=url_id(pk)))
        if request.method == "GET":
            page = self.paginate_queryset(selectors.share_link_list(design=design))
            return self.get_paginated_response(ShareLinkSerializer(page, many=True).data)
        form = ShareLinkInputSerializer(data=request.data)
        form.is_valid(raise_exception=True)
        link, token = services.share_link_create(design=design, user=request.user, **form.validated_data)
        data = dict(ShareLinkSerializer(link).data)
        data.update(token=token, url=request.build_absolute_uri(reverse("dashboard:share", args=[token])))
        return Response(data, status=status.HTTP_201_CREATED)

    @extend_schema(request=None, responses={200: ShareLinkSerializer, **ERRORS})
    @action(detail=True, methods=["post"], url_path=r"share-links/(?P<link_id>\d+)/revoke")
    def revoke_share_link(self, request: Request, pk: str, link_id: str) -> Response:
        design = or_404(selectors.design_get_editable(user=request.user, design_id=url_id(pk)))
        link = ShareLink.objects.filter(design=design, pk=url_id(link_id)).first()
        if link is None:
            raise Http404("No such share link on this design.")
        services.share_link_revoke(link=link)
        # Read back with its opens still in the log (selectors.share_link_list), as the list shows it.
        return Response(ShareLinkSerializer(selectors.share_link_list(design=design).get(pk=link.pk)).data)


def _diff_response(request: Request, old: DesignVersion, new: DesignVersion) -> HttpResponse | Response:
    """The diff of two versions the caller may read, as JSON or (``?format=xlsx``) a workbook."""
    fmt = request.query_params.get("format") or "json"
    if fmt not in DIFF_FORMATS:
        raise ValidationError({"format": [f"must be one of {', '.join(DIFF_FORMATS)}"]})
    found = diffs.version_diff(old=old, new=new, order=diffs.parse_order(request.query_params.get("order")))
    if fmt == "json":
        return Response(found.to_json())
    response = HttpResponse(diffs.diff_xlsx(found), content_type=diffs.XLSX_TYPE)
    stem = f"diff-{old.design_id}-v{old.number}-{new.design_id}-v{new.number}"
    response["Content-Disposition"] = f'attachment; filename="{stem}.xlsx"'
    return response


def url_id(raw: Any) -> int:
    """An id from the URL; anything but a whole number a database key can hold is no such object (404)."""
    try:
        value = int(raw)
    except (TypeError, ValueError):
        raise Http404 from None
    if not 0 < value <= MAX_ID:
        raise Http404
    return value


def _int_param(request: Request, name: str) -> int | None:
    raw = request.query_params.get(name)
    if raw in (None, ""):
        return None
    try:
        value = int(raw)
    except ValueError:
        raise ValidationError({name: ["must be a whole number"]}) from None
    if not 0 < value <= MAX_ID:
        raise ValidationError({name: ["must be a whole number from 1"]})
    return value


class SharedDesignView(viewsets.ViewSet):
    """Read-only access to a frozen design evaluation through a share link. No sign-in; GET only."""

    permission_classes = [permissions.AllowAny]
    authentication_classes: list[Any] = []

    def finalize_response(self, request: Request, response: Any, *args: Any, **kwargs: Any) -> Any:
        """Whoever holds the link reads it; no shared cache keeps it (a revoked link must stop at once), as
        the share page itself is sent."""
        response = super().finalize_response(request, response, *args, **kwargs)
        response["Cache-Control"] = "private, no-store"
        return response

    @extend_schema(
        parameters=[OpenApiParameter("id", str, OpenApiParameter.PATH, description="The share token.")],
        responses={200: SharedDesignSerializer, 404: ERRORS[404]},
    )
    def retrieve(self, request: Request, pk: str) -> Response:
        # The body is a function of what share_link_open returns (the link's id and dates and the evaluation
        # it froze, which is never changed once stored), so it is encoded once per process and kept
        # (clusterdesigner.memo), as the share page is: a kept body costs this one statement, which checks
        # revocation and expiry and counts the open on every request. Encoding the ~40 kB result took some
        # 5 ms of CPU a request. The kept text is what DRF's JSON renderer wrote, so the bytes are the same.
        # A link that follows the approved version is not kept: its body moves with the approval.
        key = or_404(
            share_links.share_link_opened(request, pk)
        )  # counted; None when revoked, expired or unknown
        follows = bool(key[-1])
        text = None if follows else memo.SHARED_JSON.get(key)
        if text is None:
            link = or_404(selectors.share_link_resolve(token=pk))
            evaluation = services.share_link_evaluation(link=link)
            version = evaluation.version
            body = {
                "name": version.name,
                "description": version.description,
                "version": version.number,
                "approved": follows and link.design.approved_version_id == version.pk,
                "evaluation": evaluation.result,
            }
            text = JSONRenderer().render(body).decode()
            if not follows:
                memo.SHARED_JSON.put(key, text, len(text))
        response = Response(JSONText(text))
        return response if follows else memo.keep(response, key)


def _evaluate_probe(environ: dict[str, Any], design_id: str) -> Hashable | None:
    """The fast path's probe of ``POST /api/v1/designs/<id>/evaluate/`` (no query string): the reads the view
    makes for a stored evaluation, the token with its user (TokenAuthentication's rules and the action's
    scope, when it writes nothing: api_token_passes_quietly), the current version if that user may read it,
    and the stamps of the memo key; the key, or None where the view answers otherwise (401, 403, 404) or must
    write (the token's last use). On PostgreSQL the three statements are one
    (pricing.evaluation_memo_key_by_token)."""
    digest = api_token_header_hash(environ.get("HTTP_AUTHORIZATION", ""))
    if digest is None or environ.get("QUERY_STRING"):
        return None
    if connection.vendor != "postgresql":
        token = api_token_accepted_quietly(environ["HTTP_AUTHORIZATION"], needed=EVALUATE_SCOPE)
        version = token and selectors.design_version_get_visible(user=token.user, design_id=int(design_id))
        return services.design_evaluation_key(version=version) if version else None
    found = evaluation_memo_key_by_token(key_hash=digest, design_id=int(design_id))
    if found is None or not api_token_passes_quietly(
        scope=found.scope,
        expires_at=found.expires_at,
        last_used_at=found.last_used_at,
        is_active=found.is_active,
        needed=EVALUATE_SCOPE,
    ):
        return None
    return found.key


# Answered before Django's stack when a kept answer fits (clusterdesigner.fastpath); the views keep() theirs.
fastpath.route(
    "design-evaluate",
    method="POST",
    kwarg="pk",
    value=r"[1-9][0-9]{0,17}",
    probe=_evaluate_probe,
    credentials=True,
)
fastpath.route(
    "shared-detail", method="GET", kwarg="pk", value=share_links.TOKEN, probe=share_links.share_link_probe
)
