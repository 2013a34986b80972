from __future__ import annotations

from django.contrib import admin
from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerSplitView
from rest_framework.routers import DefaultRouter

from apps.analysis import api as analysis_api
from apps.catalog import api as catalog_api
from apps.dashboard import account_views
from apps.designs import api as designs_api
from apps.measurements import api as measurements_api
from apps.plans import api as plans_api
from apps.pricebook import api as pricebook_api
from apps.reviews import api as reviews_api
from apps.serving import api as serving_api
from apps.sites import api as sites_api
from apps.teams import api as teams_api
from clusterdesigner.views import favicon

router = DefaultRouter()
router.register("accelerators", catalog_api.AcceleratorViewSet, basename="accelerator")
router.register("server-types", catalog_api.ServerTypeViewSet, basename="server-type")
router.register("fabrics", catalog_api.FabricViewSet, basename="fabric")
router.register("switches", catalog_api.SwitchViewSet, basename="switch")
router.register("storage-tiers", catalog_api.StorageTierViewSet, basename="storage-tier")
router.register("cloud-offerings", catalog_api.CloudOfferingViewSet, basename="cloud-offering")
router.register("cloud-prices", catalog_api.CloudPriceViewSet, basename="cloud-price")
router.register("residual-values", catalog_api.ResidualValuePointViewSet, basename="residual-value")
router.register("rental-prices", catalog_api.RentalPricePointViewSet, basename="rental-price")
router.register("designs", designs_api.DesignViewSet, basename="design")
router.register("analyses", analysis_api.AnalysisViewSet, basename="analysis")
router.register("shared", designs_api.SharedDesignView, basename="shared")
router.register("capacity-plans", plans_api.CapacityPlanViewSet, basename="capacity-plan")
router.register("sites", sites_api.SiteViewSet, basename="site")
router.register("price-entries", pricebook_api.PriceEntryViewSet, basename="price-entry")
router.register("teams", teams_api.TeamViewSet, basename="team")
router.register("measured-runs", measurements_api.MeasuredRunViewSet, basename="measured-run")
router.register(
    r"designs/(?P<design_id>[^/.]+)/versions/(?P<number>[^/.]+)/comments",
    reviews_api.CommentViewSet,
    basename="design-version-comment",
)

urlpatterns = [
    path("api/v1/", include(router.urls)),
    path(
        "api/v1/designs/<str:design_id>/versions/<str:number>/review/",
        reviews_api.ReviewView.as_view(),
        name="design-version-review",
    ),
    path("api/v1/serving/estimate/", serving_api.ServingEstimateView.as_view(), name="serving-estimate"),
    path(
        "api/v1/measured-runs/parse-log/",
        measurements_api.LogParseView.as_view(),
        name="measured-run-parse-log",
    ),
    path("api/v1/schema/", SpectacularAPIView.as_view(), name="schema"),
    # The split view serves Swagger UI's initialiser as a separate script, so the CSP needs no inline script.
    path("api/v1/docs/", SpectacularSwaggerSplitView.as_view(url_name="schema"), name="api-docs"),
    path("favicon.ico", favicon, name="favicon"),
    path("admin/", admin.site.urls),
    path("accounts/tokens/", account_views.api_tokens, name="api-tokens"),
    path("accounts/tokens/create/", account_views.api_token_create_view, name="api-token-create"),
    path("accounts/tokens/revoke/", account_views.api_token_revoke_view, name="api-token-revoke"),
    path("accounts/", include("django.contrib.auth.urls")),
    path("catalog/", include("apps.catalog.urls")),
    path("serving/", include("apps.serving.urls")),
    path("plans/", include("apps.plans.urls")),
    path("sites/", include("apps.sites.urls")),
    path("price-book/", include("apps.pricebook.urls")),
    path("teams/", include("apps.teams.urls")),
    path("measured-runs/", include("apps.measurements.urls")),
    path("", include("apps.dashboard.urls")),
]

# Under /api/ Django's own 400, a URL that matches no route, and an unhandled error answer with the JSON
# error envelope.
handler400 = "clusterdesigner.api.bad_request"
handler404 = "clusterdesigner.api.page_not_found"
handler500 = "clusterdesigner.api.server_error"
