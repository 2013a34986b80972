"""Shared fixtures: the catalog, API clients, and the real services (PostgreSQL, Redis, a Celery worker,
headless Chromium) for the tests that need them.

Without CI set, a test that needs a missing service is skipped with the reason; with CI set it fails,
so a CI run can never pass by skipping its integration tests.
"""

from __future__ import annotations

import asyncio
import collections
import copyreg
import gc
import hashlib
import io
import os
import pickle
import shutil
import signal
import subprocess
import sys
import time
import types
import unittest.mock
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from playwright.sync_api import ViewportSize

ROOT = Path(__file__).resolve().parent.parent
IN_CI = os.environ.get("CI", "").lower() not in {"", "0", "false", "no"}
# Debian's headless build of Chromium (package chromium-headless-shell, from the same source and version as
# package chromium): Blink and V8 as in the browser, without the desktop browser's UI that Chromium >= 132
# starts for --headless. The machine's CPU for a browser file fell ~20-30 % with it (156.0.8078.129, each file
# alone; runs interleaved: tests/browser/test_crawl_owner.py 145.1 and 139.9 s -> 100.8 and 106.2 s,
# test_verdict_items.py 53.4 -> 42.2 s).
CHROMIUM = "/usr/bin/chromium-headless-shell"
ASYNC_UNSAFE_AT_START = os.environ.get("DJANGO_ALLOW_ASYNC_UNSAFE")


def need(condition: bool, reason: str) -> None:
    """Skip locally, fail under CI, when a service a test needs is missing."""
    if condition:
        return
    if IN_CI:
        pytest.fail(f"CI is set but {reason}", pytrace=False)
    pytest.skip(reason)


