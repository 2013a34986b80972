"""SkyPilot price tables (DIR/<cloud>/vms.csv): one import service behind the command, the admin and the API.

The files are written here in SkyPilot's column layouts (v7: AWS and GCP one order, Lambda another), so the
tests check that columns are read by name.
"""

from __future__ import annotations

import datetime as dt
import io
import os
from pathlib import Path
from typing import Any

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import CommandError, call_command

from apps.catalog.models import CloudOffering, CloudPrice
from apps.catalog.services import PriceImportError, cloud_price_import_skypilot

AS_OF = "2026-11-15"
AWS_COLUMNS = "InstanceType,AcceleratorName,AcceleratorCount,vCPUs,MemoryGiB,GpuInfo,Price,SpotPrice,Region,"
AWS = (
    AWS_COLUMNS
    + """AvailabilityZone
p5.48xlarge,H100,8.0,192.0,2048.0,"{'Gpus': [{'Name': 'H100', 'Count': 8}]}",98.32,40.1,us-east-1,us-east-1a
p5.48xlarge,H100,8.0,192.0,2048.0,"{'Gpus': [{'Name': 'H100', 'Count': 8}]}",98.32,35.5,us-east-1,us-east-1b
p5.48xlarge,H100,8.0,192.0,2048.0,"{'Gpus': [{'Name': 'H100', 'Count': 8}]}",96.0,,us-west-2,us-west-2a
p6-b200.48xlarge,B200,8.0,192.0,2048.0,,113.93,60.0,us-east-1,us-east-1a
g6e.xlarge,L40S,1.0,4.0,32.0,,1.861,0.8,us-east-1,us-east-1a
m5.large,,,2.0,8.0,,0.096,0.03,us-east-1,us-east-1a
g4dn.xlarge,T4,1.0,4.0,16.0,,0.526,0.2,us-east-1,us-east-1a
"""
)
# GCP: the same names in another order, a CPU-only machine and a GPU listed on its own (no instance type).
GCP_COLUMNS = "Region,InstanceType,AcceleratorName,AcceleratorCount,vCPUs,MemoryGiB,Price,SpotPrice,GpuInfo,"
GCP = (
    GCP_COLUMNS
    + """AvailabilityZone
us-central1,a3-highgpu-8g,H100,8,208,1872,88.49,30.0,H100,us-central1-a
us-east4,a3-highgpu-8g,H100,8,208,1872,90.10,29.5,H100,us-east4-a
us-central1,n2-standard-8,,,8,32,0.388,0.09,,us-central1-a
us-central1,,T4,1,,,0.35,0.11,T4,us-central1-a
"""
)
LAMBDA = """InstanceType,AcceleratorName,AcceleratorCount,vCPUs,MemoryGiB,Price,Region,GpuInfo,SpotPrice
gpu_8x_h100_sxm5,H100,8.0,208.0,1800.0,23.92,us-west-1,"{'Gpus': [{'Name': 'H100'}]}",
gpu_8x_h100_sxm5,H100,8.0,208.0,1800.0,23.92,us-east-1,"{'Gpus': [{'Name': 'H100'}]}",
gpu_1x_h100_pcie,H100,1.0,26.0,200.0,2.49,us-west-1,"{'Gpus': [{'Name': 'H100'}]}",
gpu_1x_a10,A10,1.0,30.0,200.0,0.75,us-east-1,,
"""


def write(root: Path, **files: str) -> Path:
    for cloud, text in files.items():
        (root / cloud).mkdir(parents=True, exist_ok=True)
        (root / cloud / "vms.csv").write_text(text)
    return root


def price(offering: str, model: str, **lookup: Any) -> CloudPrice:
    return CloudPrice.objects.get(offering__slug=offering, pricing_model=model, as_of=AS_OF, **lookup)


def run(*args: str) -> str:
    out = io.StringIO()
    call_command("import_prices", *args, stdout=out, stderr=out)
    return out.getvalue()


