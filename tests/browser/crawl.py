"""Crawl the site in headless Chromium as every kind of visitor and follow every link they can see.

Five actors: signed out, the owner of a private design and a finished sweep, another ordinary user, a
reader of the owner's share link (signed out), and a staff user in /admin/. Each starts at the pages the
navigation and the README name, then follows every same-origin <a href> breadth-first, each URL once, at
most MAX_URLS_PER_ACTOR of them; nothing that signs out or posts is followed. Links that download (a
`download` attribute, an /export/ URL, an attachment) are fetched with the page's own cookies and the file
is opened as its type. The owner's export buttons and the share page's downloads are also clicked.

Every problem is collected, not raised at the first: a 5xx, a 4xx the actor should not get, a console
error, an uncaught script error, a failed sub-resource, a chart that never draws, a download that is not the
file it claims to be. The test fails once at the end with the whole list, so one run shows everything that
is broken. A screenshot of each distinct page lands in artifacts/screenshots/crawl-<group>-*.jpg for review
(the other user's only of the kinds the owner's crawl never reaches: Actor.screenshot_kinds), and
artifacts/crawl-<group>.log lists every URL each actor reached with its status and time.

The crawl is run by the test_crawl_*.py files, one group of actors each (crawl_as), so that make test's
workers share it out (one file runs on one worker: --dist loadfile).
"""

from __future__ import annotations

import copy
import csv
import hashlib
import io
import time
from collections import deque
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs, urldefrag, urlsplit

from tests.browser.test_dashboard import sign_in
from tests.conftest import ROOT, screenshot

PASSWORD = "pw-crawler-123"
MAX_URLS_PER_ACTOR = 150
NAVIGATION_TIMEOUT_MS = 30000
CHART_TIMEOUT_MS = 15000
CLICK_DOWNLOAD_TIMEOUT_S = 10.0
LOGIN_PATHS = ("/accounts/login/", "/admin/login/")
# Following these would sign the actor out (Django's logout is a POST form, but a GET link must not be tried).
NEVER_FOLLOW = ("/accounts/logout/", "/admin/logout/")
SWEEP_PARAMS = {
    "model": {"preset": "llama3-8b"},
    "training": {"tokens": 1e11, "global_batch_tokens": 2097152, "precision": "bf16"},
    "accelerators": ["h100-sxm", "a100-80gb"],
    "nodes": [1, 2],
    "pricing_models": ["on_demand", "own"],
}


@dataclass
class Actor:
    name: str
    username: str | None  # None: signed out
    start: list[str]
    # path?query -> the 4xx this actor must get there (e.g. 404 on someone else's private design).
    expected_status: dict[str, int] = field(default_factory=dict)
    scope: str = "/"  # follow only links under this path
    # An actor whose session is the same as another's (both signed out) skips the pages that one crawled.
    same_session_as: str | None = None
    # The page kinds (_template_key) this actor's crawl screenshots: those starting with one of these, or
    # every kind when empty.
    screenshot_kinds: tuple[str, ...] = ()


@dataclass
class Problem:
    actor: str
    url: str
    what: str
    linked_from: str = ""


@dataclass
class CrawlState:
    """One actor's crawl: what it has seen and what went wrong."""

    actor: Actor
    base: str
    problems: list[Problem]
    group: str  # the test file's actors (crawl_as): its screenshots and log are named by it
    current: str = ""
    seen: set[str] = field(default_factory=set)
    visited: int = 0
    status_seen: set[str] = field(default_factory=set)  # URLs whose HTTP status was already checked
    console: list[tuple[str, str, str]] = field(default_factory=list)  # (page, text, resource url)
    favicons: set[str] = field(default_factory=set)
    log: list[str] = field(default_factory=list)  # one line per URL: status, time, how, URL
    last_status: int | str = "-"

    def fail(self, url: str, what: str, linked_from: str = "") -> None:
        self.problems.append(
            Problem(self.actor.name, _short(self.base, url), what, _short(self.base, linked_from))
        )


def _short(base: str, url: str) -> str:
    return url[len(base) :] or "/" if url.startswith(base) else url


