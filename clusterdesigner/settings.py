"""ClusterDesigner settings: everything from the environment, defaults that run with no services.

Environment variables:
    DJANGO_DEBUG          "1"/"true" turns debug on (off by default; `make run` turns it on)
    DJANGO_SECRET_KEY     required when debug is off
    DJANGO_ALLOWED_HOSTS  comma-separated (default: localhost,127.0.0.1 in debug, none otherwise)
    DATABASE_URL          postgres://user:pass@host:port/name or sqlite:///path (default: var/db.sqlite3)
    REDIS_URL             redis://host:port/0; when unset Celery runs tasks in-process (eager)
    DJANGO_SECURE_SSL     "1" when served over TLS: secure cookies, HSTS, SSL redirect
    TRUSTED_PROXIES       comma-separated addresses/networks of reverse proxies whose X-Forwarded-For is read
    PRICE_STALE_AFTER_DAYS  a price older than this many days is stale (default 180)
"""

from __future__ import annotations

import ipaddress
import os
import sys
from pathlib import Path
from urllib.parse import urlsplit

import django_stubs_ext
import environ
from csp.constants import NONE, SELF, UNSAFE_INLINE
from django.core.exceptions import ImproperlyConfigured

# Django's generic classes (ModelAdmin[Model], TabularInline[...]) subscriptable at run time as the type
# checker reads them (django-stubs' documented way).
django_stubs_ext.monkeypatch()

BASE_DIR = Path(__file__).resolve().parent.parent


# django-environ reads and casts the environment. Strings that may hold secrets are read with os.environ:
# Env treats a value starting with "$" as the name of another variable, and a generated secret key can.
env = environ.Env()


def env_list(name: str, default: str = "") -> list[str]:
    # Env.list keeps the spaces in "a, b"; a host or proxy address must not carry them.
    return [item.strip() for item in os.environ.get(name, default).split(",") if item.strip()]


# psycopg is the only database driver installed, and SQLite is the default that needs no service.
DATABASE_SCHEMES = ("postgres", "postgresql", "sqlite")


def database_from_url(url: str) -> dict[str, object]:
    """DATABASE_URL parsed by django-environ: postgres[ql]://user:pass@host:port/name?option=value, or
    sqlite:///path relative to the project (sqlite:////tmp/x.sqlite3 is absolute)."""
    scheme = url.partition("://")[0]
    if scheme not in DATABASE_SCHEMES:
        raise ImproperlyConfigured(
            f"DATABASE_URL scheme {scheme!r} is not supported (use postgres or sqlite)"
        )
    config: dict[str, object] = environ.Env.db_url_config(url)
    if scheme == "sqlite":
        if config["NAME"] != ":memory:":
            config["NAME"] = str(BASE_DIR / str(config["NAME"]))
        return config
    config["PORT"] = str(config["PORT"])
    config.setdefault("CONN_MAX_AGE", env.int("DB_CONN_MAX_AGE", default=60))
    config["CONN_HEALTH_CHECKS"] = True
    return config


DEBUG = env.bool("DJANGO_DEBUG", default=False)
# Under pytest: a throwaway key and static files served from the finders (no collectstatic needed).
TESTING = "pytest" in sys.modules

SECRET_KEY = os.environ.get("DJANGO_SECRET_KEY", "")
if not SECRET_KEY and TESTING:
    SECRET_KEY = "test-only-secret-key-not-for-production"
if not SECRET_KEY:
    if not DEBUG:
        raise ImproperlyConfigured(
            "DJANGO_SECRET_KEY is not set. Set it to a long random string, "
            "or set DJANGO_DEBUG=1 for local use."
        )
    SECRET_KEY = "insecure-development-key-only-used-with-DJANGO_DEBUG"

