"""Browser tests end only when the live server has answered every request the page sent.

A page can leave a request in flight when its test returns (an editor's evaluate after its last input, a
chart's fetch). pytest-django then flushes the database for the next test while that request's thread still
holds a transaction: the flush fails ("Database test_… couldn't be flushed"), the next test finds the last
one's user ("duplicate key … username=engineer"), and the late request meets the closed database (seen in
CI: tests/browser/test_editor_keeps_spec.py, stop 31). Teardown runs in reverse order of setup, so this
fixture, set up after the database and before the page, runs its teardown after the test's tabs are closed and
before the flush: it closes every other browser context still open and waits for the server's request threads.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import pytest

DRAIN_SECONDS = 60.0


def _request_threads(live_server: Any) -> list[threading.Thread]:
    """The live server's request threads (socketserver.ThreadingMixIn keeps them while block_on_close)."""
    threads = getattr(live_server.thread.httpd, "_threads", None)
    # Until its first request the server holds socketserver's _NoThreads, which is not a list of threads.
    return [t for t in list(threads) if t.is_alive()] if isinstance(threads, list) else []


@pytest.fixture(autouse=True)
def _live_server_drained(request: pytest.FixtureRequest, transactional_db: Any) -> Iterator[None]:
    yield
    if "live_server" not in request.fixturenames:
        return
    if "browser" in request.fixturenames:
        # The file's profile context stays open for the next test (``page`` closed this test's tabs there).
        profile = request.getfixturevalue("profile_context")
        for context in list(request.getfixturevalue("browser").contexts):
            if context is not profile:
                context.close()
    live_server = request.getfixturevalue("live_server")
    for thread in _request_threads(live_server):
        thread.join(DRAIN_SECONDS)
    still = _request_threads(live_server)
    assert not still, f"live-server requests still running {DRAIN_SECONDS:.0f} s after the test: {still}"