def _setup(django_user_model: Any) -> dict[str, Any]:
    """Seed catalog and demo designs (owned by 'demo', visible to everyone signed in), an owner with a private
    design, a share link to it and a finished sweep, another user, and a superuser."""
    from apps.analysis.models import Analysis
    from apps.analysis.services import analysis_create
    from apps.designs.demo import demo_load
    from apps.designs.models import Design
    from apps.designs.services import design_create, share_link_create
    from tests.conftest import seed_catalog

    seed_catalog()
    demo_load()
    owner = django_user_model.objects.create_user("owner", password=PASSWORD)
    django_user_model.objects.create_user("other", password=PASSWORD)
    django_user_model.objects.create_superuser("staff", "staff@example.com", PASSWORD)
    demos = list(Design.objects.filter(is_demo=True).order_by("id"))
    private = design_create(
        owner=owner, name="Owner's private 70B plan", spec=copy.deepcopy(demos[0].current.spec)
    )
    _, token = share_link_create(design=private, user=owner)
    sweep = analysis_create(owner=owner, kind="sweep", params=SWEEP_PARAMS)
    sweep.refresh_from_db()
    assert sweep.status == Analysis.Status.SUCCEEDED, sweep.error
    return {"demos": demos, "private": private, "token": token, "sweep": sweep}


def _actors(seeded: dict[str, Any]) -> list[Actor]:
    demos, private, token, sweep = seeded["demos"], seeded["private"], seeded["token"], seeded["sweep"]
    navigation = [
        "/",
        "/designs/new/",
        "/compare/",
        "/sweep/",
        f"/sweep/{sweep.pk}/",
        "/catalog/",
        "/catalog/prices/",
        "/catalog/infrastructure/",
        "/api/v1/docs/",
    ]
    design_pages = [f"/designs/{d.pk}/" for d in [*demos, private]]
    # What the README tells a signed-in user to open (Interfaces): its compare form, the API root and schema,
    # its filter examples, and the CSV export of prices.
    readme = [
        "/compare/?ids=" + ",".join(str(d.pk) for d in demos[:3]),
        "/api/v1/",
        "/api/v1/schema/",
        "/api/v1/accelerators/?vendor=nvidia&min_memory_gib=80&precision=fp8&ordering=-bf16_dense_tflops",
        "/api/v1/cloud-prices/?provider=aws&pricing_model=spot&accelerator=h100-sxm&region=us-east-1",
        "/api/v1/cloud-prices/export/",
    ]
    return [
        Actor("owner", "owner", navigation + design_pages + readme),
        Actor(
            "other user",
            "other",
            navigation + design_pages + readme,
            # Someone else's private design and sweep are a 404 (never 403: their existence is not revealed).
            expected_status={f"/designs/{private.pk}/": 404, f"/sweep/{sweep.pk}/": 404},
            # Its other pages are the owner's kinds, first reached on the same demo designs and lists (the
            # owner's crawl shoots them, ~0.5-1 s of Chromium's CPU each): only what the owner never sees.
            screenshot_kinds=("error-",),
        ),
        Actor("signed out", None, navigation + design_pages + ["/api/v1/"]),
        Actor(
            "share link", None, [f"/share/{token}/", f"/api/v1/shared/{token}/"], same_session_as="signed out"
        ),
        Actor("staff", "staff", ["/admin/"], scope="/admin/"),
    ]


# --- Which links to follow


def _admin_key(path: str, query: str) -> str | None:
    """Admin pages to visit: the index, each app index, each changelist (unfiltered) and one change page per
    model, plus the custom views (the CSV import). None to skip (filters, sorting, add, history, delete)."""
    parts = path.strip("/").split("/")
    if query or path in NEVER_FOLLOW:
        return None
    if len(parts) >= 4 and parts[3].isdigit():
        return f"admin change page of {parts[1]}.{parts[2]}" if parts[4:] == ["change"] else None
    if (len(parts) >= 4 and parts[3] == "add") or parts[1:2] == ["r"]:
        return None
    return path


def _follow_key(state: CrawlState, url: str) -> str | None:
    """The key under which `url` counts as seen, or None when the crawl must not follow it."""
    parts = urlsplit(url)
    if f"{parts.scheme}://{parts.netloc}" != state.base:
        return None
    path = parts.path
    if not path.startswith(state.actor.scope) or any(path.startswith(p) for p in NEVER_FOLLOW):
        return None
    if path.startswith("/admin/") and path not in LOGIN_PATHS:
        return _admin_key(path, parts.query)
    if path in LOGIN_PATHS:
        return path  # the same page whatever its ?next=
    return f"{path}?{parts.query}" if parts.query else path


