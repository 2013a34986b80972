"""gunicorn with the shipped config (clusterdesigner/gunicorn_conf.py) and an access log: share tokens never
reach it, whether in the request line, an encoded path or the Referer of the page's own assets."""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.conftest import ROOT

# One Django start-up for the three steps (each manage.py costs ~1.4 s of CPU to start): the same commands
# as `manage.py migrate --noinput -v 0` and `manage.py load_catalog`, then the share link, its token last.
MAKE_SHARE_LINK = """
from django.core.management import call_command
call_command("migrate", "--noinput", "-v", "0")
call_command("load_catalog")
from django.contrib.auth import get_user_model
from apps.designs.demo import DEMOS
from apps.designs.services import design_create, share_link_create
owner = get_user_model().objects.create_user("owner")
design = design_create(owner=owner, name="Logged design", spec=DEMOS[3]["spec"])
print(share_link_create(design=design, user=owner, label="finance")[1])
"""


@dataclass
class Served:
    base: str
    token: str
    access_log: Path
    output: Path
    proc: subprocess.Popen[bytes]


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _manage(env: dict[str, str], *args: str) -> str:
    result = subprocess.run(
        [sys.executable, "manage.py", *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return result.stdout


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    tmp = tmp_path_factory.mktemp("gunicorn")
    env = {k: v for k, v in os.environ.items() if not k.startswith("DJANGO_") and k not in ("REDIS_URL",)}
    # Its own SQLite file; debug on so that static files come from the finders without collectstatic.
    env.update(
        DATABASE_URL=f"sqlite:///{tmp / 'db.sqlite3'}",
        DJANGO_SECRET_KEY="gunicorn-log-test",
        DJANGO_DEBUG="1",
        DJANGO_ALLOWED_HOSTS="127.0.0.1",
        LOG_LEVEL="INFO",
    )
    token = _manage(env, "shell", "-c", MAKE_SHARE_LINK).strip().splitlines()[-1]
    port = _free_port()
    access_log, output = tmp / "access.log", tmp / "gunicorn.out"
    with output.open("wb") as out:
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "gunicorn",
                "-c",
                "python:clusterdesigner.gunicorn_conf",
                "--bind",
                f"127.0.0.1:{port}",
                "--workers",
                "1",
                "--access-logfile",
                str(access_log),
                "clusterdesigner.wsgi:application",
            ],
            cwd=ROOT,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    served = Served(f"http://127.0.0.1:{port}", token, access_log, output, proc)
    try:
        deadline = time.monotonic() + 60
        while True:
            assert proc.poll() is None, output.read_text()[-3000:]
            try:
                urllib.request.urlopen(f"{served.base}/api/v1/accelerators/", timeout=5)
                break
            except OSError:
                assert time.monotonic() < deadline, output.read_text()[-3000:]
                time.sleep(0.3)
        yield served
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
            proc.wait(timeout=30)


def _get(url: str, **headers: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(urllib.request.Request(url, headers=headers), timeout=30) as response:
            return response.status, response.read().decode(errors="replace")
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode(errors="replace")


def test_gunicorn_access_log_redacts_share_tokens(served: Served) -> None:
    share_url = f"{served.base}/share/{served.token}/"
    status, page = _get(share_url)
    assert status == 200 and "Logged design" in page
    stylesheet = re.search(r'href="(/static/[^"]+\.css)"', page)
    assert stylesheet, "the share page links a stylesheet"
    # What a browser then asks for: the page's assets, with the share URL as the Referer.
    assert _get(served.base + stylesheet.group(1), Referer=share_url)[0] == 200
    assert _get(f"{served.base}/api/v1/shared/{served.token}/")[0] == 200
    assert _get(f"{share_url}export/csv/")[0] == 200
    assert _get(f"{served.base}/%73hare/{served.token}/")[0] == 200  # the server decodes the path
    assert _get(f"{served.base}/share/not-a-real-token-{served.token[:8]}x/")[0] == 404
    time.sleep(0.5)  # the worker writes each line as its response finishes

    log = served.access_log.read_text()
    lines = log.splitlines()
    assert len(lines) >= 7, log
    assert served.token not in log and served.token[:16] not in log
    assert '"GET /share/[redacted]/ HTTP/1.1" 200' in log
    assert '"GET /api/v1/shared/[redacted]/ HTTP/1.1" 200' in log
    assert '"GET /share/[redacted]/export/csv/ HTTP/1.1" 200' in log
    assert f'"{served.base}/share/[redacted]/"' in log  # the stylesheet's Referer
    assert sum("[redacted]" in line for line in lines) >= 6
    # Django's own "Not Found: /share/..." line in the server's output is redacted as well.
    output = served.output.read_text()
    assert "Not Found: /share/[redacted]/" in output and served.token not in output


def test_the_worker_draws_a_page_before_it_accepts(served: Served) -> None:
    # post_worker_init (apps.dashboard.warmup): the share link's stored evaluation drawn before the first
    # request, and the share page served as it is without the warm-up (tests/dashboard/test_warmup.py).
    output = served.output.read_text()
    assert "pages warmed up (a stored evaluation drawn)" in output, output[-3000:]
    assert "warm-up failed" not in output
    status, page = _get(f"{served.base}/share/{served.token}/")
    assert status == 200 and "Logged design" in page


@pytest.mark.parametrize("path", ["docker-compose.yml", "Dockerfile", "bench/load.sh"])
def test_every_shipped_gunicorn_command_uses_the_config(path: str) -> None:
    text = (ROOT / path).read_text()
    commands = [line for line in text.splitlines() if "wsgi:application" in line and "#" not in line[:4]]
    assert commands, f"{path} starts no gunicorn"
    for command in commands:
        assert re.search(r'-c"?,? "?python:clusterdesigner\.gunicorn_conf', command), command