def test_a_directory_of_three_clouds_lands_each_price_on_its_offering(catalog: Any, tmp_path: Path) -> None:
    root = write(tmp_path, aws=AWS, gcp=GCP, **{"lambda": LAMBDA})
    output = run("--skypilot", str(root), "--as-of", AS_OF)

    # Cheapest region per instance type and pricing model; an AZ's lower spot price counts for its region.
    on_demand = price("aws-p5-48xlarge", "on_demand")
    assert (on_demand.usd_per_hour, on_demand.region) == (96.0, "us-west-2")
    assert (price("aws-p5-48xlarge", "spot").usd_per_hour, price("aws-p5-48xlarge", "spot").region) == (
        35.5,
        "us-east-1",
    )
    assert price("aws-p6-b200-48xlarge", "on_demand").usd_per_hour == 113.93
    assert price("gcp-a3-highgpu-8g", "on_demand").usd_per_hour == 88.49
    assert price("gcp-a3-highgpu-8g", "spot").region == "us-east4"  # 29.5 < 30.0
    # Lambda's column order differs; equal prices go to the region named first.
    assert price("lambda-gpu-8x-h100-sxm5", "on_demand").region == "us-east-1"
    assert not CloudPrice.objects.filter(offering__provider="lambda", pricing_model="spot").exists()

    # Instance types the catalog lacks become offerings flagged for review; Lambda's PCIe H100 is h100-pcie.
    new = CloudOffering.objects.get(slug="lambda-gpu-1x-h100-pcie")
    assert (new.accelerator.slug, new.gpu_count, new.needs_review) == ("h100-pcie", 1, True)
    l40s = CloudOffering.objects.get(slug="aws-g6e-xlarge")
    assert (l40s.accelerator.slug, l40s.needs_review, l40s.region) == ("l40s", True, "us-east-1")
    assert not CloudOffering.objects.get(slug="aws-p5-48xlarge").needs_review

    assert "aws: imported" in output and "gcp: imported" in output and "lambda: imported" in output
    assert "p5.48xlarge → aws-p5-48xlarge" in output and "(new offering, needs review)" in output
    assert "accelerator T4 has no catalog accelerator mapped to it" in output
    assert "accelerator A10 has no catalog accelerator mapped to it" in output
    assert "no accelerator (a CPU-only instance type)" in output
    assert "no instance type (T4 priced alone" in output


def test_importing_again_replaces_the_same_dates_prices(catalog: Any, tmp_path: Path) -> None:
    root = write(tmp_path, aws=AWS)
    run("--skypilot", str(root), "--as-of", AS_OF)
    count = CloudPrice.objects.count()
    write(tmp_path, aws=AWS.replace("96.0,,us-west-2", "95.0,,us-west-2"))
    run("--skypilot", str(root), "--as-of", AS_OF)
    assert CloudPrice.objects.count() == count and price("aws-p5-48xlarge", "on_demand").usd_per_hour == 95.0


def test_all_regions_keeps_every_regions_price(catalog: Any, tmp_path: Path) -> None:
    run("--skypilot", str(write(tmp_path, aws=AWS)), "--as-of", AS_OF, "--all-regions", "--clouds", "aws")
    regions = dict(
        CloudPrice.objects.filter(
            offering__slug="aws-p5-48xlarge", pricing_model="on_demand", as_of=AS_OF
        ).values_list("region", "usd_per_hour")
    )
    assert regions == {"us-east-1": 98.32, "us-west-2": 96.0}


def test_a_bad_row_imports_nothing_from_its_file_and_names_its_line(catalog: Any, tmp_path: Path) -> None:
    bad = AWS.replace("113.93,60.0", "abc,60.0")  # line 5 of the file (the header is line 1)
    root = write(tmp_path, aws=bad, **{"lambda": LAMBDA})
    out = io.StringIO()
    with pytest.raises(CommandError, match="nothing imported from aws"):
        call_command("import_prices", "--skypilot", str(root), "--as-of", AS_OF, stdout=out, stderr=out)
    assert "line 5: Price: not a number: 'abc'" in out.getvalue()
    assert not CloudPrice.objects.filter(offering__provider="aws", as_of=AS_OF).exists()
    assert not CloudOffering.objects.filter(slug="aws-g6e-xlarge").exists()
    # Each file is all or nothing on its own: the good Lambda file still imported.
    assert CloudPrice.objects.filter(offering__provider="lambda", as_of=AS_OF).exists()


def test_the_service_reports_skipped_rows_by_reason(catalog: Any) -> None:
    result = cloud_price_import_skypilot(cloud="aws", content=AWS, as_of=dt.date(2026, 11, 15))
    summary = {group["reason"]: group for group in result.skipped_summary()}
    t4 = summary["accelerator T4 has no catalog accelerator mapped to it"]
    assert t4["lines"] == [8] and t4["instance_types"] == ["g4dn.xlarge"]
    assert summary["no accelerator (a CPU-only instance type)"]["count"] == 1
    assert summary["SpotPrice is empty (no spot price)"]["lines"] == [4]
    mapped = {(m["offering"], m["pricing_model"]) for m in result.mapped()}
    assert ("aws-p5-48xlarge", "spot") in mapped and ("aws-g6e-xlarge", "on_demand") in mapped