def _is_download(url: str, has_download_attribute: bool) -> bool:
    path = urlsplit(url).path
    return has_download_attribute or "/export/" in path


# --- Checking files


def _file_kind(url: str, headers: dict[str, str]) -> str:
    disposition = headers.get("content-disposition", "")
    if "filename=" in disposition:
        name = disposition.split("filename=", 1)[1].strip().strip('"')
        return name.rsplit(".", 1)[-1].lower()
    content_type = headers.get("content-type", "").split(";")[0].strip()
    by_type = {
        "text/csv": "csv",
        "application/json": "json",
        "application/yaml": "yaml",
        "application/vnd.oai.openapi": "yaml",
        "application/vnd.oai.openapi+json": "json",
        "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet": "xlsx",
    }
    if content_type in by_type:
        return by_type[content_type]
    return (parse_qs(urlsplit(url).query).get("format") or ["unknown"])[0]


# Files already opened in this process, by kind and content: a download whose bytes equal one already checked
# (a button's file that the crawl also fetched by its URL) has the same answer, without opening it again.
_FILE_PROBLEMS: dict[tuple[str, bytes], str | None] = {}


def _file_problem(kind: str, body: bytes) -> str | None:
    """Why `body` is not a valid file of its kind, or None."""
    key = (kind, hashlib.sha256(body).digest())
    if key not in _FILE_PROBLEMS:
        _FILE_PROBLEMS[key] = _opened_file_problem(kind, body)
    return _FILE_PROBLEMS[key]


def _opened_file_problem(kind: str, body: bytes) -> str | None:
    import json

    import openpyxl
    import yaml

    if not body:
        return f"empty {kind} file"
    try:
        if kind == "xlsx":
            workbook = openpyxl.load_workbook(io.BytesIO(body), read_only=True, data_only=True)
            cells = [c for ws in workbook.worksheets for row in ws.iter_rows(values_only=True) for c in row]
            if not any(c not in (None, "") for c in cells):
                return "XLSX has no filled cell"
            return None
        text = body.decode("utf-8-sig")
        if kind == "csv":
            rows = [r for r in csv.reader(io.StringIO(text)) if r]
            return None if len(rows) >= 2 else f"CSV has {len(rows)} row(s), expected a header and data"
        if kind == "json":
            json.loads(text)
            return None
        if kind in ("yaml", "yml"):
            documents = [d for d in yaml.safe_load_all(text) if d is not None]
            return (
                None if documents and all(isinstance(d, dict) for d in documents) else "YAML has no mapping"
            )
        if kind == "sbatch":
            # sbatch refuses a script whose first line is not an interpreter line. (The torchrun .sh is a
            # snippet to paste or source on each node, so it needs none.)
            return None if text.startswith("#!") else f"sbatch script does not start with #!: {text[:60]!r}"
        return None if text.strip() else f"blank {kind} file"
    except Exception as exc:  # noqa: BLE001 - any parse error is the finding
        return f"not a valid {kind} file: {type(exc).__name__}: {str(exc)[:200]}"


BROWSER_ACCEPT = "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"


def _fetch(state: CrawlState, page: Any, url: str, linked_from: str, *, download: bool) -> bool:
    """Fetch `url` with the page's cookies, as the browser would, and check the file it answers. A link marked
    as a download must come as an attachment. Otherwise (an API URL) the answer may be a page the browser
    shows (the browsable API): then return True and let the caller open it, so that only what the browser
    cannot show (the OpenAPI schema's YAML, which Chromium would save as a download) is checked here."""
    started = time.monotonic()
    headers = {} if download else {"Accept": BROWSER_ACCEPT}
    response = page.request.get(url, headers=headers, max_redirects=0, timeout=NAVIGATION_TIMEOUT_MS)
    status = response.status
    answer = {k.lower(): v for k, v in response.headers.items()}
    if not download and answer.get("content-type", "").startswith("text/html"):
        return True
    state.status_seen.add(url)
    state.last_status = status
    state.log.append(
        f"{status} {1000 * (time.monotonic() - started):6.0f} ms  fetched  {_short(state.base, url)}"
    )
    if status >= 300:
        detail = response.text()[:160].replace("\n", " ") if status >= 400 else answer.get("location")
        if not _status_expected(state, url, status, answer.get("location", "")):
            state.fail(url, f"{'download ' if download else ''}answers {status}: {detail}", linked_from)
        return False
    if download and "attachment" not in answer.get("content-disposition", ""):
        served = answer.get("content-type")
        state.fail(url, f"download link served inline ({served}), not as an attachment", linked_from)
    problem = _file_problem(_file_kind(url, answer), response.body())
    if problem:
        state.fail(url, problem, linked_from)
    return False