ALLOWED_HOSTS = env_list("DJANGO_ALLOWED_HOSTS", "localhost,127.0.0.1,[::1]" if DEBUG else "")

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "whitenoise.runserver_nostatic",
    "django.contrib.staticfiles",
    "django.contrib.humanize",
    "rest_framework",
    "rest_framework.authtoken",
    "django_filters",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "csp",
    "clusterdesigner.apps.ProjectConfig",
    "apps.catalog",
    "apps.designs",
    "apps.analysis",
    "apps.dashboard",
    "apps.plans",
    "apps.sites",
    "apps.pricebook",
    "apps.teams",
    "apps.measurements",
    "apps.reviews",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "clusterdesigner.auth.SignInLimitMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "clusterdesigner.content_security.CSPMiddleware",  # django-csp's, the fixed policy built once
]

ROOT_URLCONF = "clusterdesigner.urls"
WSGI_APPLICATION = "clusterdesigner.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

DATABASES = {"default": database_from_url(os.environ.get("DATABASE_URL", "sqlite:///var/db.sqlite3"))}
if TESTING and str(DATABASES["default"]["ENGINE"]).endswith("postgresql"):
    # Each test run gets its own test database, so runs in parallel on one server cannot drop each other's.
    DATABASES["default"]["TEST"] = {"NAME": f"test_{DATABASES['default']['NAME']}_{os.getpid()}"}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True
USE_THOUSAND_SEPARATOR = False

STATIC_URL = "/static/"
STATIC_ROOT = BASE_DIR / "staticfiles"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATICFILES_FINDERS = [
    "django.contrib.staticfiles.finders.FileSystemFinder",
    "django.contrib.staticfiles.finders.AppDirectoriesFinder",
    # plotly.js from the installed plotly package, so the browser's copy always matches Python's.
    "clusterdesigner.staticfinders.PlotlyJsFinder",
]
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {
        "BACKEND": (
            "django.contrib.staticfiles.storage.StaticFilesStorage"
            if DEBUG or TESTING
            else "whitenoise.storage.CompressedManifestStaticFilesStorage"
        )
    },
}
WHITENOISE_USE_FINDERS = DEBUG or TESTING
WHITENOISE_AUTOREFRESH = DEBUG or TESTING
WHITENOISE_MAX_AGE = 0 if DEBUG else 31536000

LOGIN_URL = "/accounts/login/"
LOGIN_REDIRECT_URL = "/"
LOGOUT_REDIRECT_URL = "/"

# --- Security: debug off by default; TLS-only settings when DJANGO_SECURE_SSL is on.
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"
X_FRAME_OPTIONS = "DENY"
SESSION_COOKIE_HTTPONLY = True
# Sessions in the database, not the cache: Redis going away must not sign everyone out or stop signing in.
SESSION_ENGINE = "django.contrib.sessions.backends.db"
if env.bool("DJANGO_SECURE_SSL", default=False):
    SECURE_SSL_REDIRECT = True
    SESSION_COOKIE_SECURE = True
    CSRF_COOKIE_SECURE = True
    SECURE_HSTS_SECONDS = env.int("DJANGO_HSTS_SECONDS", default=31536000)
    SECURE_HSTS_INCLUDE_SUBDOMAINS = True
    SECURE_HSTS_PRELOAD = True
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
CSRF_TRUSTED_ORIGINS = env_list("DJANGO_CSRF_TRUSTED_ORIGINS")
# Content-Security-Policy (django-csp): scripts only from this origin, no inline script. Swagger UI (sidecar)
# needs inline styles; plotly.js sets inline styles on its SVG and starts blob: workers.
CONTENT_SECURITY_POLICY = {
    "DIRECTIVES": {
        "default-src": [SELF],
        "script-src": [SELF],
        "style-src": [SELF, UNSAFE_INLINE],
        "img-src": [SELF, "data:", "blob:"],
        "font-src": [SELF, "data:"],
        "connect-src": [SELF],
        "worker-src": [SELF, "blob:"],
        "frame-ancestors": [NONE],
        "base-uri": [SELF],
        "form-action": [SELF],
        "object-src": [NONE],
    }
}
# Addresses (or networks, 10.0.0.0/8) of the reverse proxies in front of the app. Only a request from one of
# them has its X-Forwarded-For read for the client's address (the sign-in limit); none by default, so a client
# cannot pick its own address by sending the header.
TRUSTED_PROXIES = env_list("TRUSTED_PROXIES")
for _proxy in TRUSTED_PROXIES:
    try:
        ipaddress.ip_network(_proxy, strict=False)
    except ValueError:
        raise ImproperlyConfigured(
            f"TRUSTED_PROXIES: {_proxy!r} is not an IP address or network (e.g. 10.0.0.2 or 10.0.0.0/8)"
        ) from None
