from __future__ import annotations

from django.urls import path

from apps.plans import views

app_name = "plans"

urlpatterns = [
    path("", views.plan_list, name="list"),
    path("<int:plan_id>/", views.plan_detail, name="detail"),
    path("share/<str:token>/", views.plan_share, name="share"),
    path("share/<str:token>/xlsx/", views.plan_share_xlsx, name="share-xlsx"),
]
