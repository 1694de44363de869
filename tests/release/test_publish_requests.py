"""The exact SAR requests of a publish over an existing application, through the code `sam
publish` runs (samcli's vendored serverlessrepo) with a botocore Stubber, and of `share`.
The packaged template is the one `sam package` writes: a small stand-in keeps these fast."""

from __future__ import annotations

import argparse
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from botocore.stub import Stubber
from samcli.vendor.serverlessrepo import publish_application
from samcli.vendor.serverlessrepo.exceptions import DuplicateSemanticVersionError

from tools.sar import share

APPLICATION_ID = "arn:aws:serverlessrepo:us-east-1:123456789012:applications/sqs-dlq-replay"
PACKAGED: dict[str, Any] = {
    "Transform": "AWS::Serverless-2016-10-31",
    "Metadata": {
        "AWS::ServerlessRepo::Application": {
            "Name": "sqs-dlq-replay",
            "Description": "Replays DLQ messages.",
            "Author": "sqs-dlq-replay",
            "SpdxLicenseId": "MIT-0",
            "LicenseUrl": "s3://releases/sqs-dlq-replay/license",
            "ReadmeUrl": "s3://releases/sqs-dlq-replay/readme",
            "Labels": ["sqs"],
            "HomePageUrl": "https://github.com/example/fork",
            "SemanticVersion": "1.2.0",
            "SourceCodeUrl": "https://github.com/example/fork/tree/v1.2.0",
        }
    },
    "Resources": {"Queue": {"Type": "AWS::SQS::Queue"}},
}
# What SAR stores: the template without its SAR metadata, as samcli dumps it (keys sorted).
TEMPLATE_BODY = (
    "Resources:\n  Queue:\n    Type: AWS::SQS::Queue\nTransform: AWS::Serverless-2016-10-31\n"
)


@pytest.fixture
def sar() -> Iterator[tuple[Any, Stubber]]:
    client = boto3.client("serverlessrepo", region_name="us-east-1")
    with Stubber(client) as stubber:
        yield client, stubber
        stubber.assert_no_pending_responses()


def _conflict(stubber: Stubber) -> None:
    stubber.add_client_error(
        "create_application",
        service_error_code="ConflictException",
        service_message=f"Application with id {APPLICATION_ID} already exists.",
        http_status_code=409,
    )


def test_a_new_version_of_an_existing_application(sar: tuple[Any, Stubber]) -> None:
    client, stubber = sar
    _conflict(stubber)
    stubber.add_client_error(
        "get_application",
        service_error_code="NotFoundException",
        http_status_code=404,
        expected_params={"ApplicationId": APPLICATION_ID, "SemanticVersion": "1.2.0"},
    )
    stubber.add_response(
        "update_application",
        {},
        {
            "ApplicationId": APPLICATION_ID,
            "Author": "sqs-dlq-replay",
            "Description": "Replays DLQ messages.",
            "HomePageUrl": "https://github.com/example/fork",
            "Labels": ["sqs"],
            "ReadmeUrl": "s3://releases/sqs-dlq-replay/readme",
        },
    )
    stubber.add_response(
        "create_application_version",
        {},
        {
            "ApplicationId": APPLICATION_ID,
            "SemanticVersion": "1.2.0",
            "SourceCodeUrl": "https://github.com/example/fork/tree/v1.2.0",
            "TemplateBody": TEMPLATE_BODY,
        },
    )
    result = publish_application(PACKAGED, sar_client=client, fail_on_same_version=True)
    assert result["actions"] == ["UPDATE_APPLICATION", "CREATE_APPLICATION_VERSION"]


def test_a_version_already_published_is_never_published_again(sar: tuple[Any, Stubber]) -> None:
    """`make publish` passes --fail-on-same-version: no update, no second 1.2.0."""
    client, stubber = sar
    _conflict(stubber)
    stubber.add_response(
        "get_application",
        {"ApplicationId": APPLICATION_ID},
        {"ApplicationId": APPLICATION_ID, "SemanticVersion": "1.2.0"},
    )
    with pytest.raises(DuplicateSemanticVersionError, match=r"1\.2\.0"):
        publish_application(PACKAGED, sar_client=client, fail_on_same_version=True)


def _share_args(*argv: str) -> argparse.Namespace:
    args = {
        "application_id": APPLICATION_ID,
        "public": False,
        "account": None,
        "org": None,
        "private": False,
    }
    for flag in argv:
        name, _, value = flag.partition("=")
        key = name.removeprefix("--")
        args[key] = True if not value else ([value] if key == "account" else value)
    return argparse.Namespace(**args)


@pytest.mark.parametrize(
    ("argv", "statements"),
    [
        (["--public"], [{"Principals": ["*"], "Actions": ["Deploy"]}]),
        (["--account=210987654321"], [{"Principals": ["210987654321"], "Actions": ["Deploy"]}]),
        (
            ["--org=o-abcdef1234"],
            [
                {
                    "Principals": ["*"],
                    "PrincipalOrgIDs": ["o-abcdef1234"],
                    "Actions": ["Deploy", "UnshareApplication"],
                }
            ],
        ),
        (["--private"], []),
    ],
)
def test_share_puts_exactly_the_chosen_policy(
    sar: tuple[Any, Stubber], argv: list[str], statements: list[dict[str, Any]]
) -> None:
    client, stubber = sar
    stubber.add_response(
        "put_application_policy",
        {},
        {"ApplicationId": APPLICATION_ID, "Statements": statements},
    )
    assert share(_share_args(*argv), client).startswith(APPLICATION_ID)


def test_share_finds_the_application_by_name(sar: tuple[Any, Stubber]) -> None:
    client, stubber = sar
    stubber.add_response(
        "list_applications",
        {
            "Applications": [
                {
                    "ApplicationId": APPLICATION_ID.replace("sqs-dlq-replay", "other"),
                    "Name": "other",
                    "Author": "a",
                    "Description": "d",
                },
                {
                    "ApplicationId": APPLICATION_ID,
                    "Name": "sqs-dlq-replay",
                    "Author": "a",
                    "Description": "d",
                },
            ]
        },
        {},
    )
    stubber.add_response(
        "put_application_policy",
        {},
        {
            "ApplicationId": APPLICATION_ID,
            "Statements": [{"Principals": ["*"], "Actions": ["Deploy"]}],
        },
    )
    args = _share_args("--public")
    args.application_id = None
    assert share(args, client) == f"{APPLICATION_ID}: deployable by ['*']"
