from __future__ import annotations

from django.urls import path

from apps.plans import views

app_name = "plans"

urlpatterns = [
    path("", views.plan_list, name="list"),
    path("<int:plan_id>/", views.plan_detail, name="detail"),
]
