"""The SQS client's session: botocore's loader told which services it serves, so making the
Lambda's client skips botocore's walk over every service's directory, and nothing else
changes."""

from __future__ import annotations

from pathlib import Path

import pytest
from botocore.exceptions import UnknownServiceError
from dlq_replay.sqs.client import known_services_session, sqs_client


def test_the_loader_lists_only_the_named_services() -> None:
    loader = known_services_session()._session.get_component("data_loader")

    # SQS and SNS (notices), and the outage breaker's DynamoDB, Lambda, EventBridge, CloudWatch.
    named = ["cloudwatch", "dynamodb", "events", "lambda", "sns", "sqs"]
    assert loader.list_available_services("service-2") == named
    assert loader.list_available_services("endpoint-rule-set-1") == named


def test_clients_of_the_named_services_are_made_with_their_models() -> None:
    session = known_services_session()

    sqs = sqs_client(region_name="eu-west-1", session=session)
    sns = session.client("sns", region_name="eu-west-1")

    assert sqs.meta.service_model.service_name == "sqs"
    assert sqs.meta.region_name == "eu-west-1"
    assert "publish_batch" in dir(sns)


def test_a_service_not_named_is_refused_as_unknown() -> None:
    with pytest.raises(UnknownServiceError):
        known_services_session().client("s3", region_name="eu-west-1")


def test_aws_data_path_is_searched_first_as_botocore_does(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("AWS_DATA_PATH", f"{tmp_path}/models:~/more")

    loader = known_services_session()._session.get_component("data_loader")

    assert loader.search_paths[:2] == [f"{tmp_path}/models", str(Path("~/more").expanduser())]