DATA_UPLOAD_MAX_MEMORY_SIZE = env.int("DJANGO_MAX_BODY_BYTES", default=2 * 1024 * 1024)

# --- REST API
REST_FRAMEWORK = {
    # DRF's token authentication with one query compiled once per process (clusterdesigner/api_tokens.py).
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "clusterdesigner.api_tokens.TokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["clusterdesigner.permissions.IsStaffOrReadOnly"],
    "DEFAULT_FILTER_BACKENDS": [
        "clusterdesigner.permissions.StrictFilterBackend",
        "rest_framework.filters.OrderingFilter",
        "rest_framework.filters.SearchFilter",
    ],
    # DRF's parsers with the body size limit Django applies only to request.body, and JSON NaN/Infinity
    # refused.
    "DEFAULT_PARSER_CLASSES": [
        "clusterdesigner.parsers.JSONParser",
        "clusterdesigner.parsers.FormParser",
        "clusterdesigner.parsers.MultiPartParser",
    ],
    # DRF's JSON renderer, which also sends JSON that is already text (a stored evaluation) as it is.
    "DEFAULT_RENDERER_CLASSES": [
        "clusterdesigner.renderers.JSONRenderer",
        "rest_framework.renderers.BrowsableAPIRenderer",
    ],
    "DEFAULT_PAGINATION_CLASS": "clusterdesigner.permissions.Pagination",
    "PAGE_SIZE": 50,
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "EXCEPTION_HANDLER": "clusterdesigner.api.exception_handler",
    "DEFAULT_THROTTLE_RATES": {"analysis-create": os.environ.get("ANALYSIS_THROTTLE", "60/minute")},
    "TEST_REQUEST_DEFAULT_FORMAT": "json",
}
SPECTACULAR_SETTINGS = {
    "TITLE": "ClusterDesigner API",
    "DESCRIPTION": (
        "Hardware catalog, saved designs and analyses for GPU clusters for LLM training. "
        'Errors share one envelope: {"error": {"code", "message", "fields"}}.'
    ),
    "VERSION": "1.0.0",
    "SERVE_INCLUDE_SCHEMA": False,
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    "COMPONENT_SPLIT_REQUEST": True,
    "SCHEMA_PATH_PREFIX": r"/api/v1",
    "ENUM_NAME_OVERRIDES": {
        "FabricKindEnum": "apps.catalog.models.Fabric.Kind",
        "StorageKindEnum": "apps.catalog.models.StorageTier.Kind",
        "AnalysisKindEnum": "apps.analysis.models.Analysis.Kind",
        "TeamRoleEnum": "apps.teams.models.Membership.Role",
        "PriceEntryKindEnum": "apps.pricebook.models.PriceEntry.Kind",
        "PricingModelEnum": "apps.catalog.models.CloudPrice.PricingModel",
        "ReviewStateEnum": "apps.reviews.models.VersionReview.State",
    },
    "GET_LIB_DOC_EXCLUDES": "clusterdesigner.schema.lib_doc_excludes",
    "POSTPROCESSING_HOOKS": [
        "drf_spectacular.hooks.postprocess_schema_enums",
        "clusterdesigner.schema.closed_objects",
        "clusterdesigner.schema.query_strings_without_nul",
        "clusterdesigner.schema.uri_too_long",
        "clusterdesigner.schema.body_refusals",
    ],
}

