"""Input and output serializers of the comment and review endpoints."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from apps.reviews.markdown import render_markdown
from apps.reviews.models import Comment, ReviewEvent, VersionReview
from clusterdesigner.api import KnownKeysOnly, StrictJSONTypes


class CommentSerializer(serializers.ModelSerializer[Comment]):
    author = serializers.CharField(source="author.get_username", read_only=True)
    resolved_by = serializers.CharField(source="resolved_by.get_username", read_only=True, allow_null=True)
    version = serializers.IntegerField(source="version.number", read_only=True)
    html = serializers.SerializerMethodField(help_text="The body rendered safely (raw HTML shown as text).")

    class Meta:
        model = Comment
        fields = [
            "id",
            "version",
            "parent",
            "author",
            "body",
            "html",
            "resolved",
            "resolved_by",
            "resolved_at",
            "created_at",
        ]

    def get_html(self, comment: Comment) -> str:
        return render_markdown(comment.body)


class CommentInputSerializer(KnownKeysOnly, StrictJSONTypes, serializers.Serializer[Any]):
    body = serializers.CharField(
        max_length=10000, help_text="Markdown: paragraphs, bold, italic, code, links."
    )
    # Named as the output's field; the metaclass moves it out of the class, so it does not shadow Field.parent
    # at run time (mypy cannot know that).
    parent = serializers.IntegerField(  # type: ignore[assignment]
        required=False, allow_null=True, default=None, min_value=1, help_text="The comment this replies to."
    )


class ReviewEventSerializer(serializers.ModelSerializer[ReviewEvent]):
    actor = serializers.CharField(
        source="actor.get_username", read_only=True, allow_null=True, help_text="Who moved it (null: gone)."
    )

    class Meta:
        model = ReviewEvent
        fields = ["from_state", "to_state", "actor", "note", "created_at"]


class ReviewSerializer(serializers.ModelSerializer[VersionReview]):
    version = serializers.IntegerField(source="version.number", read_only=True)
    reviewer = serializers.CharField(source="reviewer.get_username", read_only=True, allow_null=True)
    allowed = serializers.SerializerMethodField(help_text="The states you may move this version to.")
    history = serializers.SerializerMethodField(
        help_text="Every move of this version's review state, oldest first (who, when, from, to, note)."
    )

    class Meta:
        model = VersionReview
        fields = ["version", "state", "reviewer", "note", "reviewed_at", "allowed", "history"]

    @extend_schema_field(
        serializers.ListField(child=serializers.ChoiceField(choices=VersionReview.State.choices))
    )
    def get_allowed(self, review: VersionReview) -> list[str]:
        return list(self.context.get("allowed", ()))

    @extend_schema_field(ReviewEventSerializer(many=True))
    def get_history(self, review: VersionReview) -> list[dict[str, Any]]:
        return list(ReviewEventSerializer(self.context.get("history", ()), many=True).data)


class ReviewInputSerializer(KnownKeysOnly, StrictJSONTypes, serializers.Serializer[Any]):
    state = serializers.ChoiceField(choices=VersionReview.State.choices)
    note = serializers.CharField(max_length=5000, required=False, allow_blank=True, default="")