# --- Visiting pages


def _expected_status(state: CrawlState, url: str) -> int | None:
    parts = urlsplit(url)
    key = f"{parts.path}?{parts.query}" if parts.query else parts.path
    return state.actor.expected_status.get(key, state.actor.expected_status.get(parts.path))


def _status_expected(state: CrawlState, url: str, status: int, location: str = "") -> bool:
    if _expected_status(state, url) == status:
        return True
    # Signed out, a page that needs an account sends to the sign-in page.
    return state.actor.username is None and status == 302 and urlsplit(location).path in LOGIN_PATHS


def _template_key(path: str, status: int, *, charts: bool) -> str:
    """Which page template a URL shows, for one screenshot each: the URL's name (and whether it drew charts,
    so the compare page is shown with its results too), the admin's model pages and the browsable API's pages
    counted once each."""
    from django.urls import Resolver404, resolve

    if status >= 400:
        return f"error-{status}"
    if path.startswith("/api/") and path != "/api/v1/docs/":
        return "api-browsable"
    try:
        match = resolve(path)
    except Resolver404:
        return path.strip("/").replace("/", "-") or "root"
    if match.namespace == "admin":
        if "object_id" in match.kwargs:
            return "admin-change"
        if match.url_name.endswith("_changelist"):
            return "admin-changelist"
    return match.view_name.replace(":", "-").replace("_", "-") + ("-charts" if charts else "")


LINKS_JS = """() => Array.from(document.querySelectorAll('a[href]')).map(a => ({
  href: a.href, raw: a.getAttribute('href'), download: a.hasAttribute('download'),
  text: a.textContent.trim().slice(0, 60)}))"""
# What a loaded page holds, read in one call (each page.evaluate or locator count is a round trip through
# Playwright's driver): its charts, its icon (or /favicon.ico when none is declared) and whether it shows the
# compare table.
PAGE_JS = """() => { const l = document.querySelector('link[rel~="icon"]');
  return {charts: document.querySelectorAll('[data-chart]').length,
          favicon: l ? l.href : location.origin + '/favicon.ico',
          compareTable: document.querySelector('#compare-table') !== null}; }"""


# The titles (and subtitles) Plotly drew past their chart's left or right edge, where the page cuts them off.
TITLES_CUT_JS = """() => [...document.querySelectorAll('[data-chart][data-rendered="1"]')].flatMap(el => {
  const box = el.getBoundingClientRect();
  return [...el.querySelectorAll('.gtitle, .gtitle-subtitle')]
    .filter(t => { const r = t.getBoundingClientRect();
                   return r.left < box.left - 1 || r.right > box.right + 1; })
    .map(t => t.textContent); })"""