# --- Celery: broker and result backend from one REDIS_URL; in-process when it is unset.
REDIS_URL = os.environ.get("REDIS_URL", "")
CELERY_BROKER_URL = REDIS_URL or "memory://"
CELERY_RESULT_BACKEND = REDIS_URL or "cache+memory://"
CELERY_TASK_ALWAYS_EAGER = not REDIS_URL
# Without a broker (make run) an analysis's chunks run one by one on a background thread of the web
# process, so the POST answers 202 at once and the page sees progress as chunks finish. Tests run them in
# the request unless a test asks for the thread (they assert on finished results right after the POST).
ANALYSIS_RUN_IN_THREAD = env.bool("ANALYSIS_RUN_IN_THREAD", default=not REDIS_URL and not TESTING)
# In-process mode a failed chunk is recorded on the analysis (status "failed" with its message), not raised.
CELERY_TASK_EAGER_PROPAGATES = False
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_TASK_SERIALIZER = "json"
CELERY_RESULT_SERIALIZER = "json"
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_TIME_LIMIT = env.int("CELERY_TASK_TIME_LIMIT", default=600)
CELERY_TASK_SOFT_TIME_LIMIT = env.int("CELERY_TASK_SOFT_TIME_LIMIT", default=540)
# acks_late + Redis: a message a dead worker held comes back after visibility_timeout. Kombu scans for such
# messages every interval × throttle seconds (default 10 × 10); scan every 30 s so the wait is about the
# timeout.
CELERY_BROKER_TRANSPORT_OPTIONS: dict[str, int | str] = {
    "visibility_timeout": env.int("CELERY_VISIBILITY_TIMEOUT", default=900),
    "unacked_restore_interval": env.int("CELERY_RESTORE_INTERVAL", default=30),
    "unacked_restore_throttle": 1,
}
# A key prefix for every broker key, so separate deployments (or parallel test runs) can share one Redis.
CELERY_KEY_PREFIX = os.environ.get("CELERY_KEY_PREFIX", f"cdtest{os.getpid()}:" if TESTING else "")
if CELERY_KEY_PREFIX:
    CELERY_BROKER_TRANSPORT_OPTIONS["global_keyprefix"] = CELERY_KEY_PREFIX
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
# The stall rescue runs on a schedule (celery beat, the "beat" service in docker-compose.yml), not only when
# someone reads the analysis.
ANALYSIS_RESCUE_EVERY_S = env.int("ANALYSIS_RESCUE_EVERY_S", default=15)
CELERY_BEAT_SCHEDULE = {
    "analysis-rescue-stalled": {
        "task": "apps.analysis.tasks.analysis_rescue_stalled_task",
        "schedule": float(ANALYSIS_RESCUE_EVERY_S),
    },
    # Share links' opens are logged (apps.designs.models.ShareLinkOpen) and added to their counters here; the
    # owner's list counts the log too, so this only keeps the log short.
    "share-link-opens-fold": {
        "task": "apps.designs.tasks.share_link_opens_fold_task",
        "schedule": 60.0,
    },
}


def caches_for(redis_url: str) -> dict[str, dict[str, object]]:
    """The cache on ``redis_url`` (in-process without one). The cache is an optimisation: with Redis
    unreachable its reads miss and its writes do nothing (clusterdesigner/cache.py), and a blackholed server
    costs a request at most the timeouts below. Sessions are in the database (SESSION_ENGINE), so signing in
    does not need Redis."""
    if not redis_url:
        return {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}
    return {
        "default": {
            "BACKEND": "clusterdesigner.cache.ResilientRedisCache",
            "LOCATION": redis_url,
            "OPTIONS": {"socket_connect_timeout": 1, "socket_timeout": 2},
        }
    }


def _test_worker_cache_url(redis_url: str) -> str:
    """Under pytest-xdist each test worker gets its own Redis database for the cache, counted on from
    REDIS_URL's own (database n: gw0 → n + 1, gw1 → n + 2, ...), so one worker's ``cache.clear()`` (a FLUSHDB)
    cannot empty another's throttle counters or memo, and two runs given databases apart do not share one."""
    worker = os.environ.get("PYTEST_XDIST_WORKER", "")
    if not (TESTING and redis_url and worker.startswith("gw")):
        return redis_url
    parts = urlsplit(redis_url)
    base = int(parts.path.strip("/") or 0)
    return parts._replace(path=f"/{base + 1 + int(worker[2:])}").geturl()


