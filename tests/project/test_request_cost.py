"""What an API request costs, for the load target (issue 20): the queries compiled once per process
(clusterdesigner/compiled_query.py), the lean token authentication (clusterdesigner/api_tokens.py) and the
number of SQL statements a stored evaluation takes. Each shortcut must answer exactly what the ORM did."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from typing import Any

import pytest
from django.db import connection
from django.db.models import Count, F, Max
from django.test.utils import CaptureQueriesContext
from django.utils import timezone
from rest_framework.test import APIClient

from apps.catalog.selectors import catalog_version
from apps.designs import selectors
from apps.designs.models import Design, DesignVersion
from apps.designs.pricing import (
    CalibrationKey,
    PriceOwner,
    calibration_key_of_design,
    evaluation_stamps,
    evaluation_stamps_and_catalog,
)
from apps.designs.services import design_create, design_update
from apps.measurements.models import CalibrationSetting
from apps.measurements.services import calibration_set, run_create, run_validate
from apps.pricebook.models import PriceEntry
from apps.teams import access
from apps.teams.services import member_add, owned_move, team_create
from clusterdesigner import memo, prepared
from clusterdesigner.api_tokens import api_token_create, api_token_revoke
from clusterdesigner.compiled_query import CompiledQuery, CompileError
from tests.designs.test_api import SPEC
from tests.measurements.conftest import RUN

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def empty_memo() -> Iterator[None]:
    memo.clear_all()
    yield
    memo.clear_all()


def _evaluate(client: APIClient, design: Design, key: str, query: str = "") -> Any:
    return client.post(f"/api/v1/designs/{design.pk}/evaluate/{query}", HTTP_AUTHORIZATION=f"Token {key}")


# --- compiled queries ---------------------------------------------------------------------------------------


def test_a_compiled_query_compiles_to_the_same_sql_each_time() -> None:
    def build(design_id: int) -> Any:
        return DesignVersion.objects.filter(design_id=design_id).order_by()[:1]

    first, second = CompiledQuery(build, design_id=int), CompiledQuery(build, design_id=int)
    assert first.compiled().sql == second.compiled().sql
    assert first.compiled() is first.compiled()  # compiled once, then kept
    # The design id is the one parameter that changes; LIMIT 1 is in the text.
    assert [name for _, name in first.compiled().slots] == ["design_id"]
    assert first.compiled().sql.endswith("LIMIT 1")


def test_a_query_whose_sql_depends_on_a_value_is_refused() -> None:
    # An odd and an even marker build different SQL: that shape cannot be compiled once.
    def shape_by_value(number: int) -> Any:
        versions = DesignVersion.objects.all()
        return versions.filter(number=number) if number % 2 else versions.filter(number__gte=number)

    with pytest.raises(CompileError, match="depends on the parameters' values"):
        CompiledQuery(shape_by_value, number=int).compiled()
    with pytest.raises(CompileError, match="do not reach the SQL"):
        CompiledQuery(lambda number: DesignVersion.objects.all(), number=int).compiled()


def test_visible_version_reads_what_the_orm_reads(
    alice: Any, bob: Any, catalog: Any, django_user_model: Any
) -> None:
    private = design_create(owner=alice, name="private", spec=SPEC)
    shared = design_create(owner=alice, name="shared", spec=SPEC, visibility=Design.Visibility.ORGANISATION)
    design_update(design=shared, user=alice, base_version=1, name="shared, edited")
    # A team's design: carol (a viewer of the team) reads it, bob does not; alice made it and is its owner.
    carol = django_user_model.objects.create_user("carol", password="pw-carol-123")
    team = team_create(user=alice, name="Training")
    member_add(team=team, identifier="carol", role="viewer")
    teamed = design_create(owner=alice, name="team's", spec=SPEC)
    owned_move(user=alice, obj=teamed, team_id=team.pk)

    def orm(user: Any, design: Design, number: int | None) -> DesignVersion | None:
        """The ORM query design_version_get_visible ran before it was compiled once."""
        versions = DesignVersion.objects.filter(design_id=design.pk)
        versions = access.visible_to(user, versions, via="design", model=Design)
        return versions.filter(number=number or F("design__version")).first()

    for user in (alice, bob, carol):
        for design in (private, shared, teamed):
            design.refresh_from_db()
            # 2**31 and 2**34 overflow the number column: the ORM reads them as no version.
            for number in (None, 1, 2, 3, 2**31, 2**34):
                got = selectors.design_version_get_visible(user=user, design_id=design.pk, number=number)
                want = orm(user, design, number)
                assert (got and (got.pk, got.number, got.name, got.spec)) == (
                    want and (want.pk, want.number, want.name, want.spec)
                ), (user.username, design.name, number)
    # Spelled out: bob sees alice's shared design (current = version 2), not her private one.
    current = selectors.design_version_get_visible(user=bob, design_id=shared.pk)
    assert current is not None and current.number == 2 and current.name == "shared, edited"
    assert selectors.design_version_get_visible(user=bob, design_id=private.pk) is None
    assert selectors.design_version_get_visible(user=alice, design_id=private.pk, number=2) is None
    assert selectors.design_version_get_visible(user=carol, design_id=teamed.pk).name == "team's"
    assert selectors.design_version_get_visible(user=bob, design_id=teamed.pk) is None
    assert selectors.design_version_get_visible(user=carol, design_id=private.pk) is None


def test_a_version_past_the_columns_range_is_a_404_not_a_500(alice: Any, catalog: Any) -> None:
    # Found by the fuzz: ?version=17179869184 (2**34) reached PostgreSQL's integer column through the
    # compiled query and overflowed it (DataError, a 500). No version has that number: 404, as export and
    # diff answer through the ORM; a design id past bigint is no design either.
    design = design_create(owner=alice, name="mine", spec=SPEC)
    key = api_token_create(user=alice, scope="designs").key
    client = APIClient()
    for number in (2**31, 2**34, 2**63 - 1):
        assert _evaluate(client, design, key, f"?version={number}").status_code == 404, number
    assert _evaluate(client, design, key, "?version=1").status_code == 200
    headers = {"HTTP_AUTHORIZATION": f"Token {key}"}
    assert client.get(f"/api/v1/designs/{design.pk}/export/?version={2**34}", **headers).status_code == 404
    assert client.get(f"/api/v1/designs/{design.pk}/diff/?to={2**34}", **headers).status_code == 404
    assert client.post(f"/api/v1/designs/{2**63}/evaluate/", **headers).status_code == 404


# --- token authentication -----------------------------------------------------------------------------------


def test_token_authentication_answers_as_drfs(alice: Any, catalog: Any) -> None:
    design = design_create(owner=alice, name="mine", spec=SPEC)
    key = api_token_create(user=alice, scope="designs").key
    client = APIClient()
    assert _evaluate(client, design, key).status_code == 200
    wrong = _evaluate(client, design, "0" * 40)
    assert wrong.status_code == 401 and wrong.json()["error"]["message"] == "Invalid token."
    assert wrong["WWW-Authenticate"] == "Token"
    alice.is_active = False
    alice.save()
    inactive = _evaluate(client, design, key)
    assert inactive.status_code == 401 and inactive.json()["error"]["message"] == "User inactive or deleted."


@pytest.mark.parametrize("key", ["a" * 41, "abc\x00def", "\x00" * 40])
def test_a_token_no_key_can_be_is_refused_without_a_query(alice: Any, catalog: Any, key: str) -> None:
    design = design_create(owner=alice, name="mine", spec=SPEC)
    with CaptureQueriesContext(connection) as queries:
        answer = _evaluate(APIClient(), design, key)
    assert answer.status_code == 401 and answer.json()["error"]["message"] == "Invalid token."
    assert len(queries) == 0


# --- queries a request takes --------------------------------------------------------------------------------


def test_a_stored_evaluation_takes_three_queries(
    alice: Any, catalog: Any, django_assert_num_queries: Any
) -> None:
    design = design_create(owner=alice, name="mine", spec=SPEC)
    key = api_token_create(user=alice, scope="designs").key
    client = APIClient()
    first = _evaluate(client, design, key)  # the save evaluated and stored it: read into this worker's memo
    assert first.status_code == 200
    memo.EVALUATIONS.clear()  # a worker that has not served it yet
    # That worker's request reads the stored text and keeps it in its memo: 1. the token with its user
    # (TokenAuthentication), 2. the version, if alice may read it (design_version_get_visible),
    # 3. catalog_version(), read once for the memo's key and the stored result's input hash (one catalog
    # snapshot per evaluation, issue #38 item 3), with the stamp of the price book the design resolves
    # through and whose calibration applies with its switch (apps.designs.pricing.evaluation_stamps: the
    # memo's key; the calibration is the team's for a team design, else its maker's): one statement on
    # PostgreSQL (evaluation_stamps_and_catalog), two elsewhere, 4. the book's entries that can price the
    # design (issue #35: the resolved prices are in the input hash), 5. the stored evaluation's text by that
    # hash.
    stamps_and_catalog = 1 if connection.vendor == "postgresql" else 2
    with django_assert_num_queries(4 + stamps_and_catalog):
        stored = _evaluate(client, design, key)
    assert stored.json() == first.json()
    # From then on the memo holds the text: 1-3 above, and nothing else (the memo was keyed by the resolved
    # prices, so every request resolved the book, ~4 ms of CPU; it is keyed by the book's stamp now and
    # resolves only on a miss). The stamp and the switch were two statements, the switch an ORM query built
    # anew each request (about a fifth of the request's CPU, bench/load_profile.py): one plain one now, and
    # on PostgreSQL the catalog's version is a column of it (issue #38 item 9: a round trip fewer, three
    # statements, not four).
    with django_assert_num_queries(2 + stamps_and_catalog):
        again = _evaluate(client, design, key)
    assert again.status_code == 200 and again.json() == first.json()
    # A version number in the query string is the other compiled shape: the same count.
    with django_assert_num_queries(2 + stamps_and_catalog):
        numbered = _evaluate(client, design, key, "?version=1")
    assert numbered.json() == first.json()


def test_djangos_sql_is_numbered_for_prepare() -> None:
    # Each %s in order becomes $1, $2, ...; Django's %% (a percent sign) becomes one %.
    sql = "SELECT a FROM t WHERE b = %s AND c LIKE 'x%%' AND d IN (%s, %s)"
    assert prepared._numbered(sql) == "SELECT a FROM t WHERE b = $1 AND c LIKE 'x%' AND d IN ($2, $3)"


def test_a_stored_evaluation_runs_prepared_statements(
    alice: Any, bob: Any, catalog: Any, postgres_required: None
) -> None:
    """On PostgreSQL the three statements of a memo hit are executions of statements the connection prepared
    (clusterdesigner.prepared): planned once per connection, not once per request. What they answer still
    follows the rows: another user's token reads nothing of alice's private design, and a revoked token or
    a version whose design went to organisation visibility are seen at once."""
    design = design_create(owner=alice, name="mine", spec=SPEC)
    key = api_token_create(user=alice, scope="designs").key
    client = APIClient()
    first = _evaluate(client, design, key)
    for _ in range(6):  # past PostgreSQL's five custom plans: the generic plan from then on
        assert _evaluate(client, design, key).json() == first.json()
    with CaptureQueriesContext(connection) as queries:
        assert _evaluate(client, design, key).json() == first.json()
    assert [q["sql"].split("(")[0].split()[:2] for q in queries] == [
        ["EXECUTE", "clusterdesigner_token_with_user"],
        ["EXECUTE", "designs_version_current"],
        ["EXECUTE", "designs_stamps_catalog_personal"],
    ]
    bobs = api_token_create(user=bob, scope="designs").key
    assert _evaluate(client, design, bobs).status_code == 404  # alice's private design
    design.visibility = Design.Visibility.ORGANISATION
    design.save()
    assert _evaluate(client, design, bobs).json() == first.json()
    api_token_revoke(user=alice)
    revoked = _evaluate(client, design, key)
    assert revoked.status_code == 401 and revoked.json()["error"]["message"] == "Invalid token."


def test_a_team_design_with_its_calibration_on_takes_the_same_queries(
    alice: Any, catalog: Any, django_assert_num_queries: Any
) -> None:
    """A team's design whose calibration is switched on, with three runs that give it a factor: the queries
    of a personal design (five and three on PostgreSQL, where the catalog's version is a column of the stamps'
    statement; six and four elsewhere). The factors are read with the switch in evaluation_stamps' one
    statement (the measurements app keeps them fitted on the switch's row when the runs or the switch
    change); before, a stored evaluation's request also read the team's runs and the catalog's version again
    to fit them on each memo miss (eight: measured on the code before, with this test)."""
    team = team_create(user=alice, name="Infra")
    for nodes, ratio in enumerate([1.1, 1.21, 1.331], start=1):
        data = {**RUN, "nodes": nodes, "dp": 4 * nodes, "global_batch": 128 * nodes}
        data["step_time_s"] = run_validate(data=data)["step_time_s"]["total"] * ratio
        run_create(owner=alice, team_id=team.pk, data={**data, "measured_on": dt.date(2026, 11, 2)})
    calibration_set(owner_id=None, team_id=team.pk, enabled=True)
    design = design_create(owner=alice, name="the team's", spec=SPEC)
    owned_move(user=alice, obj=design, team_id=team.pk)
    key = api_token_create(user=alice, scope="designs").key
    client = APIClient()
    first = _evaluate(client, design, key)
    assert first.status_code == 200 and first.json()["calibration"]["runs"] == 3  # applied: 3 runs, 1.21
    memo.EVALUATIONS.clear()
    stamps_and_catalog = 1 if connection.vendor == "postgresql" else 2
    with django_assert_num_queries(4 + stamps_and_catalog):
        stored = _evaluate(client, design, key)
    assert stored.json() == first.json()
    with django_assert_num_queries(2 + stamps_and_catalog):
        again = _evaluate(client, design, key)
    assert again.json() == first.json()


def test_the_evaluation_stamps_read_what_the_orm_reads(alice: Any, bob: Any, catalog: Any) -> None:
    """evaluation_stamps' one statement answers what the book's aggregate and calibration_key_of_design
    answered, for a personal and a team owner, with no switch, off and on, and with and without entries."""
    team = team_create(user=alice, name="Training")
    client = APIClient()
    client.force_authenticate(alice)

    def orm(owner: PriceOwner) -> tuple[tuple[Any, ...], CalibrationKey]:
        entries = PriceEntry.objects.filter(team_id=owner.team_id)
        if owner.team_id is None:
            entries = entries.filter(owner_id=owner.owner_id)
        book = entries.aggregate(n=Count("pk"), latest=Max("updated_at"))
        key = calibration_key_of_design(owner_id=owner.owner_id, team_id=owner.team_id)
        return (owner.owner_id, owner.team_id, book["n"], book["latest"]), key

    owners = [PriceOwner(owner_id=alice.pk), PriceOwner(owner_id=alice.pk, team_id=team.pk)]
    owners.append(PriceOwner(owner_id=bob.pk))  # bob: no entries and no switch ever written
    seen = []
    for step in ("none", "off", "on", "entries"):
        if step in ("off", "on"):
            for holder in ({"owner": alice}, {"team": team}):
                CalibrationSetting.objects.update_or_create(
                    **holder, defaults={"enabled": step == "on", "changed_at": timezone.now()}
                )
        if step == "entries":
            for where in ({}, {"team": team.pk}):
                body = {"valid_from": "2026-01-01", "source": "test quote", "kind": "server_quote",
                        "accelerator": "h100-sxm", "gpus_per_node": 8, "value": 200_000, **where}  # fmt: skip
                assert client.post("/api/v1/price-entries/", body, format="json").status_code == 201
        for owner in owners:
            got = evaluation_stamps(owner)
            assert got == orm(owner), (step, owner)
            # With the catalog's version in the same statement (on PostgreSQL): the same stamps.
            assert evaluation_stamps_and_catalog(owner) == (catalog_version(), *orm(owner)), (step, owner)
            seen.append(got)
    # The values differ where they must (so the comparison above compared something): the team's label, the
    # switch, and the book's count once entries exist.
    stamps = {(owner, step): seen[i * 3 + j] for i, step in enumerate(("none", "off", "on", "entries"))
              for j, owner in enumerate(("alice", "team", "bob"))}  # fmt: skip
    assert stamps["team", "none"][1].holder.label == "team Training"
    assert stamps["alice", "none"][1].holder.label == "alice"
    assert stamps["alice", "none"][1].stamp == "" and not stamps["alice", "none"][1].enabled
    assert not stamps["alice", "off"][1].enabled and stamps["alice", "off"][1].stamp != ""
    assert stamps["team", "on"][1].enabled and stamps["alice", "on"][1].enabled
    assert stamps["alice", "on"][0][2] == 0 and stamps["alice", "entries"][0][2] == 1
    assert stamps["team", "entries"][0][2] == 1 and stamps["bob", "entries"][0][2:] == (0, None)


def test_catalog_version_changes_with_a_catalog_save(catalog: Any) -> None:
    from apps.catalog.models import Accelerator

    before = catalog_version()
    assert before == catalog_version()  # the same text while nothing changes
    accelerator = Accelerator.objects.get(slug="h100-sxm")
    accelerator.save()
    assert catalog_version() != before


def test_the_catalog_version_column_reads_catalog_versions_text(
    alice: Any, catalog: Any, postgres_required: None
) -> None:
    """The stamps' statement reads the catalog's version as a column (catalog_version_column_sql): the text
    catalog_version() reads, character for character (the evaluation memo's key and the snapshot's label are
    that text), with rows, after a save and with a table emptied (its latest change None)."""
    from apps.catalog.models import Accelerator, CloudPrice

    owner = PriceOwner(owner_id=alice.pk)
    seen = []
    for step in ("seeded", "saved", "emptied"):
        if step == "saved":
            Accelerator.objects.get(slug="h100-sxm").save()
        if step == "emptied":
            CloudPrice.objects.all().delete()  # the last table: its text is 0@None
        version = evaluation_stamps_and_catalog(owner)[0]
        assert version == catalog_version(), step
        seen.append(version)
    assert len(set(seen)) == 3  # each step moved it
    assert seen[2].endswith("|0@None")


def _deallocate_catalog_version() -> None:
    """Forget the prepared statement on this connection, so that the next call prepares it."""
    from apps.catalog import selectors as catalog_selectors

    with connection.cursor() as cursor:
        cursor.execute("SELECT 1 FROM pg_prepared_statements WHERE name = %s", [catalog_selectors._PREPARED])
        if cursor.fetchone():
            cursor.execute(f"DEALLOCATE {catalog_selectors._PREPARED}")
    prepared.forget(connection.connection, catalog_selectors._PREPARED)


def test_catalog_version_is_prepared_once_per_connection(catalog: Any, postgres_required: None) -> None:
    from apps.catalog import selectors as catalog_selectors

    _deallocate_catalog_version()
    with connection.cursor() as cursor:
        cursor.execute(catalog_selectors._catalog_version_sql("postgresql"))
        plain = "|".join(f"{count}@{latest}" for count, latest in cursor.fetchall())
    with CaptureQueriesContext(connection) as queries:
        first, second = catalog_version(), catalog_version()
    assert first == second == plain  # the same text as the plain SQL's
    assert [q["sql"].split(" AS ")[0] for q in queries] == [
        "PREPARE clusterdesigner_catalog_version",  # ...; EXECUTE: one round trip
        "EXECUTE clusterdesigner_catalog_version",
    ]


def test_catalog_version_falls_back_to_plain_sql_where_the_statement_is_gone(
    catalog: Any, postgres_required: None
) -> None:
    from django.db import ProgrammingError, transaction

    from apps.catalog import selectors as catalog_selectors

    before = catalog_version()
    _deallocate_catalog_version()
    # As if a pooler had switched sessions:
    prepared.mark(connection.connection, catalog_selectors._PREPARED, True)
    with pytest.raises(ProgrammingError), transaction.atomic():
        catalog_version()  # this call fails (the error reaches the caller, as any database error) ...
    with CaptureQueriesContext(connection) as queries:
        assert catalog_version() == before  # ... and the connection runs the plain SQL from then on
    assert queries[0]["sql"].startswith("SELECT n, latest FROM")
    prepared.forget(connection.connection, catalog_selectors._PREPARED)
