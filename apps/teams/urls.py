from __future__ import annotations

from django.urls import path

from apps.teams import views

app_name = "teams"

urlpatterns = [
    path("", views.team_list, name="list"),
]
