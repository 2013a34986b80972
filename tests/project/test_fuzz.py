"""Fuzz the REST API with schemathesis against the live OpenAPI schema, with a random seed and every check
on: no 5xx, every status, content type and body as documented, schema-invalid input refused, auth required
where the schema says so.

Bounded: at most MAX_EXAMPLES generated requests per operation in the fuzzing phase (random), no per-example
deadline. Schemathesis' coverage phase is not random and not bounded by MAX_EXAMPLES: it sends the same
~9,000 boundary cases every run (3/4 of the time its tests took; the file took 149 s of CPU on SQLite, 93 s
since). Each run sends a random quarter of them (COVERAGE_SHARE, picked by a salt drawn per run and printed
with a failure; FUZZ_COVERAGE_SALT replays a run's pick, FUZZ_COVERAGE_SHARE=1 sends them all): ~2,300 a run,
and a case is left out of n runs in a row with probability 0.75^n (6 % after 10 runs).
"""

from __future__ import annotations

import hashlib
import os
import random
from collections.abc import Iterator
from typing import Any

import pytest
import schemathesis
from django.test import override_settings
from hypothesis import HealthCheck
from hypothesis import settings as hypothesis_settings
from schemathesis.config import SchemathesisConfig

from clusterdesigner.wsgi import application

MAX_EXAMPLES = 20
COVERAGE_SHARE = float(os.environ.get("FUZZ_COVERAGE_SHARE", "0.25"))
COVERAGE_SALT = os.environ.get("FUZZ_COVERAGE_SALT") or str(random.SystemRandom().randrange(2**32))

# positive_data_acceptance expects 2xx for any schema-valid request. For these operations validity also
# depends on things an OpenAPI schema cannot state, so a 400 naming the field is the right answer to some
# schema-valid bodies: slugs that must exist in the catalog or must be unique, the models' cross-field rules
# (clean()), the engines' checks of a design spec (TP dividing the heads, memory fit), the params each
# analysis kind needs, and the CSV importer's per-row checks; a measured run the training engine cannot
# express (or whose step time and tokens/s disagree), and a log excerpt with no step line. Every other check
# stays on for them; nothing is skipped.
SEMANTIC_400 = (
    r"^/api/v1/(accelerators|server-types|fabrics|switches|storage-tiers|cloud-offerings|cloud-prices"
    r"|designs|analyses|capacity-plans|measured-runs)/"
)
# A body over DATA_UPLOAD_MAX_MEMORY_SIZE (2 MiB) is rejected with a 413 in the error envelope before any
# field is read: for a schema-violating body (a CSV over its maxLength) that is a rejection, as a 400 is.
CONFIG = SchemathesisConfig.from_str(f"""
[checks.negative_data_rejection]
expected-statuses = [
    "400", "401", "403", "404", "405", "406", "409", "413", "415", "422", "428", "429", "5xx"
]

[[operations]]
include-path-regex = '{SEMANTIC_400}'
include-method-regex = '^(POST|PUT|PATCH)$'
checks.positive_data_acceptance.expected-statuses = [
    "2xx", "400", "401", "403", "404", "409", "413", "428", "429"
]
""")

# The schema is read from the running app, as a client would, once at collection (Host: localhost is what
# schemathesis' WSGI client sends).
with override_settings(ALLOWED_HOSTS=["localhost"]):
    schema = schemathesis.openapi.from_wsgi("/api/v1/schema/", application, config=CONFIG)
# One test per operation, named by its label as schemathesis names them ("GET /api/v1/accelerators/"). Each
# operation's Hypothesis test (its examples, its ~70 coverage-phase cases, its fuzzing) is built when the test
# runs, by the lazy schema (schemathesis.pytest.from_fixture), not at collection: schemathesis' eager
# ``schema.parametrize()`` built all 127 in every pytest process that collects the suite (~9 s of CPU in each
# of make test's workers, before any test ran), though only the process that runs this file uses them.
OPERATIONS = [result.ok().label for result in schema.get_all_operations()]
_running: dict[str, str] = {}


lazy_schema = schemathesis.pytest.from_fixture("fuzz_schema").include(
    lambda ctx: ctx.operation.label == _running["operation"]
)


@pytest.fixture
def wsgi_keeps_test_connection() -> Iterator[None]:
    """Schemathesis calls the WSGI app directly, so Django's request signals run close_old_connections, which
    closes a connection inside the test's transaction (autocommit off) — on PostgreSQL that leaves the test
    with a closed connection. Django's own test client disconnects it the same way."""
    from django.core import signals
    from django.db import close_old_connections

    signals.request_started.disconnect(close_old_connections)
    signals.request_finished.disconnect(close_old_connections)
    try:
        yield
    finally:
        signals.request_started.connect(close_old_connections)
        signals.request_finished.connect(close_old_connections)


