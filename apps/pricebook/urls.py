from __future__ import annotations

from django.urls import path

from apps.pricebook import views

app_name = "pricebook"

urlpatterns = [
    path("", views.book, name="book"),
    path("teams/<int:team_id>/", views.book, name="team-book"),
    path("entries/<int:entry_id>/edit/", views.entry_edit, name="entry-edit"),
    path("entries/<int:entry_id>/expire/", views.entry_expire, name="entry-expire"),
    path("entries/<int:entry_id>/delete/", views.entry_delete, name="entry-delete"),
]
