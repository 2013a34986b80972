"""Comments and review state of a design version: /api/v1/designs/{id}/versions/{n}/comments/ and …/review/.
Whoever may read the design reads and comments; the author or an editor resolves; editors send a version for
review; owners approve or ask for changes. Others get 404, never 403."""

from __future__ import annotations

from typing import Any

from django.http import Http404
from drf_spectacular.utils import OpenApiParameter, extend_schema, extend_schema_view
from rest_framework import mixins, permissions, status, viewsets
from rest_framework.decorators import action
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from apps.designs.api import ERRORS, url_id
from apps.designs.models import DesignVersion
from apps.reviews import selectors, services
from apps.reviews.models import Comment
from apps.reviews.serializers import (
    CommentInputSerializer,
    CommentSerializer,
    ReviewInputSerializer,
    ReviewSerializer,
)
from clusterdesigner.parsers import JSONParser
from clusterdesigner.views import or_404

PATH = [
    OpenApiParameter("design_id", int, OpenApiParameter.PATH, description="The design's id."),
    OpenApiParameter("number", int, OpenApiParameter.PATH, description="The version's number."),
]
COMMENT_PATH = [*PATH, OpenApiParameter("id", int, OpenApiParameter.PATH, description="The comment's id.")]
RESOLVE_SCHEMA: dict[str, Any] = dict(
    parameters=COMMENT_PATH, request=None, responses={200: CommentSerializer, **ERRORS}
)


def _version(request: Request, kwargs: dict[str, Any]) -> DesignVersion:
    return or_404(
        selectors.version_get_readable(
            user=request.user, design_id=url_id(kwargs["design_id"]), number=url_id(kwargs["number"])
        )
    )


@extend_schema_view(
    list=extend_schema(parameters=PATH, responses={200: CommentSerializer(many=True), **ERRORS}),
    create=extend_schema(
        parameters=PATH, request=CommentInputSerializer, responses={201: CommentSerializer, **ERRORS}
    ),
    resolve=extend_schema(**RESOLVE_SCHEMA),
    unresolve=extend_schema(**RESOLVE_SCHEMA),
)
class CommentViewSet(mixins.ListModelMixin, viewsets.GenericViewSet[Comment]):
    """Comments on one version of a design, oldest first; a reply names its parent."""

    serializer_class = CommentSerializer
    permission_classes = [permissions.IsAuthenticated]
    parser_classes = [JSONParser]
    filter_backends: list[Any] = []

    def get_queryset(self) -> Any:
        return selectors.comment_list(version=_version(self.request, self.kwargs))

    def create(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        version = _version(request, kwargs)
        form = CommentInputSerializer(data=request.data)
        form.is_valid(raise_exception=True)
        comment = services.comment_create(
            user=request.user,
            version=version,
            body=form.validated_data["body"],
            parent_id=form.validated_data["parent"],
        )
        return Response(CommentSerializer(comment).data, status=status.HTTP_201_CREATED)

    def _resolve(self, request: Request, pk: str, resolved: bool) -> Response:
        version = _version(request, self.kwargs)
        comment = Comment.objects.filter(version=version, pk=url_id(pk)).select_related("author").first()
        if comment is None:
            raise Http404("No such comment on this version.")
        comment.version = version
        comment = services.comment_resolve(user=request.user, comment=comment, resolved=resolved)
        return Response(CommentSerializer(comment).data)

    @action(detail=True, methods=["post"])
    def resolve(self, request: Request, pk: str, **kwargs: Any) -> Response:
        return self._resolve(request, pk, True)

    @action(detail=True, methods=["post"])
    def unresolve(self, request: Request, pk: str, **kwargs: Any) -> Response:
        return self._resolve(request, pk, False)


class ReviewView(APIView):
    """The review state of one version: draft → in_review → approved | changes_requested, with the history
    of its moves."""

    permission_classes = [permissions.IsAuthenticated]
    parser_classes = [JSONParser]

    def _respond(self, request: Request, version: DesignVersion, code: int = 200) -> Response:
        review = selectors.review_get(version=version)
        allowed = services.allowed_states(user=request.user, version=version, current=review.state)
        history = selectors.review_history(version=version)
        context = {"allowed": allowed, "history": history}
        return Response(ReviewSerializer(review, context=context).data, status=code)

    @extend_schema(parameters=PATH, responses={200: ReviewSerializer, **ERRORS})
    def get(self, request: Request, design_id: str, number: str) -> Response:
        return self._respond(request, _version(request, self.kwargs))

    @extend_schema(
        parameters=PATH, request=ReviewInputSerializer, responses={200: ReviewSerializer, **ERRORS}
    )
    def post(self, request: Request, design_id: str, number: str) -> Response:
        version = _version(request, self.kwargs)
        form = ReviewInputSerializer(data=request.data)
        form.is_valid(raise_exception=True)
        services.review_transition(user=request.user, version=version, **form.validated_data)
        return self._respond(request, version)
