from __future__ import annotations

from django.urls import path

from apps.serving import views

app_name = "serving"

urlpatterns = [path("", views.serving_page, name="serving")]
