"""`make package` and `make publish` as a user runs them, offline: S3 is moto's server
(AWS_ENDPOINT_URL_S3) and the Serverless Application Repository a recording stand-in
(`fake_sar`). The packaged template must point at uploaded objects that hold exactly what
`sam build` built, pass cfn-lint and the SAM translator, and be published as it is."""

from __future__ import annotations

import fcntl
import io
import os
import subprocess
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import boto3
import dlq_replay
import pytest
from dlq_replay.demo.emulator import emulator
from samtranslator.yaml_helper import yaml_parse

from tools.sar import APPLICATION, SAR_UNSUPPORTED
from tools.transform_template import transform_template

from .conftest import ROOT
from .fake_sar import ENDPOINT_VARIABLE, Answer, Request, fake_sar

BUCKET = "sqs-dlq-replay-releases"
APPLICATION_ID = "arn:aws:serverlessrepo:us-east-1:123456789012:applications/sqs-dlq-replay"
# `make publish` reuses the repository's `.aws-sam/build` (made by `make build` before pytest in
# `make test`) or makes it; two pytest-xdist workers must not build it at the same time.
BUILD_LOCK = ROOT / "build" / "sam-build.lock"


@dataclass(frozen=True)
class Published:
    run: subprocess.CompletedProcess[str]
    sar_dir: Path  # what `make package` wrote (SAR_DIR)
    packaged: dict[str, Any]
    objects: dict[str, bytes]  # s3:// URL -> the object's bytes
    requests: list[Request]


def new_application(request: Request) -> Answer:
    if (request.method, request.path) == ("POST", "/applications"):
        return Answer(201, {"applicationId": APPLICATION_ID, "name": request.body["name"]})
    return Answer(400, {"message": "unexpected"}, error="BadRequestException")


def make(*targets: str, sar_dir: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MAKELEVEL", "MFLAGS")}
    return subprocess.run(
        [
            "make",
            "--no-print-directory",
            "-C",
            str(ROOT),
            # The toolchain these tests run on is not reinstalled under them (the lock may
            # have changed since it was installed).
            "-o",
            ".venv/.installed",
            *targets,
            f"S3_BUCKET={BUCKET}",
            f"SAR_DIR={sar_dir}",
        ],
        env={**clean, **env},
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )


@pytest.fixture(scope="module")
def published(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Published]:
    sar_dir = tmp_path_factory.mktemp("sar")
    with emulator() as s3_endpoint, fake_sar(new_application) as (sar_endpoint, requests):
        s3 = boto3.client(
            "s3",
            endpoint_url=s3_endpoint,
            region_name="us-east-1",
            aws_access_key_id="release",
            aws_secret_access_key="release",
        )
        s3.create_bucket(Bucket=BUCKET)
        env = {
            "AWS_ACCESS_KEY_ID": "release",
            "AWS_SECRET_ACCESS_KEY": "release",
            "AWS_DEFAULT_REGION": "us-east-1",
            "AWS_ENDPOINT_URL_S3": s3_endpoint,
            ENDPOINT_VARIABLE: sar_endpoint,
        }
        BUILD_LOCK.parent.mkdir(exist_ok=True)
        with BUILD_LOCK.open("w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file is closed
            run = make("publish", sar_dir=sar_dir, env=env)
        assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
        objects = {}
        for item in s3.list_objects_v2(Bucket=BUCKET).get("Contents", []):
            body = s3.get_object(Bucket=BUCKET, Key=item["Key"])["Body"].read()
            objects[f"s3://{BUCKET}/{item['Key']}"] = body
        packaged = yaml_parse((sar_dir / "packaged.yaml").read_text())
        yield Published(run, sar_dir, packaged, objects, requests)


def _unzipped(data: bytes) -> dict[str, bytes]:
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        return {i.filename: archive.read(i) for i in archive.infolist() if not i.is_dir()}


def _built(folder: Path) -> dict[str, bytes]:
    return {
        p.relative_to(folder).as_posix(): p.read_bytes() for p in folder.rglob("*") if p.is_file()
    }


def test_code_and_layer_are_uploaded_exactly_as_built(published: Published) -> None:
    resources = published.packaged["Resources"]
    code = resources["ReplayFunction"]["Properties"]["CodeUri"]
    layer = resources["ReplayLayer"]["Properties"]["ContentUri"]
    build = ROOT / ".aws-sam" / "build"
    assert _unzipped(published.objects[code]) == _built(build / "ReplayFunction")
    assert _unzipped(published.objects[layer]) == _built(build / "ReplayLayer")


def test_license_and_readme_are_uploaded_and_the_metadata_is_the_release(
    published: Published,
) -> None:
    application = published.packaged["Metadata"][APPLICATION]
    assert published.objects[application["LicenseUrl"]] == (ROOT / "LICENSE").read_bytes()
    readme = published.objects[application["ReadmeUrl"]].decode()
    assert readme == (published.sar_dir / "README-SAR.md").read_text()
    assert readme.startswith("# sqs-dlq-replay")
    assert application["SemanticVersion"] == dlq_replay.__version__
    assert application["SourceCodeUrl"].endswith(f"/tree/v{dlq_replay.__version__}")


def test_the_packaged_template_passes_cfn_lint_and_the_translator(published: Published) -> None:
    lint = subprocess.run(
        [str(ROOT / ".venv" / "bin" / "cfn-lint"), "--", str(published.sar_dir / "packaged.yaml")],
        capture_output=True,
        text=True,
        check=False,
    )
    assert lint.returncode == 0, lint.stdout
    cfn = transform_template(published.sar_dir / "packaged.yaml", region="us-east-1")
    code = cfn["Resources"]["ReplayFunction"]["Properties"]["Code"]
    assert code["S3Bucket"] == BUCKET


def test_the_packaged_template_holds_nothing_sar_refuses(published: Published) -> None:
    for resource in published.packaged["Resources"].values():
        for prop, _ in SAR_UNSUPPORTED.get(resource["Type"], ()):
            assert prop not in resource.get("Properties", {})


def test_publish_creates_the_application_from_the_packaged_template(published: Published) -> None:
    (create,) = published.requests
    assert (create.method, create.path) == ("POST", "/applications")
    application = published.packaged["Metadata"][APPLICATION]
    template = yaml_parse(create.body.pop("templateBody"))
    assert create.body == {
        "author": application["Author"],
        "description": application["Description"],
        "homePageUrl": application["HomePageUrl"],
        "labels": application["Labels"],
        "licenseUrl": application["LicenseUrl"],
        "name": "sqs-dlq-replay",
        "readmeUrl": application["ReadmeUrl"],
        "semanticVersion": dlq_replay.__version__,
        "sourceCodeUrl": application["SourceCodeUrl"],
        "spdxLicenseId": "MIT-0",
    }
    # The template SAR stores is the packaged one without its SAR metadata.
    expected = {**published.packaged, "Metadata": dict(published.packaged["Metadata"])}
    expected["Metadata"].pop(APPLICATION)
    if not expected["Metadata"]:
        expected.pop("Metadata")
    assert template == expected
    assert "Publish Succeeded" in published.run.stdout


def test_package_without_a_bucket_says_what_is_missing() -> None:
    run = subprocess.run(
        ["make", "--no-print-directory", "-C", str(ROOT), "package", "S3_BUCKET="],
        capture_output=True,
        text=True,
        check=False,
        env={k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MAKELEVEL")},
    )
    assert run.returncode != 0
    assert "S3_BUCKET=<bucket> is required" in run.stderr
