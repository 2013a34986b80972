from __future__ import annotations

from django.urls import path

from apps.sites import views

app_name = "sites"

urlpatterns = [path("", views.site_list, name="list")]