@pytest.fixture(scope="module")
def fuzz_data(django_db_setup: None, django_db_blocker: Any) -> Iterator[dict[str, Any]]:
    """The seed catalog, a staff user with a token (so catalog writes get past the permission check), a design
    with a fixed layout and one whose layout is searched: written once for this module and committed, so the
    ~80 operations share them (the seed load alone took ~2 s per operation). Each operation still runs in a
    transaction that is rolled back (``fuzz_env``), so no example sees another's writes. Removed at the end of
    the module: every other test file starts with an empty catalog."""
    from django.contrib.auth import get_user_model

    from apps.catalog.models import RentalPricePoint, ResidualValuePoint
    from apps.catalog.selectors import CATALOG_MODELS
    from apps.catalog.services import catalog_load_seed
    from apps.designs import services as design_services
    from clusterdesigner.api_tokens import api_token_create

    catalog_models = (RentalPricePoint, ResidualValuePoint, *reversed(CATALOG_MODELS))
    with django_db_blocker.unblock():
        assert not any(model.objects.exists() for model in catalog_models), "the catalog is not empty"
        catalog_load_seed()
        staff = get_user_model().objects.create_user("fuzz-staff", password="pw-fuzz-123", is_staff=True)
        token = api_token_create(user=staff, scope="catalog")
        fixed = design_services.design_create(
            owner=staff, name="fuzz fixed layout", spec={"parallelism": {"tp": 8, "pp": 4}}
        )
        design_services.design_create(owner=staff, name="fuzz searched layout", spec={})
    try:
        yield {"headers": {"Authorization": f"Token {token.key}"}, "design": fixed}
    finally:
        with django_db_blocker.unblock():
            staff.delete()  # its token, designs and their versions
            for model in catalog_models:
                model.objects.all().delete()


@pytest.fixture
def fuzz_schema(operation: str, fuzz_env: dict[str, Any], request: pytest.FixtureRequest) -> Any:
    """The schema, for the lazy schema's test of ``operation`` (its filter, above, picks that operation). It
    asks for ``fuzz_env`` so that pytest sets the test's database up before the test, as for any test that
    names it (the lazy schema's test names only this fixture; it reads ``fuzz_env`` once running)."""
    _running["operation"] = operation
    # schemathesis' lazy test reads and writes the item's ``_nodeid`` to label its report, an attribute
    # pytest 9.2 no longer has (the node id is ``nodeid``): give it one, which pytest does not read.
    request.node._nodeid = request.node.nodeid  # type: ignore[attr-defined]
    return schema


@pytest.fixture
def fuzz_env(
    db: Any, fuzz_data: dict[str, Any], settings: Any, wsgi_keeps_test_connection: None
) -> dict[str, Any]:
    """The module's committed data (``fuzz_data``), inside this test's rolled-back transaction."""
    settings.ALLOWED_HOSTS = ["localhost", "testserver"]
    return fuzz_data


@pytest.mark.parametrize("operation", OPERATIONS)
@lazy_schema.parametrize()
# A random seed each run (CI included), so every run explores new examples; a failure prints the seed to
# replay it with pytest's --hypothesis-seed=N. FUZZ_DERANDOMIZE=1 explores a fixed set of examples instead.
@hypothesis_settings(
    max_examples=MAX_EXAMPLES,
    deadline=None,
    suppress_health_check=list(HealthCheck),
    derandomize=bool(os.environ.get("FUZZ_DERANDOMIZE")),
    print_blob=True,
)
def test_api_conforms_to_its_schema(case: Any, fuzz_env: dict[str, Any]) -> None:
    if not in_this_runs_share(case):
        return
    print(f"FUZZ_COVERAGE_SALT={COVERAGE_SALT}")  # shown with a failure, to replay this run's share
    # No checks named: every built-in check the config enables, which is all of them
    # (test_every_check_is_enabled).
    case.call_and_validate(headers=fuzz_env["headers"])


def in_this_runs_share(case: Any) -> bool:
    """Every case of the examples and fuzzing phases; of the coverage phase's, the run's share (by the salt):
    a case is chosen by a hash of the salt and what the case sends."""
    phase = case.meta.phase if case.meta is not None else None
    if phase is None or phase.name != "coverage" or COVERAGE_SHARE >= 1:
        return True
    sent = (case.operation.label, case.path_parameters, case.query, case.headers, case.cookies, case.body)
    digest = hashlib.sha256(f"{COVERAGE_SALT}|{phase.data.description}|{sent!r}".encode()).digest()
    chosen = int.from_bytes(digest[:8], "big") < COVERAGE_SHARE * 2**64
    return chosen


def test_every_check_is_enabled() -> None:
    """The fuzz runs schemathesis' every built-in check: the config turns none off."""
    from schemathesis.checks import CHECKS, load_all_checks

    load_all_checks()
    operation = next(result.ok() for result in schema.get_all_operations())
    config = schema.config.checks_config_for(operation=operation, phase=None)
    names = CHECKS.get_all_names()
    assert len(names) >= 10
    for name in names:
        check_config = config.get_by_name(name=name)
        assert check_config.enabled, name
