from __future__ import annotations

from django.urls import path

from apps.dashboard import design_actions, diff_views, review_views, views

app_name = "dashboard"

urlpatterns = [
    path("", views.home, name="home"),
    path("designs/new/", views.design_new, name="design-new"),
    path("designs/<int:design_id>/", views.design_detail, name="design"),
    path("designs/<int:design_id>/edit/", views.design_edit, name="design-edit"),
    path("designs/<int:design_id>/results/", views.design_results, name="design-results"),
    path("designs/<int:design_id>/draft/results/", views.design_draft_results, name="design-draft-results"),
    path("designs/<int:design_id>/draft/discard/", design_actions.draft_discard, name="design-draft-discard"),
    path("designs/<int:design_id>/share-links/", design_actions.share_links_table, name="design-share-links"),
    path("designs/<int:design_id>/versions/", diff_views.design_versions, name="design-versions"),
    path("designs/<int:design_id>/diff/", diff_views.design_diff, name="design-diff"),
    path("designs/<int:design_id>/review/", review_views.design_review, name="design-review"),
    path("designs/<int:design_id>/clone/", design_actions.design_clone, name="design-clone"),
    path("designs/<int:design_id>/move/", design_actions.design_move, name="design-move"),
    path(
        "designs/<int:design_id>/prices/accept/",
        design_actions.design_prices_accept,
        name="design-prices-accept",
    ),
    path("compare/", views.compare, name="compare"),
    path("sweep/", views.sweep, name="sweep"),
    path("sweep/<int:analysis_id>/", views.sweep_detail, name="sweep-detail"),
    path("sweep/<int:analysis_id>/results/", views.sweep_results, name="sweep-results"),
    path("share/<str:token>/", views.share, name="share"),
    path("share/<str:token>/export/<str:fmt>/", views.share_export, name="share-export"),
]
