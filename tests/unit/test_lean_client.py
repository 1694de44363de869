"""The redrive's SQS client (`sqs.client.lean`): botocore's own, configured through its public
`Config` only, without the per-call work that does not change within a run: no check of the
parameters the code builds, a User-Agent written once that still says what botocore's says."""

from __future__ import annotations

import re
from typing import Any

import pytest
from botocore.exceptions import ParamValidationError
from dlq_replay import __version__
from dlq_replay.cli.main import build_parser
from dlq_replay.cli.options import INTERACTIVE_CONFIG, sqs_client
from dlq_replay.ops.redrive import MAX_CONCURRENCY
from dlq_replay.sqs import client as sqs_clients
from hypothesis import given
from hypothesis import strategies as st

QUEUE = "https://sqs.eu-west-1.amazonaws.com/123456789012/orders"
# What botocore lets a User-Agent value hold.
ALLOWED = re.compile(r"[A-Za-z0-9!$%&'*+\-.^_`|~,]*")


class SentError(Exception):
    """Raised by the hook instead of sending: the request is what the test looks at."""


def sent_user_agents(config: Any, calls: int = 1) -> list[str]:
    """The User-Agent of `calls` requests of a client with `config` (none reaches a network)."""
    sqs = sqs_clients.sqs_client(region_name="eu-west-1", config=config)
    seen: list[str] = []

    def record(request: Any, **_: Any) -> None:
        seen.append(request.headers["User-Agent"].decode())
        raise SentError

    sqs.meta.events.register("before-send.sqs.*", record)
    for _ in range(calls):
        with pytest.raises(SentError):
            sqs.get_queue_url(QueueName="orders")
    return seen


def sent_unchecked(sqs: Any) -> bytes:
    """The body `sqs` sends for a receive that botocore's check refuses (ParamValidationError,
    tests/unit/test_client.py), when it sends it at all: SQS then judges it."""
    sent: list[bytes] = []

    def record(request: Any, **_: Any) -> None:
        sent.append(request.body)
        raise SentError

    sqs.meta.events.register("before-send.sqs.ReceiveMessage", record)
    with pytest.raises(SentError):
        sqs.receive_message(QueueUrl=QUEUE, MaxNumberOfMessages="ten")
    return sent[0]


def test_a_lean_client_sends_what_the_code_built_unchecked() -> None:
    sqs = sqs_clients.sqs_client(
        region_name="eu-west-1", config=sqs_clients.lean(INTERACTIVE_CONFIG)
    )

    assert b'"MaxNumberOfMessages": "ten"' in sent_unchecked(sqs)


def test_the_lean_user_agent_is_botocores_without_its_per_call_codes() -> None:
    own = sent_user_agents(INTERACTIVE_CONFIG)[0].split()
    lean = sent_user_agents(sqs_clients.lean(INTERACTIVE_CONFIG), calls=2)

    assert lean[0] == lean[1]  # written once
    parts = lean[0].split()
    assert parts[0].startswith("Boto3/")
    assert f"app/sqs-dlq-replay#{__version__}" in parts
    assert "ua/2.1" in parts
    # Nothing botocore would not say itself (it adds per-call feature codes, and metadata
    # such as awscrt's version when installed).
    assert set(parts) <= set(own)
    assert {"ua/2.1", "md/pyimpl#CPython"} <= set(parts)
    assert any(part.startswith("lang/python#") for part in parts)


def test_the_redrive_moves_with_a_lean_client_and_a_connection_per_batch() -> None:
    argv = ["redrive", "--from", QUEUE, "--to", QUEUE.replace("orders", "main")]
    args = build_parser(["redrive"]).parse_args(argv)
    args.region = "eu-west-1"

    sqs = sqs_client(args)

    assert sqs.meta.config.max_pool_connections == MAX_CONCURRENCY  # type: ignore[attr-defined]
    assert sqs.meta.config.user_agent.startswith("Boto3/")  # type: ignore[attr-defined]
    assert b'"MaxNumberOfMessages": "ten"' in sent_unchecked(sqs)
    # The other interactive commands keep botocore's check.
    peek = build_parser(["peek"]).parse_args(["peek", QUEUE])
    peek.region = "eu-west-1"
    with pytest.raises(ParamValidationError, match="MaxNumberOfMessages"):
        sent_unchecked(sqs_client(peek))


@given(st.text())
def test_any_text_becomes_a_user_agent_value_of_the_same_length(text: str) -> None:
    value = sqs_clients.safe_component(text)

    assert ALLOWED.fullmatch(value)
    assert len(value) == len(text)
    assert [a for a, b in zip(value, text, strict=True) if a != b] == ["-"] * sum(
        1 for a, b in zip(value, text, strict=True) if a != b
    )