def test_an_offering_that_rents_other_gpus_gets_no_price(catalog: Any) -> None:
    # The catalog's lambda-gpu-8x-a100 rents 8 × a100-40gb; a table calling it A100-80GB is refused for it.
    table = "InstanceType,AcceleratorName,AcceleratorCount,Price,Region\ngpu_8x_a100,A100-80GB,8,14.32,x"
    result = cloud_price_import_skypilot(cloud="lambda", content=table, as_of=dt.date(2026, 11, 15))
    assert result.saved == []
    assert any("lambda-gpu-8x-a100 rents 8 × a100-40gb" in skip.reason for skip in result.skipped)


def test_a_file_that_is_not_a_skypilot_table_is_refused(catalog: Any) -> None:
    with pytest.raises(PriceImportError) as info:
        cloud_price_import_skypilot(cloud="aws", content="offering,price\nx,1\n", as_of=dt.date(2026, 11, 15))
    assert info.value.errors[0].line == 1 and "missing column(s)" in info.value.errors[0].message


def test_unknown_clouds_are_skipped_and_said(catalog: Any, tmp_path: Path) -> None:
    root = write(tmp_path, runpod=AWS, **{"lambda": LAMBDA})
    output = run("--skypilot", str(root), "--as-of", AS_OF, "--clouds", "lambda,runpod,azure")
    assert "runpod: skipped: not a cloud the catalog has" in output
    assert "azure: skipped: no " in output and "lambda: imported" in output


def test_api_upload_is_staff_only_and_reports_what_it_did(
    staff_client: Any, user_client: Any, api_client: Any, catalog: Any
) -> None:
    def upload(client: Any, text: str = LAMBDA) -> Any:
        file = SimpleUploadedFile("vms.csv", text.encode())
        data = {"file": file, "cloud": "lambda", "as_of": AS_OF}
        return client.post("/api/v1/cloud-prices/import-skypilot/", data, format="multipart")

    assert upload(api_client).status_code in (401, 403)
    assert upload(user_client).status_code == 403
    assert not CloudPrice.objects.filter(as_of=AS_OF).exists()

    response = upload(staff_client)
    assert response.status_code == 201
    body = response.json()
    assert body["imported"] == 2 and body["created_offerings"] == ["lambda-gpu-1x-h100-pcie"]
    assert {
        "offering": "lambda-gpu-8x-h100-sxm5",
        "instance_type": "gpu_8x_h100_sxm5",
        "accelerator": "h100-sxm",
        "gpu_count": 8,
        "pricing_model": "on_demand",
        "region": "us-east-1",
        "usd_per_hour": 23.92,
        "created_offering": False,
    } in body["mapped"]
    assert any(s["reason"].startswith("accelerator A10") for s in body["skipped"])

    bad = upload(staff_client, LAMBDA.replace("2.49", "free"))
    assert bad.status_code == 400
    assert bad.json() == {
        "error": {
            "code": "invalid",
            "message": "1 bad row(s); nothing was imported",
            "fields": {"line 4.Price": ["not a number: 'free'"]},
        }
    }


def test_api_upload_with_nothing_to_import_is_200(staff_client: Any, catalog: Any) -> None:
    text = "InstanceType,AcceleratorName,AcceleratorCount,Price,Region\nm5.large,,,0.096,us-east-1\n"
    file = SimpleUploadedFile("vms.csv", text.encode())
    response = staff_client.post(
        "/api/v1/cloud-prices/import-skypilot/", {"file": file, "cloud": "aws"}, format="multipart"
    )
    assert response.status_code == 200 and response.json()["imported"] == 0
    assert response.json()["as_of"] == dt.date.today().isoformat()


def test_api_upload_refuses_a_cloud_the_catalog_lacks(staff_client: Any, catalog: Any) -> None:
    file = SimpleUploadedFile("vms.csv", LAMBDA.encode())
    response = staff_client.post(
        "/api/v1/cloud-prices/import-skypilot/", {"file": file, "cloud": "runpod"}, format="multipart"
    )
    assert response.status_code == 400 and "cloud" in response.json()["error"]["fields"]


@pytest.fixture
def admin_client(client: Any, django_user_model: Any) -> Any:
    """A staff user allowed to add prices and offerings in the admin (not a superuser)."""
    from django.contrib.auth.models import Permission

    staff = django_user_model.objects.create_user("prices", password="pw-prices-123", is_staff=True)
    staff.user_permissions.set(
        Permission.objects.filter(
            content_type__app_label="catalog",
            codename__in=["view_cloudprice", "add_cloudprice", "change_cloudprice", "add_cloudoffering"],
        )
    )
    client.force_login(staff)
    return client