# Run after the parallel phase, one at a time (`make test`), each for its own reason:
# - faults: they stop PostgreSQL (the one server every test process's database is on), kill Celery workers
#   and restart a Redis, mid-request; anything running beside them would fail with them.
# - integration, and any test that starts a Celery worker (worker_env, celery_worker_process; one browser
#   test, tests/browser/test_dashboard_sweep.py): they start real worker processes on PostgreSQL and Redis
#   and judge a sweep or plan finished within a deadline; their broker keys carry a per-run prefix, so a
#   neighbour would not steal their messages, but on two cores a neighbour's load moves the deadlines.
# The other browser tests (live_server, browser, page) run in the parallel phase: each pytest-xdist worker
# has its own live server and database, and `browser` is module-scoped, so Playwright's asyncio loop (which
# its sync API keeps running on the main thread, with DJANGO_ALLOW_ASYNC_UNSAFE set) ends with the file that
# used it; the next file a worker runs meets no running loop (checked before each test: no_loop_left_running).
SERIAL_FOLDERS = ("faults", "integration")
SERIAL_FIXTURES = {"worker_env"}
# What make test's serial phase collects (-m serial): the serial folders and the browser folder, for the
# browser test that starts a worker. A test marked serial elsewhere would never run, so it is refused.
SERIAL_PHASE_FOLDERS = ("browser", *SERIAL_FOLDERS)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark ``serial`` the tests of the serial folders and the tests that start a Celery worker. make test's
    serial phase collects only SERIAL_PHASE_FOLDERS (not the other ~2,300 tests again, with their
    module-level work: ~30 s), so a serial test outside them is refused here rather than never run."""
    tests_root = ROOT / "tests"
    misplaced = []
    for item in items:
        folder = Path(str(item.path)).relative_to(tests_root).parts[0]
        uses = SERIAL_FIXTURES & set(getattr(item, "fixturenames", ()))
        if folder in SERIAL_FOLDERS or uses:
            item.add_marker(pytest.mark.serial)
        if uses and folder not in SERIAL_PHASE_FOLDERS:
            misplaced.append(item.nodeid)
    if misplaced:
        folders = ", ".join(f"tests/{f}/" for f in SERIAL_PHASE_FOLDERS)
        raise pytest.UsageError(
            f"these tests use {sorted(SERIAL_FIXTURES)} and so must run in make test's serial phase: "
            f"move them under {folders}: {', '.join(misplaced)}"
        )
    items.sort(key=_schedule_key(items))


# The order files are handed to make test's workers (pytest-xdist, --dist loadfile --no-loadscope-reorder:
# one file to a worker at a time, in this order): the longest first, so that none is left running alone at
# the end. A browser file costs a Chromium, a live server and a flushed database per test, and the crawl files
# (tests/browser/test_crawl_*.py) are the longest of all (~1-2 min each): those first, then the other browser
# files, then the rest by their number of tests, most first (xdist's own reordering, which put the one-test
# browser files last). Within a file the tests keep their order.
LONGEST_FIRST = ("browser/test_crawl_", "browser/")


def _schedule_key(items: list[pytest.Item]) -> Any:
    counts = collections.Counter(item.nodeid.split("::", 1)[0] for item in items)

    def key(item: pytest.Item) -> tuple[int, int]:
        path = item.nodeid.split("::", 1)[0]
        rank = next(
            (i for i, prefix in enumerate(LONGEST_FIRST) if path.startswith(f"tests/{prefix}")),
            len(LONGEST_FIRST),
        )
        return rank, -counts[path]

    return key


@pytest.fixture(autouse=True)
def no_loop_left_running(request: pytest.FixtureRequest) -> None:
    """A test outside tests/browser starts with no asyncio loop running and Django's async-safety guard on:
    a browser file that ran before it on the same xdist worker closed its Playwright (module scope)."""
    if Path(str(request.node.path)).relative_to(ROOT / "tests").parts[0] == "browser":
        return
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        pass
    else:
        pytest.fail("an asyncio loop is running: a Playwright browser was left open by an earlier file")
    assert os.environ.get("DJANGO_ALLOW_ASYNC_UNSAFE") == ASYNC_UNSAFE_AT_START, (
        "DJANGO_ALLOW_ASYNC_UNSAFE was left set by an earlier browser file"
    )


# Passwords: Django's PBKDF2 (1,000,000 iterations) costs ~0.4 s of CPU per hash and per sign-in check, and
# most tests create a user with a password (alice, bob, user_client, staff_client) or sign in. They run with
# the MD5 hasher first (Django's advice for tests: "Speeding up the tests", docs/topics/testing/overview);
# PBKDF2 stays in the list, so a stored hash of either kind still verifies. Kept on the shipped hashers: the
# sign-in race tests, whose races are judged at the real hashing cost, and every test that starts a server or
# worker process (tests/faults, tests/integration), whose settings are the shipped ones. The sequential
# sign-in limit tests (tests/project/test_sign_in_limit.py, test_security.py) judge status codes and counts
# kept in the database, which no hasher changes: they hash with MD5 too (~0.4 s of CPU per attempt saved).
FAST_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
SHIPPED_HASHER_FOLDERS = ("faults", "integration")
SHIPPED_HASHER_FILES = ("test_sign_in_concurrency.py",)


def pytest_configure(config: pytest.Config) -> None:
    from django.conf import settings

    settings.PASSWORD_HASHERS = [*FAST_HASHERS, *settings.PASSWORD_HASHERS]


@pytest.fixture(autouse=True)
def shipped_password_hashers(request: pytest.FixtureRequest) -> None:
    """The tests named above hash with the shipped hashers (the fast one removed for the test)."""
    path = Path(str(request.node.path))
    folder = path.relative_to(ROOT / "tests").parts[0]
    if folder in SHIPPED_HASHER_FOLDERS or path.name in SHIPPED_HASHER_FILES:
        settings = request.getfixturevalue("settings")
        settings.PASSWORD_HASHERS = [h for h in settings.PASSWORD_HASHERS if h not in FAST_HASHERS]


# A design is evaluated when it is saved (apps/designs/services.py: _evaluate_saved), so every fixture and
# test that saves a design runs the training, cost, serving and RL engines, and most save the same few specs
# (the demos, the teams' design) on the same seed catalog: ~0.5 s of CPU each time. The engines' composition
# (clusterdesigner.engine.design.design.evaluate_design, and evaluate_design_json, its JSON) is a pure
# function of its arguments (the engine imports no Django, reads no clock: "today" comes in ``freshness``), so
# a process keeps each answer under the whole of its arguments (pickled: equal bytes are equal inputs; unequal
# ones only cost a miss) and gives a test that sends the same arguments again a copy of it. Everything around
# the composition runs as before (validation, price resolution, the input hash, storage). A test that has
# patched anything (monkeypatch) may have patched the engines or be counting their calls: from then on it gets
# the engines themselves, as does every test of a module that imports unittest.mock.
# An analysis chunk's rows are kept the same way: apps.analysis.compute.compute_items reads only the JSON it
# is given (the snapshot holds the catalog, prices, calibration and "today"; no database, no clock), and the
# analysis tests post the same few sweeps again and again (tests/analysis/test_api.py: 24 of its 41 chunks).
_ENGINE_ANSWERS: collections.OrderedDict[bytes, bytes] = collections.OrderedDict()
ENGINE_ANSWERS_KEPT = 256  # the most recent (~40 kB each): the fuzz's random specs would otherwise pile up
# The modules that call a pure function, the name they call it by, and the module that defines it.
_ENGINE_CALLERS = (
    ("apps.designs.services", "evaluate_design", "clusterdesigner.engine.design.design"),
    ("apps.analysis.compute", "evaluate_design_json", "clusterdesigner.engine.design.design"),
    ("apps.analysis.compute", "compute_items", "apps.analysis.compute"),
)


class _KeyPickler(pickle.Pickler):
    # The catalog's records may come as read-only views (types.MappingProxyType), which pickle refuses: keyed
    # as the dicts they show.
    dispatch_table = {**copyreg.dispatch_table, types.MappingProxyType: lambda view: (dict, (dict(view),))}


def _arguments_key(arguments: dict[str, Any]) -> bytes:
    buffer = io.BytesIO()
    _KeyPickler(buffer, protocol=pickle.HIGHEST_PROTOCOL).dump(arguments)
    return hashlib.sha256(buffer.getvalue()).digest()


def _shared_answer(real: Any, patches: Any) -> Any:
    """``real`` answering from (and into) the shared answers while ``patches`` (the test's monkeypatch)
    holds no patch; once it holds one, ``real`` itself, every time."""

    def shared(**arguments: Any) -> Any:
        if patches._setattr or patches._setitem:
            return real(**arguments)
        key = _arguments_key({"function": real.__name__, **arguments})
        if key not in _ENGINE_ANSWERS:
            # Kept pickled, each hit a copy unpickled (the callers add keys to theirs): a deep copy of a
            # ~40 kB answer took 4-5 times as long.
            _ENGINE_ANSWERS[key] = pickle.dumps(real(**arguments), protocol=pickle.HIGHEST_PROTOCOL)
            if len(_ENGINE_ANSWERS) > ENGINE_ANSWERS_KEPT:
                _ENGINE_ANSWERS.popitem(last=False)
        _ENGINE_ANSWERS.move_to_end(key)
        return pickle.loads(_ENGINE_ANSWERS[key])

    return shared


def _uses_unittest_mock(module: Any) -> bool:
    return any(
        value is unittest.mock or getattr(value, "__module__", None) == "unittest.mock"
        for value in vars(module).values()
    )


@pytest.fixture(autouse=True)
def shared_engine_answers(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """A test evaluates through the process's shared engine answers (see above) until it patches something."""
    if _uses_unittest_mock(request.module):
        yield
        return
    import importlib

    callers = []
    for caller, name, source in _ENGINE_CALLERS:
        module = importlib.import_module(caller)
        real = getattr(importlib.import_module(source), name)
        assert getattr(module, name) is real, f"{caller} calls another {name}"
        callers.append((module, name, real))
        setattr(module, name, _shared_answer(real, monkeypatch))
    try:
        yield
    finally:
        for module, name, real in callers:
            setattr(module, name, real)


@pytest.fixture(autouse=True)
def tasks_in_process(request: pytest.FixtureRequest) -> Iterator[None]:
    """Tests that don't start a worker run Celery tasks in-process, even when REDIS_URL is set (as in CI)."""
    if "worker_env" in request.fixturenames:
        yield
        return
    from clusterdesigner.celery import app

    before = app.conf.task_always_eager
    app.conf.task_always_eager = True
    yield
    app.conf.task_always_eager = before


@pytest.fixture
def catalog(db: Any) -> dict[str, int]:
    """The seed catalog (apps.catalog.services.catalog_load_seed), as seed_catalog() loads it."""
    return seed_catalog()


# The seed catalog's rows as catalog_load_seed wrote them the first time in this process: (model, rows as
# .values() reads them) in the order of their foreign keys, and the counts it returned. That load validates
# and saves each of its rows one by one (full_clean, a lookup and a save: ~1 s); a test after the first one
# gets the same rows inserted in bulk (~20 ms). tests/catalog/test_seed.py runs the loader itself.
_SEED: tuple[list[tuple[Any, list[dict[str, Any]]]], dict[str, int]] | None = None


def _seed_models() -> list[Any]:
    from apps.catalog import models as m

    return [
        m.Vendor,
        m.Accelerator,
        m.ServerType,
        m.Fabric,
        m.Switch,
        m.StorageTier,
        m.CloudOffering,
        m.CloudPrice,
        m.ResidualValuePoint,
        m.RentalPricePoint,
    ]


def seed_catalog() -> dict[str, int]:
    """Load the seed catalog into the test database; the same rows (ids included) as catalog_load_seed
    writes into an empty catalog, each stamped updated now as its save would be. A catalog that is not empty
    (a test wrote rows before) is loaded by catalog_load_seed itself, which updates rows in place."""
    global _SEED
    from django.core.management.color import no_style
    from django.db import connection, transaction
    from django.utils import timezone

    from apps.catalog.services import catalog_load_seed

    models = _seed_models()
    if any(model.objects.exists() for model in models):
        return catalog_load_seed()
    if _SEED is None:
        counts = catalog_load_seed()
        _SEED = ([(model, list(model.objects.order_by("pk").values())) for model in models], counts)
        return dict(counts)
    tables, counts = _SEED
    now = timezone.now()
    with transaction.atomic():
        for model, rows in tables:
            stamped = [f.attname for f in model._meta.concrete_fields if getattr(f, "auto_now", False)]
            model.objects.bulk_create([model(**{**row, **dict.fromkeys(stamped, now)}) for row in rows])
        # explicit ids leave PostgreSQL's sequences behind; the next row a test saves takes the next id
        with connection.cursor() as cursor:
            for sql in connection.ops.sequence_reset_sql(no_style(), models):
                cursor.execute(sql)
    return dict(counts)


@pytest.fixture
def demos(catalog: dict[str, int]) -> list[Any]:
    """The demo designs (apps/designs/demo.py) on the seed catalog."""
    from apps.designs.demo import demo_load

    return demo_load()


@pytest.fixture
def alice_client(alice: Any) -> Any:
    """A page client (django.test.Client) signed in as alice."""
    from django.test import Client

    client = Client()
    client.force_login(alice)
    return client


@pytest.fixture
def api_client() -> Any:
    from rest_framework.test import APIClient

    return APIClient()


@pytest.fixture
def staff_client(db: Any, django_user_model: Any) -> Any:
    from rest_framework.test import APIClient

    user = django_user_model.objects.create_user("staff", password="pw-staff-123", is_staff=True)
    client = APIClient()
    client.force_authenticate(user)
    return client


@pytest.fixture
def alice(django_user_model: Any) -> Any:
    return django_user_model.objects.create_user("alice", password="pw-alice-123")


@pytest.fixture
def bob(django_user_model: Any) -> Any:
    return django_user_model.objects.create_user("bob", password="pw-bob-123")


@pytest.fixture
def user_client(db: Any, django_user_model: Any) -> Any:
    from rest_framework.test import APIClient

    user = django_user_model.objects.create_user("alice", password="pw-alice-123")
    client = APIClient()
    client.force_authenticate(user)
    client.user = user  # type: ignore[attr-defined]
    return client


@pytest.fixture(scope="session")
def postgres_required() -> None:
    from django.conf import settings

    engine = str(settings.DATABASES["default"]["ENGINE"])
    need("postgresql" in engine, "DATABASE_URL does not point at PostgreSQL")


@pytest.fixture(scope="session")
def redis_url() -> str:
    url = os.environ.get("REDIS_URL", "")
    need(bool(url), "REDIS_URL is not set")
    import redis

    try:
        redis.Redis.from_url(url, socket_connect_timeout=2).ping()
    except redis.RedisError as exc:
        need(False, f"Redis at {url} does not answer: {exc}")
    return url


def _database_url() -> str:
    """The URL of the database the tests use (pytest-django's test database), for a worker process."""
    from django.db import connection

    s = connection.settings_dict
    return (
        f"postgres://{s['USER']}:{s['PASSWORD']}@{s['HOST'] or '127.0.0.1'}:{s['PORT'] or 5432}/{s['NAME']}"
    )


class WorkerProcess:
    """A real `celery worker` process against Redis and the test database."""

    READY = "ready."  # the log line that says it is ready

    def __init__(self, env: dict[str, str], name: str, concurrency: int = 1) -> None:
        self._start(
            env,
            name,
            [
                "worker",
                "--loglevel=INFO",
                f"--concurrency={concurrency}",
                "--pool=prefork",
                f"--hostname={name}@%h",
                "--without-gossip",
                "--without-mingle",
                "--without-heartbeat",
            ],
        )

    def _start(self, env: dict[str, str], name: str, args: list[str]) -> None:
        """`celery -A clusterdesigner <args>` in its own process group, logged to artifacts/."""
        self.log_path = ROOT / "artifacts" / f"celery-{name}.log"
        self.log_path.parent.mkdir(exist_ok=True)
        self.log = self.log_path.open("w")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "celery", "-A", "clusterdesigner", *args],
            cwd=ROOT,
            env=env,
            stdout=self.log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )

    def wait_ready(self, timeout: float = 60) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"celery exited: {self.log_path.read_text()[-3000:]}")
            if self.READY in self.log_path.read_text():
                return
            time.sleep(0.3)
        raise RuntimeError(f"celery not ready in {timeout}s: {self.log_path.read_text()[-3000:]}")

    def kill(self) -> None:
        """SIGKILL the whole process group: the worker dies mid-task, as a crashed machine would."""
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(timeout=30)

    def stop(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.kill()
        self.log.close()


@pytest.fixture
def worker_env(transactional_db: Any, postgres_required: None, redis_url: str) -> dict[str, str]:
    import redis
    from django.conf import settings

    # A clean queue, so no message left by an earlier test reaches this worker. Only this run's keys go:
    # the broker keys carry a per-run prefix (settings.CELERY_KEY_PREFIX), so parallel runs don't collide.
    client = redis.Redis.from_url(redis_url)
    for key in client.scan_iter(match=f"{settings.CELERY_KEY_PREFIX}*"):
        client.delete(key)
    env = dict(os.environ)
    env.update(
        DATABASE_URL=_database_url(),
        REDIS_URL=redis_url,
        DJANGO_SECRET_KEY="test-worker-secret",
        DB_CONN_MAX_AGE="0",
        CELERY_KEY_PREFIX=settings.CELERY_KEY_PREFIX,
    )
    return env


@pytest.fixture
def celery_worker_process(worker_env: dict[str, str]) -> Iterator[WorkerProcess]:
    worker = WorkerProcess(worker_env, "w1")
    try:
        worker.wait_ready()
        yield worker
    finally:
        worker.stop()


@pytest.fixture(scope="session")
def chromium_path() -> str:
    need(Path(CHROMIUM).exists() and shutil.which(CHROMIUM) is not None, f"{CHROMIUM} is not installed")
    return CHROMIUM


VIEWPORT: ViewportSize = {"width": 1280, "height": 800}


@pytest.fixture(scope="session")
def chromium_profile(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One Chromium profile folder per test process, kept across its browser files: V8's code cache lives
    there (see ``profile_context``)."""
    return tmp_path_factory.mktemp("chromium-profile")


@pytest.fixture(scope="module")
def profile_context(chromium_path: str, chromium_profile: Path) -> Iterator[Any]:
    """Headless Chromium for one test file (~1 s to launch), as a persistent browser context on
    ``chromium_profile``. Module scope, not session: Playwright's sync API runs an asyncio event loop on this
    thread while it is open, and browser files share pytest-xdist workers with the other tests, which must
    not run inside that loop (see SERIAL_FOLDERS).

    Why a profile: a chart page parses and compiles plotly.min.js (4.8 MB); in a new incognito context (what
    ``browser.new_context()`` makes) that is done from scratch every time, and V8 keeps compiled code only in
    a profile's disk cache. Measured on this machine (headless shell 156, the design page with its 8 charts,
    Chromium's CPU per page view): a fresh incognito context 3.4-3.5 s, a new tab in a profile that has seen
    the page twice 2.0-2.1 s, the same with plotly.min.js blocked 0.55 s. ``page`` opens each test's tab
    here, with no cookies (so no session) left from the test before; the app keeps nothing else in the
    browser (no localStorage, sessionStorage or IndexedDB), and its pages carry no validators a cache could
    reuse."""
    from playwright.sync_api import sync_playwright

    # The ORM calls the tests make between page actions are synchronous, so Django's async-safety guard
    # (which sees Playwright's loop) does not apply while the browser is open; put back after.
    before = os.environ.get("DJANGO_ALLOW_ASYNC_UNSAFE")
    os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"
    try:
        with sync_playwright() as pw:
            context = pw.chromium.launch_persistent_context(
                str(chromium_profile),
                executable_path=chromium_path,
                headless=True,
                viewport=VIEWPORT,
                accept_downloads=True,
                args=[
                    "--no-sandbox",
                    "--disable-gpu",
                    "--disable-background-networking",
                    "--disable-component-update",
                    "--disable-sync",
                    "--no-first-run",
                    "--disable-quic",
                ],
            )
            # The headless shell quits when its last tab closes: keep one blank tab open for the file.
            if not context.pages:
                context.new_page()
            yield context
            context.close()
    finally:
        if before is None:
            os.environ.pop("DJANGO_ALLOW_ASYNC_UNSAFE", None)
        else:
            os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = before


@pytest.fixture(scope="module")
def browser(profile_context: Any) -> Any:
    """The Chromium of this test file: ``browser.new_context()`` is a fresh incognito context (a second
    user, a signed-out reader), separate from the profile the ``page`` fixture uses."""
    return profile_context.browser


@pytest.fixture
def page(profile_context: Any) -> Iterator[Any]:
    """A new tab of the file's profile with no cookies: every test starts signed out. Its script errors
    collect in ``page.js_errors``. Every tab the test opened is closed after it."""
    profile_context.clear_cookies()
    already_open = list(profile_context.pages)
    pg = profile_context.new_page()
    errors: list[str] = []
    pg.on("pageerror", lambda exc: errors.append(str(exc)))
    pg.js_errors = errors
    yield pg
    for opened in profile_context.pages:
        if opened not in already_open:
            opened.close()
    profile_context.clear_cookies()


# A full-page screenshot for review, as JPEG at quality 80: the walks' pages are 1280 × 12,000-16,500 px,
# and Chromium spent ~0.3 s less CPU on one as JPEG than as PNG (~0.9 s a shot, rendering included; measured
# on tests/browser/test_review_walk.py and test_verdict_items.py, each format taken first in turn), with 20 %
# fewer bytes. The whole page is kept. No test reads a screenshot's pixels back; the part and viewport shots
# the tests take beside it (small, cheap, text read at full size) stay PNG.
SCREENSHOT_SUFFIX = ".jpg"


def screenshot(page: Any, name: str) -> Path:
    path = ROOT / "artifacts" / "screenshots" / f"{name}{SCREENSHOT_SUFFIX}"
    path.parent.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(path), full_page=True, type="jpeg", quality=80)
    return path


def pytest_collection_finish(session: pytest.Session) -> None:
    """Python's cyclic garbage collector walks every tracked object on each full pass: after collection a
    pytest process holds Django, the apps, the engine, schemathesis and every test module (long-lived, never
    garbage). They are moved out of its passes (gc.freeze), and young collections run every 10,000 net
    allocations rather than 700 (the suite allocates many short-lived dicts per request and engine call). On
    tests/designs/test_api.py, analysis/test_api.py, plans/test_api.py, dashboard/test_pages.py and
    engine/test_rent_or_own.py (PostgreSQL, two alternating runs each): 19.55 / 19.66 s of CPU as before,
    18.61 / 17.99 s frozen, 18.34 / 17.51 s frozen with the threshold. Nothing is left uncollected: the
    thresholds only space the passes out."""
    freeze_long_lived()
    gc.set_threshold(10_000, 50, 50)


def freeze_long_lived() -> None:
    """Collect, then move every object alive now out of the collector's passes (a test that unfreezes, to
    measure or to release its own frozen objects, calls this afterwards to restore the suite's freeze)."""
    gc.collect()
    gc.freeze()
