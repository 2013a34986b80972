from __future__ import annotations

from django.urls import path

from apps.measurements import views

app_name = "measurements"

urlpatterns = [
    path("", views.run_list, name="list"),
]