def test_admin_page_needs_the_permission_to_add_prices(client: Any, django_user_model: Any, db: Any) -> None:
    viewer = django_user_model.objects.create_user("viewer", password="pw-viewer-123", is_staff=True)
    client.force_login(viewer)
    assert client.get("/admin/catalog/cloudprice/import-skypilot/").status_code == 403


def test_admin_page_imports_an_upload_and_shows_mapped_and_skipped(admin_client: Any, catalog: Any) -> None:
    url = "/admin/catalog/cloudprice/import-skypilot/"
    assert admin_client.get(url).status_code == 200
    assert url in admin_client.get("/admin/catalog/cloudprice/").content.decode()
    file = SimpleUploadedFile("vms.csv", AWS.encode())
    response = admin_client.post(url, {"cloud": "aws", "file": file, "as_of": AS_OF})
    page = response.content.decode()
    assert response.status_code == 200
    assert "Imported 6 aws price(s) as of 2026-11-15" in page
    assert "aws-g6e-xlarge" in page and "accelerator T4 has no catalog accelerator mapped to it" in page
    assert price("aws-p5-48xlarge", "on_demand").usd_per_hour == 96.0


def test_admin_page_lists_bad_rows_and_imports_nothing(admin_client: Any, catalog: Any) -> None:
    file = SimpleUploadedFile("vms.csv", AWS.replace("1.861", "-1").encode())
    response = admin_client.post("/admin/catalog/cloudprice/import-skypilot/", {"cloud": "aws", "file": file})
    assert "line 6: Price: must be a finite number of 0 or more" in response.content.decode()
    assert not CloudPrice.objects.filter(offering__provider="aws", as_of=dt.date.today()).exists()


@pytest.mark.parametrize(
    ("content", "reason"),
    [
        (
            "InstanceType,AcceleratorName,AcceleratorCount,Price,Region\n" + "x" * 140_000 + ",A100,8,1,r\n",
            "file: not a readable CSV: field larger",
        ),
        ("\ufeff".encode("utf-16") + b"\xff\xfe", "file: not UTF-8 text"),
    ],
    ids=["a field over the csv module's limit", "not UTF-8"],
)
def test_admin_page_shows_why_a_file_is_unreadable_instead_of_a_500(
    admin_client: Any, catalog: Any, content: str | bytes, reason: str
) -> None:
    data = content.encode() if isinstance(content, str) else content
    file = SimpleUploadedFile("vms.csv", data)
    before = CloudPrice.objects.count()
    response = admin_client.post("/admin/catalog/cloudprice/import-skypilot/", {"cloud": "aws", "file": file})
    assert response.status_code == 200 and reason in response.content.decode()
    assert CloudPrice.objects.count() == before


def test_without_as_of_the_prices_take_the_files_modification_date(catalog: Any, tmp_path: Path) -> None:
    """SkyPilot rewrites vms.csv when it fetches its catalog, so the file's date is when the prices held."""
    root = write(tmp_path, **{"lambda": LAMBDA})
    fetched = dt.datetime(2026, 10, 2, 12, 0).timestamp()
    os.utime(root / "lambda" / "vms.csv", (fetched, fetched))
    run("--skypilot", str(root))
    assert (
        CloudPrice.objects.get(
            offering__slug="lambda-gpu-8x-h100-sxm5", pricing_model="on_demand", as_of="2026-10-02"
        ).usd_per_hour
        == 23.92
    )


def test_with_a_file_the_command_imports_negotiated_prices(catalog: Any, tmp_path: Path) -> None:
    path = tmp_path / "quote.csv"
    path.write_text(
        "offering,pricing_model,usd_per_hour,currency,region,as_of,source\n"
        "aws-p5-48xlarge,reserved_3y,21.5,USD,us-east-1,2026-11-01,our quote\n"
    )
    assert "Imported 1 price(s)" in run(str(path))
    with pytest.raises(CommandError, match="either a CSV file or --skypilot"):
        run()


def test_api_upload_reads_lines_ended_by_cr_alone(staff_client: Any, catalog: Any) -> None:
    """The same vms.csv with CR line ends imports the same two prices (csv_text: newline="")."""
    file = SimpleUploadedFile("vms.csv", LAMBDA.replace("\n", "\r").encode())
    data = {"file": file, "cloud": "lambda", "as_of": AS_OF}
    response = staff_client.post("/api/v1/cloud-prices/import-skypilot/", data, format="multipart")
    assert response.status_code == 201 and response.json()["imported"] == 2
    assert price("lambda-gpu-8x-h100-sxm5", "on_demand", region="us-east-1").usd_per_hour == 23.92
