from __future__ import annotations

from typing import Any

from rest_framework import serializers

from apps.teams.models import Membership, Team
from apps.teams.params import team_field
from clusterdesigner.api import KnownKeysOnly, StrictJSONTypes


class MembershipSerializer(serializers.ModelSerializer[Any]):
    user_id = serializers.IntegerField(source="user.pk", read_only=True)
    username = serializers.CharField(source="user.get_username", read_only=True)

    class Meta:
        model = Membership
        fields = ["user_id", "username", "role", "created_at"]


class TeamSerializer(serializers.ModelSerializer[Any]):
    members = MembershipSerializer(source="memberships", many=True, read_only=True)
    created_by = serializers.CharField(source="created_by.get_username", read_only=True, default=None)
    url = serializers.HyperlinkedIdentityField(view_name="team-detail")
    my_role = serializers.ChoiceField(
        choices=Membership.Role.choices, read_only=True, help_text="Your role in the team."
    )

    class Meta:
        model = Team
        fields = ["id", "url", "name", "slug", "created_by", "created_at", "my_role", "members"]


class TeamInputSerializer(KnownKeysOnly, StrictJSONTypes, serializers.Serializer[Any]):
    name = serializers.CharField(max_length=200)


class MemberInputSerializer(KnownKeysOnly, StrictJSONTypes, serializers.Serializer[Any]):
    user = serializers.CharField(max_length=254, help_text="The member's username or e-mail address.")
    role = serializers.ChoiceField(choices=Membership.Role.choices, default=Membership.Role.VIEWER)


class MemberRoleSerializer(KnownKeysOnly, StrictJSONTypes, serializers.Serializer[Any]):
    role = serializers.ChoiceField(choices=Membership.Role.choices)


class TeamMoveSerializer(KnownKeysOnly, StrictJSONTypes, serializers.Serializer[Any]):
    team = team_field(
        "The team to move it into (you must be its owner or editor).", required=True, allow_null=False
    )