def _wait_for_page_scripts(state: CrawlState, page: Any, url: str, charts: int) -> None:
    """Wait for what the page's scripts draw after load (its `charts` charts), so their errors land on this
    page, not the next."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    if charts:
        try:
            page.wait_for_function(
                "n => document.querySelectorAll('[data-chart][data-rendered=\"1\"]').length >= n",
                arg=charts,
                timeout=CHART_TIMEOUT_MS,
            )
        except PlaywrightTimeout:
            drawn = page.locator("[data-chart][data-rendered='1']").count()
            state.fail(url, f"only {drawn} of {charts} charts drawn after {CHART_TIMEOUT_MS // 1000} s")
        for title in page.evaluate(TITLES_CUT_JS):
            state.fail(url, f"chart title cut off by its chart's edge: {title!r}")
    if urlsplit(url).path == "/api/v1/docs/":
        try:
            page.wait_for_selector(
                ".swagger-ui .opblock, .swagger-ui .errors-wrapper", timeout=CHART_TIMEOUT_MS
            )
        except PlaywrightTimeout:
            state.fail(url, "Swagger UI did not render the schema")
        if page.locator(".swagger-ui .errors-wrapper").count():
            state.fail(
                url, "Swagger UI shows errors: " + page.inner_text(".swagger-ui .errors-wrapper")[:200]
            )


def _page_checks(state: CrawlState, page: Any, url: str, held: dict[str, Any]) -> None:
    """What a page must show beyond loading cleanly (`held`: what PAGE_JS read from it)."""
    parts = urlsplit(url)
    if parts.path == "/compare/" and "ids" in parse_qs(parts.query) and not held["compareTable"]:
        error = page.locator(".error").all_inner_texts()
        state.fail(url, f"compare page with ids shows no comparison table{f': {error}' if error else ''}")


def _visit(state: CrawlState, page: Any, url: str, linked_from: str, shots: set[str]) -> list[dict[str, Any]]:
    """Open `url` in the page; check it; return its links (none when it is not a page to crawl on from)."""
    from playwright.sync_api import Error as PlaywrightError

    state.current = url
    state.last_status = "-"
    try:
        response = page.goto(url, wait_until="load", timeout=NAVIGATION_TIMEOUT_MS)
    except PlaywrightError as exc:
        if "Download is starting" in str(exc) or "net::ERR_ABORTED" in str(exc):
            # An attachment behind a plain link, or a type the browser does not show: check the file.
            if _fetch(state, page, url, linked_from, download=False):
                state.fail(url, f"navigation to a page aborted: {str(exc).splitlines()[0]}", linked_from)
        else:
            state.fail(url, f"navigation failed: {str(exc).splitlines()[0]}", linked_from)
        return []
    if response is None:
        state.fail(url, "no response", linked_from)
        return []
    state.status_seen.add(url)
    state.status_seen.add(page.url)
    state.last_status = response.status
    # The redirect chain: a page that needs an account sends a signed-out actor to the sign-in page.
    hops = []
    request = response.request.redirected_from
    while request is not None:
        hop = request.response()
        hops.insert(
            0, (request.url, hop.status if hop else 0, (hop.headers.get("location", "") if hop else ""))
        )
        state.status_seen.add(request.url)
        request = request.redirected_from
    for hop_url, status, location in hops:
        if urlsplit(location).path in LOGIN_PATHS and not _status_expected(state, hop_url, status, location):
            state.fail(hop_url, f"{status} redirect to {_short(state.base, location)}", linked_from)
    status = response.status
    final = page.url
    wanted = _expected_status(state, url)
    if wanted is not None and status != wanted:
        state.fail(url, f"expected {wanted}, got {status}", linked_from)
    elif status >= 400 and wanted is None:
        body = ""
        try:
            body = page.inner_text("body")[:160].replace("\n", " ")
        except PlaywrightError:
            pass
        state.fail(url, f"{status}: {body}", linked_from)
    final_key = _follow_key(state, final)
    if final != url and final_key in state.seen and hops:
        return []  # redirected to a page already crawled (the sign-in page)
    if final_key:
        state.seen.add(final_key)
    charts = 0
    if status < 400:
        held = page.evaluate(PAGE_JS)
        charts = held["charts"]
        _wait_for_page_scripts(state, page, url, charts)
        _page_checks(state, page, url, held)
        state.favicons.add(held["favicon"])
    key = _template_key(urlsplit(final).path, status, charts=charts > 0)
    if key not in shots and key.startswith(state.actor.screenshot_kinds or ("",)):
        shots.add(key)
        screenshot(page, f"crawl-{state.group}-{key}")
    if status >= 400 or (
        urlsplit(final).path.startswith("/api/") and urlsplit(final).path != "/api/v1/docs/"
    ):
        # The browsable API links every row and format; the README's API links are checked, not crawled on.
        return []
    return page.evaluate(LINKS_JS)


def _crawl(state: CrawlState, page: Any, shots: set[str]) -> None:
    queue: deque[tuple[str, str, bool]] = deque()
    for path in state.actor.start:
        url = state.base + path
        key = _follow_key(state, url) or path
        if key not in state.seen:
            state.seen.add(key)
            queue.append((url, "", False))
    while queue:
        if state.visited >= MAX_URLS_PER_ACTOR:
            state.fail(queue[0][0], f"crawl stopped at {MAX_URLS_PER_ACTOR} URLs with {len(queue)} left")
            return
        url, linked_from, download = queue.popleft()
        state.visited += 1
        state.current = url
        if _is_download(url, download):
            _fetch(state, page, url, linked_from, download=True)
            continue
        path = urlsplit(url).path
        if path.startswith("/api/") and path != "/api/v1/docs/":
            if not _fetch(state, page, url, linked_from, download=False):
                continue
        started = time.monotonic()
        links = _visit(state, page, url, linked_from, shots)
        landed = f" -> {_short(state.base, page.url)}" if page.url != url and state.last_status != "-" else ""
        elapsed_ms = 1000 * (time.monotonic() - started)
        state.log.append(
            f"{state.last_status} {elapsed_ms:6.0f} ms  visited  {_short(state.base, url)}{landed}"
        )
        for link in links:
            raw = (link["raw"] or "").strip()
            if raw.startswith(("#", "mailto:", "javascript:", "tel:")):
                continue
            target = urldefrag(link["href"])[0]
            key = _follow_key(state, target)
            if key is None or key in state.seen:
                continue
            state.seen.add(key)
            queue.append((target, f"{url} '{link['text']}'", bool(link["download"])))


def _listen(state: CrawlState, page: Any) -> None:
    def on_console(message: Any) -> None:
        if message.type == "error":
            state.console.append((state.current, message.text, (message.location or {}).get("url", "")))

    def on_response(response: Any) -> None:
        request = response.request
        if request.is_navigation_request() and request.frame == page.main_frame:
            return  # the page's own status is checked by _visit
        state.status_seen.add(response.url)
        if response.status >= 400:
            state.fail(response.url, f"{request.resource_type} answers {response.status}", state.current)

    page.on("console", on_console)
    page.on("pageerror", lambda exc: state.fail(state.current, f"uncaught script error: {exc}"))
    page.on("response", on_response)


def _report_console(state: CrawlState) -> None:
    for url, text, resource in state.console:
        # Chromium logs every 4xx/5xx resource as a console error too: those statuses are already checked
        # (and some expected), so only a failed load no status check saw is reported from the console.
        if text.startswith("Failed to load resource: the server responded") and resource in state.status_seen:
            continue
        state.fail(url, f"console error: {text}" + (f" ({resource})" if resource and resource != url else ""))


def _check_favicons(states: list[CrawlState], request: Any, problems: list[Problem]) -> None:
    """Browsers fetch the page's icon (or /favicon.ico when none is declared) on every page; Playwright does
    not report that request, so each icon URL any page used is fetched once here."""
    checked: set[str] = set()
    for state in states:
        for url in sorted(state.favicons - checked):
            checked.add(url)
            response = request.get(url, timeout=NAVIGATION_TIMEOUT_MS)
            content_type = response.headers.get("content-type", "")
            if response.status != 200 or not content_type.startswith("image/"):
                what = f"favicon answers {response.status} ({content_type or 'no type'})"
                problems.append(Problem("every actor", _short(state.base, url), what))


def _click_download(state: CrawlState, page: Any, page_url: str, selector: str, index: int) -> None:
    """Click the index-th `selector` on `page_url` as a user would and open what downloads."""
    from playwright.sync_api import Error as PlaywrightError

    if page.url != page_url:  # the previous click opened a page instead of downloading
        page.goto(page_url, wait_until="load")
    link = page.locator(selector).nth(index)
    label = link.inner_text().strip()
    href = link.get_attribute("href") or ""
    where = f"{_short(state.base, page_url)} → click '{label}' ({href})"
    state.current = where
    downloads: list[Any] = []
    navigations: list[Any] = []

    def on_response(response: Any) -> None:
        if response.request.is_navigation_request() and response.request.frame == page.main_frame:
            navigations.append(response)

    def on_download(download: Any) -> None:
        downloads.append(download)

    page.on("download", on_download)
    page.on("response", on_response)
    try:
        link.click()
        deadline = time.monotonic() + CLICK_DOWNLOAD_TIMEOUT_S
        while not downloads and time.monotonic() < deadline:
            last = navigations[-1] if navigations else None
            if last is not None and "attachment" not in last.headers.get("content-disposition", ""):
                break  # the click opened a page instead of downloading a file
            page.wait_for_timeout(100)
    finally:
        page.remove_listener("download", on_download)
        page.remove_listener("response", on_response)
    if not downloads:
        if navigations:
            last = navigations[-1]
            state.status_seen.add(last.url)
            what = (
                f"opened a page ({last.status} {last.headers.get('content-type', '')}) instead of a download"
            )
        else:
            what = f"nothing downloaded in {CLICK_DOWNLOAD_TIMEOUT_S:.0f} s"
        state.problems.append(Problem(state.actor.name, where, what))
        return
    download = downloads[0]
    try:
        body = open(download.path(), "rb").read()
    except PlaywrightError as exc:
        state.problems.append(Problem(state.actor.name, where, f"download failed: {exc}"))
        return
    kind = download.suggested_filename.rsplit(".", 1)[-1].lower()
    problem = _file_problem(kind, body)
    if problem:
        state.problems.append(Problem(state.actor.name, where, f"{download.suggested_filename}: {problem}"))


def _message(problems: list[Problem]) -> str:
    lines = [f"{len(problems)} problem(s) found by the crawl:"]
    by_what: dict[str, list[Problem]] = {}
    for p in problems:
        by_what.setdefault(p.what, []).append(p)
    for what, group in by_what.items():
        lines.append(f"- {what}")
        for p in group:
            lines.append(
                f"    [{p.actor}] {p.url}" + (f"  (linked from {p.linked_from})" if p.linked_from else "")
            )
    return "\n".join(lines)


def crawl_as(
    actor_names: tuple[str, ...], group: str, browser: Any, live_server: Any, django_user_model: Any
) -> None:
    """Crawl the site as the actors named (of _actors'), on the seeded data; fail once with every problem.
    make test spreads the crawl over its workers by actor (pytest-xdist runs a file on one worker): the owner,
    the other user, the signed-out visitor with the share-link reader (whose crawl skips the pages the
    signed-out one saw: one session), and staff, each a file (test_crawl_*.py) whose screenshots and log
    carry its group's name."""
    for old in (ROOT / "artifacts" / "screenshots").glob(f"crawl-{group}-*"):
        old.unlink()  # only this run's pages, for the reviewer
    seeded = _setup(django_user_model)
    actors = [actor for actor in _actors(seeded) if actor.name in actor_names]
    assert [actor.name for actor in actors] == list(actor_names), "an actor named is not one of _actors'"
    base = live_server.url
    problems: list[Problem] = []
    shots: set[str] = set()
    states: list[CrawlState] = []
    for actor in actors:
        context = browser.new_context(viewport={"width": 1280, "height": 800}, accept_downloads=True)
        try:
            page = context.new_page()
            state = CrawlState(actor=actor, base=base, problems=problems, group=group)
            if actor.same_session_as:
                state.seen = set(next(s for s in states if s.actor.name == actor.same_session_as).seen)
            states.append(state)
            if actor.username:
                sign_in(page, base, username=actor.username, password=PASSWORD, then=actor.scope)
            _listen(state, page)
            _crawl(state, page, shots)
            _click_downloads(state, page, seeded)
            _report_console(state)
        finally:
            context.close()
    context = browser.new_context()
    try:
        _check_favicons(states, context.request, problems)
    finally:
        context.close()
    log = ROOT / "artifacts" / f"crawl-{group}.log"
    log.write_text("".join(f"== {s.actor.name}\n" + "".join(f"{line}\n" for line in s.log) for s in states))
    # A crawl that saw one page or none (a failed sign-in, a start page that broke) proves nothing.
    assert all(s.visited > 1 for s in states), [(s.actor.name, s.visited) for s in states]
    assert not problems, _message(problems)


def _click_downloads(state: CrawlState, page: Any, seeded: dict[str, Any]) -> None:
    """Click the download buttons as a user would (the crawl fetched their URLs directly): the owner's on the
    private design, the share-link reader's on the share page."""
    clicks = {
        "owner": (f"/designs/{seeded['private'].pk}/", "[role=toolbar] a[href*='/export/']"),
        "share link": (f"/share/{seeded['token']}/", ".downloads a"),
    }
    if state.actor.name in clicks:
        path, selector = clicks[state.actor.name]
        page.goto(state.base + path)
        for index in range(page.locator(selector).count()):
            _click_download(state, page, state.base + path, selector, index)