CACHES = caches_for(_test_worker_cache_url(REDIS_URL))

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    # Share tokens out of every log line: on the handler, and on the loggers that write request paths (a
    # logger's filter also covers handlers added elsewhere, e.g. a test's log capture).
    "filters": {"redact_share_tokens": {"()": "clusterdesigner.logging.RedactShareTokens"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "filters": ["redact_share_tokens"]}},
    "loggers": {
        name: {"filters": ["redact_share_tokens"], "level": "NOTSET"}
        for name in ("django.request", "django.server", "django.security")
    },
    "root": {"handlers": ["console"], "level": os.environ.get("LOG_LEVEL", "INFO")},
}
# Sign-in: after this many failures for one address and user name within the window, 429 until it passes, on
# every sign-in path (the limit is in the authentication backend: clusterdesigner/auth.py).
AUTHENTICATION_BACKENDS = ["clusterdesigner.auth.RateLimitedModelBackend"]
LOGIN_FAILURE_LIMIT = env.int("LOGIN_FAILURE_LIMIT", default=5)
LOGIN_FAILURE_WINDOW_S = env.int("LOGIN_FAILURE_WINDOW_S", default=900)
ANALYSIS_TIME_LIMIT_S = env.int("ANALYSIS_TIME_LIMIT_S", default=1800)
# Capacity plans up to this size (months × (training runs + 1)) solve in the request; larger ones on a worker.
PLAN_SYNC_MAX_SIZE = env.int("PLAN_SYNC_MAX_SIZE", default=100)
# The plan solver's bound on work: HiGHS stops after this many branch-and-bound nodes, the same work on a
# loaded machine as on an idle one, and returns the best plan found (solver_status "work_limit"). The wall
# clock is only a backstop: generous on a worker, under gunicorn's 30 s timeout in a request.
PLAN_SOLVE_NODE_LIMIT = env.int("PLAN_SOLVE_NODE_LIMIT", default=20_000)
PLAN_SOLVE_MIP_GAP = env.float("PLAN_SOLVE_MIP_GAP", default=1e-4)  # proven relative gap that counts optimal
PLAN_SOLVE_TIME_LIMIT_S = env.float("PLAN_SOLVE_TIME_LIMIT_S", default=480.0)
PLAN_SYNC_TIME_LIMIT_S = env.float("PLAN_SYNC_TIME_LIMIT_S", default=25.0)
# A run with no chunk started or finished for this long, and none held by a worker, has lost its queued
# messages (Redis restarted without persistence): its unfinished chunks are queued again on the next read.
ANALYSIS_STALL_S = env.int("ANALYSIS_STALL_S", default=180)
# A worker computing a chunk stamps its heartbeat every ANALYSIS_HEARTBEAT_S; a chunk whose heartbeat is older
# than ANALYSIS_LEASE_S was held by a worker that died (kill -9, a lost machine) and is queued again by the
# periodic rescue, so a dead worker's chunk is reclaimed within lease + rescue period (20 + 15 s), not at the
# chunk's 300 s time limit. The lease spans four missed beats, so a busy but live worker keeps its chunk.
ANALYSIS_HEARTBEAT_S = env.float("ANALYSIS_HEARTBEAT_S", default=5.0)
ANALYSIS_LEASE_S = env.float("ANALYSIS_LEASE_S", default=20.0)
# How many Celery worker processes share the analyses (containers × --concurrency; docker-compose.yml runs one
# container of 2): a sweep is cut into at least 4 chunks per worker where it has the points for it
# (apps.analysis.services._chunked), so that each worker gets work. More workers than this still share a
# large sweep (its chunks hold at most 4 points); a small sweep is cut finer for them.
ANALYSIS_WORKERS = env.int("ANALYSIS_WORKERS", default=2)


def _stale_after_days() -> int:
    raw = os.environ.get("PRICE_STALE_AFTER_DAYS", "180").strip()
    if not raw.isdigit():
        raise ImproperlyConfigured(f"PRICE_STALE_AFTER_DAYS must be a whole number of days, got {raw!r}")
    return int(raw)


# A catalog price (cloud or owning) dated more than this many days ago is marked stale on the catalog pages
# and in the API, is not picked as a default while a fresher one exists, and raises a finding on designs that
# use it.
PRICE_STALE_AFTER_DAYS = _stale_after_days()
