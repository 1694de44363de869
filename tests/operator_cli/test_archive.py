"""`dlq-replay export` / `dlq-replay import`: a JSON Lines archive that round-trips every message
byte for byte, a --delete that deletes only once the file is safe, and an import that resumes
after a failure halfway without sending anything twice."""

from __future__ import annotations

import base64
import errno
import json
import os
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Any

import boto3
import pytest
from dlq_replay.follow.tag import FOLLOW_ATTRIBUTE
from dlq_replay.ops.receiving import drain
from integration.harness import RequestLog

from .support import (
    COUNT,
    PARK_REASON,
    REGION,
    Queues,
    assert_one_line_error,
    binary,
    depth,
    make_queues,
    park,
    queue_arn,
    run_cli,
    string,
)
from .test_redrive import fail_call, signal_on_call, unavailable

if TYPE_CHECKING:
    from mypy_boto3_sqs import SQSClient
    from mypy_boto3_sqs.type_defs import MessageTypeDef

pytestmark = pytest.mark.emulator

FAST = ("--wait-seconds", "0")
BLOB = b"\x1f\x8b\x08\x00" + bytes(range(255, -1, -1))
EXTRA = {
    "tenant": string("acme"),
    "weight": string("12.50", "Number"),
    "ratio": string("0.125", "Number.float"),
    "raw": binary(bytes(range(256))),
    "blob": binary(BLOB, "Binary.gzip"),
    "note": string("ünïcode ✓ 日本語", "String.utf8"),
}


def export(capsys: pytest.CaptureFixture[str], queues: Queues, *extra: str) -> Any:
    return run_cli(capsys, "export", *queues.options(), *FAST, "--json", *extra)


def import_(capsys: pytest.CaptureFixture[str], queues: Queues, *extra: str) -> Any:
    return run_cli(capsys, "import", *queues.options(), "--json", *extra)


def records(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def attributes_of(message: MessageTypeDef) -> dict[str, dict[str, Any]]:
    return {name: dict(value) for name, value in message.get("MessageAttributes", {}).items()}


def test_a_round_trip_is_byte_exact_and_leaves_the_originals_without_delete(
    capsys: pytest.CaptureFixture[str],
    sqs: SQSClient,
    queues: Queues,
    command_sqs: SQSClient,
    tmp_path: Path,
) -> None:
    bodies = ["plain", "ünïcode ✓ 🚀 \u2028\x85 line\r\nbreaks\ttab", '{"order": 1}']
    ids = park(sqs, queues.operator, bodies, extra=EXTRA)
    trace = "Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1"
    ids.append(
        sqs.send_message(
            QueueUrl=queues.operator,
            MessageBody="traced",
            MessageSystemAttributes={
                "AWSTraceHeader": {"DataType": "String", "StringValue": trace}
            },
        )["MessageId"]
    )
    bodies.append("traced")
    archive = tmp_path / "parked.jsonl"

    exported = export(capsys, queues, "operator", "--file", str(archive))

    assert exported.code == 0, exported
    result = exported.json()
    assert (result["examined"], result["exported"], result["deleted"]) == (4, 4, 0)
    assert result["adds_up"]
    assert depth(sqs, queues.operator) == (4, 0)  # given back at once, visible
    lines = records(archive)
    assert {line["message_id"] for line in lines} == set(ids)
    assert [line["aws_trace_header"] for line in lines if line["body"] == "traced"] == [trace]
    for line in lines:
        assert line["format"] == "dlq-replay/1"
        if line["body"] == "traced":
            continue
        assert line["attributes"]["blob"] == {
            "DataType": "Binary.gzip",
            "BinaryValue": base64.b64encode(BLOB).decode(),
        }
        assert line["attributes"][PARK_REASON] == {
            "DataType": "String",
            "StringValue": "max-attempts",
        }
        assert line["receive_count"] == 1
        assert isinstance(line["sent_timestamp"], int)
        assert line["message_group_id"] is None

    log = RequestLog(command_sqs)
    imported = import_(capsys, queues, str(archive), "--to", "main")

    assert imported.code == 0, imported
    tally = imported.json()
    assert (tally["read"], tally["sent"], tally["skipped"], tally["failed"]) == (4, 4, 0, 0)
    assert tally["adds_up"]
    originals = {m["Body"]: attributes_of(m) for m in drain(sqs, queues.operator)}
    copies = drain(sqs, queues.main)
    assert Counter(m["Body"] for m in copies) == Counter(bodies)
    archived = {line["body"]: line["message_id"] for line in lines}
    for copy in copies:
        # Every attribute, byte for byte, and the import's tag (follow/) beside them.
        tag = f"{tally['action_id']}/{archived[copy['Body']]}"
        followed = {FOLLOW_ATTRIBUTE: {"DataType": "String", "StringValue": tag}}
        assert attributes_of(copy) == {**originals[copy["Body"]], **followed}
    # moto drops AWSTraceHeader on SendMessageBatch: the request is the evidence.
    [request] = log.of("SendMessageBatch")
    assert [
        e["MessageSystemAttributes"] for e in request["Entries"] if e["MessageBody"] == "traced"
    ] == [{"AWSTraceHeader": string(trace)}]
    assert (tmp_path / "parked.jsonl.progress").read_text().split() == [
        line["message_id"] for line in lines
    ]


def test_a_message_of_almost_one_mebibyte_round_trips(
    capsys: pytest.CaptureFixture[str], sqs: SQSClient, queues: Queues, tmp_path: Path
) -> None:
    # SQS counts the body and every attribute's name, type and value against 1 MiB.
    attributes_size = len(PARK_REASON) + len("String") + len("max-attempts")
    attributes_size += len(COUNT) + len("Number") + 1
    body = "é" * ((1_048_576 - attributes_size - 64) // 2)
    park(sqs, queues.operator, [body])
    archive = tmp_path / "big.jsonl"

    assert export(capsys, queues, "operator", "--file", str(archive), "--delete").code == 0
    imported = import_(capsys, queues, str(archive), "--to", "main")

    assert imported.code == 0, imported
    [copy] = drain(sqs, queues.main)
    assert copy["Body"] == body
    assert copy["MessageAttributes"][COUNT] == {"DataType": "Number", "StringValue": "3"}


def test_fifo_keeps_the_group_and_deduplicates_a_rerun(
    capsys: pytest.CaptureFixture[str], sqs: SQSClient, tmp_path: Path
) -> None:
    queues = make_queues(sqs, "shop", fifo=True)
    ids = park(sqs, queues.operator, ["a1", "a2"], group="alice")
    ids += park(sqs, queues.operator, ["b1"], group="bob")
    archive = tmp_path / "fifo.jsonl"

    assert export(capsys, queues, "operator", "--file", str(archive), "--delete").code == 0
    lines = records(archive)
    assert [(line["body"], line["message_group_id"]) for line in lines] == [
        ("a1", "alice"),
        ("a2", "alice"),
        ("b1", "bob"),
    ]
    assert all(line["message_deduplication_id"] for line in lines)
    assert import_(capsys, queues, str(archive), "--to", "main").code == 0
    # The progress file gone, a rerun sends again: SQS deduplicates it within 5 minutes.
    (tmp_path / "fifo.jsonl.progress").unlink()
    assert import_(capsys, queues, str(archive), "--to", "main").json()["sent"] == 3

    copies = drain(sqs, queues.main)
    assert [(m["Body"], m["Attributes"]["MessageGroupId"]) for m in copies] == [
        ("a1", "alice"),
        ("a2", "alice"),
        ("b1", "bob"),
    ]
    assert {m["Attributes"]["MessageDeduplicationId"] for m in copies} == {
        f"{message_id}-import" for message_id in ids
    }


# -- export --delete -----------------------------------------------------------------------------


def test_delete_deletes_only_once_the_archive_is_complete(
    capsys: pytest.CaptureFixture[str],
    sqs: SQSClient,
    queues: Queues,
    command_sqs: SQSClient,
    tmp_path: Path,
) -> None:
    park(sqs, queues.operator, [f"m{i}" for i in range(14)])
    archive = tmp_path / "parked.jsonl"
    seen_at_delete: list[int] = []

    def before_delete(**_: Any) -> None:
        seen_at_delete.append(len(records(archive)) if archive.exists() else -1)

    command_sqs.meta.events.register("before-call.sqs.DeleteMessageBatch", before_delete)

    result = export(capsys, queues, "operator", "--file", str(archive), "--delete")

    assert result.code == 0, result
    assert (result.json()["exported"], result.json()["deleted"]) == (14, 14)
    assert seen_at_delete == [14, 14]  # two requests of up to 10, each after the whole file
    assert depth(sqs, queues.operator) == (0, 0)
    assert not (tmp_path / "parked.jsonl.part").exists()


def test_nothing_is_deleted_when_the_archive_cannot_be_made_safe(
    capsys: pytest.CaptureFixture[str],
    sqs: SQSClient,
    queues: Queues,
    command_sqs: SQSClient,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    park(sqs, queues.operator, [f"m{i}" for i in range(12)])
    archive = tmp_path / "parked.jsonl"
    deletes: list[object] = []
    command_sqs.meta.events.register(
        "before-call.sqs.DeleteMessageBatch", lambda **_: deletes.append(1)
    )

    real_fsync = os.fsync

    def fsync(fd: int) -> None:
        if os.readlink(f"/proc/self/fd/{fd}").endswith("audit.jsonl"):  # the audit trail's file
            real_fsync(fd)
            return
        raise OSError(errno.EIO, "Input/output error")

    monkeypatch.setattr(os, "fsync", fsync)

    result = export(capsys, queues, "operator", "--file", str(archive), "--delete")

    assert_one_line_error(result, 1, "Input/output error", "nothing was deleted")
    assert deletes == []
    assert depth(sqs, queues.operator) == (12, 0)  # all given back at once
    assert list(tmp_path.iterdir()) == []  # neither the archive nor its .part


def test_export_never_overwrites_a_file_that_is_not_an_archive(
    capsys: pytest.CaptureFixture[str], sqs: SQSClient, queues: Queues, tmp_path: Path
) -> None:
    park(sqs, queues.operator, ["m"])
    archive = tmp_path / "parked.jsonl"
    archive.write_text("precious\n")

    result = export(capsys, queues, "operator", "--file", str(archive), "--delete")

    assert_one_line_error(result, 2, "exists and is not an export archive")
    assert archive.read_text() == "precious\n"
    assert depth(sqs, queues.operator) == (1, 0)


def test_export_continues_an_archive_and_writes_each_message_once(
    capsys: pytest.CaptureFixture[str], sqs: SQSClient, queues: Queues, tmp_path: Path
) -> None:
    """A rerun with the same --file after a run that archived without deleting (an interrupted
    --delete): the archive keeps its records, gains the new ones, and holds each id once; the
    messages it already held are deleted with the rest."""
    park(sqs, queues.operator, [f"m{i}" for i in range(12)])
    archive = tmp_path / "parked.jsonl"
    first = export(capsys, queues, "operator", "--file", str(archive), "--limit", "5")
    assert first.code == 0, first
    park(sqs, queues.operator, ["late"])

    second = export(capsys, queues, "operator", "--file", str(archive), "--delete")

    assert second.code == 0, second
    result = second.json()
    assert (result["continued"], result["exported"], result["already_archived"]) == (5, 8, 5)
    assert (result["deleted"], result["examined"], result["adds_up"]) == (13, 13, True)
    ids = [record["message_id"] for record in records(archive)]
    assert len(ids) == len(set(ids)) == 13
    assert sorted(record["body"] for record in records(archive)) == sorted(
        [f"m{i}" for i in range(12)] + ["late"]
    )
    assert depth(sqs, queues.operator) == (0, 0)
    assert not (tmp_path / "parked.jsonl.part").exists()


def test_export_to_a_bucket_it_cannot_write_receives_nothing(
    capsys: pytest.CaptureFixture[str],
    sqs: SQSClient,
    queues: Queues,
    command_sqs: SQSClient,
    tmp_path: Path,
) -> None:
    park(sqs, queues.operator, [f"m{i}" for i in range(5)])
    receives: list[str] = []
    command_sqs.meta.events.register(
        "before-call.sqs.ReceiveMessage", lambda **_: receives.append("receive")
    )

    result = export(capsys, queues, "operator", "--s3-uri", "s3://no-such-bucket/x", "--delete")

    assert_one_line_error(
        result, 1, "cannot write s3://no-such-bucket/x", "nothing was received or deleted"
    )
    assert receives == []
    assert depth(sqs, queues.operator) == (5, 0)


def test_import_says_a_directory_is_one_and_leaves_no_empty_progress_file(
    capsys: pytest.CaptureFixture[str], sqs: SQSClient, queues: Queues, tmp_path: Path
) -> None:
    folder = run_cli(capsys, "import", str(tmp_path), "--to", "main", *queues.options())
    assert_one_line_error(folder, 2, "is a directory")

    archive = tmp_path / "nothing.jsonl"
    archive.write_text("not a record\n")
    result = import_(capsys, queues, str(archive), "--to", "main")

    assert result.code == 1
    assert result.json()["sent"] == 0
    assert not (tmp_path / "nothing.jsonl.progress").exists()


def test_filter_reason_and_limit_export_only_those_and_give_the_rest_back(
    capsys: pytest.CaptureFixture[str], sqs: SQSClient, queues: Queues, tmp_path: Path
) -> None:
    park(sqs, queues.operator, [f"r{i}" for i in range(6)], reason="rejected")
    park(sqs, queues.operator, [f"m{i}" for i in range(5)], reason="max-attempts")
    archive = tmp_path / "rejected.jsonl"

    result = export(
        capsys,
        queues,
        "operator",
        "--file",
        str(archive),
        "--filter-reason",
        "rejected",
        "--limit",
        "4",
        "--delete",
    )

    assert result.code == 0, result
    found = result.json()
    assert found["exported"] == 4
    assert found["adds_up"]
    assert all(line["body"].startswith("r") for line in records(archive))
    assert depth(sqs, queues.operator) == (7, 0)  # 2 rejected and 5 others, visible


def test_a_selection_exports_exactly_the_matching_messages(
    capsys: pytest.CaptureFixture[str], sqs: SQSClient, tmp_path: Path
) -> None:
    fifo = make_queues(sqs, "selected", fifo=True)
    acme, other = {"tenant": string("acme")}, {"tenant": string("globex")}
    park(sqs, fifo.operator, ['{"total": 150}', '{"total": 5}'], extra=acme, group="c-1")
    park(sqs, fifo.operator, ['{"total": 300}'], extra=other, group="c-1")
    park(sqs, fifo.operator, ['{"total": 900}'], extra=acme, group="c-2")
    archive = tmp_path / "selected.jsonl"

    result = export(
        capsys,
        fifo,
        "operator",
        "--file",
        str(archive),
        "--delete",
        "--group",
        "c-1",
        "--where",
        "tenant=acme",
        "--match",
        "total > `100`",
        "--newer-than",
        "1h",
    )

    assert result.code == 0, result
    found = result.json()
    assert (found["exported"], found["filtered"], found["deleted"]) == (1, 3, 1)
    assert [(line["body"], line["message_group_id"]) for line in records(archive)] == [
        ('{"total": 150}', "c-1")
    ]
    assert depth(sqs, fifo.operator) == (3, 0)  # the rest given back, visible


def test_the_receive_budget_refuses_an_export_that_could_move_messages(
    capsys: pytest.CaptureFixture[str], sqs: SQSClient, tmp_path: Path
) -> None:
    queues = make_queues(sqs, "tight", main_max_receive_count=3, dlq_max_receive_count=4)
    park(sqs, queues.dlq, ["m"])
    archive = tmp_path / "dlq.jsonl"

    result = export(capsys, queues, "dlq", "--file", str(archive))

    assert_one_line_error(result, 1, "maxReceiveCount 4")
    assert not archive.exists()
    assert depth(sqs, queues.dlq) == (1, 0)


def test_export_to_s3(
    capsys: pytest.CaptureFixture[str], sqs: SQSClient, queues: Queues, tmp_path: Path
) -> None:
    park(sqs, queues.operator, ["one", "twö"], extra={"blob": EXTRA["blob"]})
    s3 = boto3.client("s3", region_name=REGION)
    s3.create_bucket(Bucket="parked")
    archive = tmp_path / "parked.jsonl"

    both = export(
        capsys, queues, "operator", "--file", str(archive), "--s3-uri", "s3://parked/a.jsonl"
    )
    only = export(capsys, queues, "operator", "--s3-uri", "s3://parked/b.jsonl", "--delete")

    assert (both.code, only.code) == (0, 0), (both, only)
    first = s3.get_object(Bucket="parked", Key="a.jsonl")
    assert first["Body"].read() == archive.read_bytes()
    assert first["ContentType"] == "application/x-ndjson"
    second = s3.get_object(Bucket="parked", Key="b.jsonl")["Body"].read().decode()
    assert sorted(json.loads(line)["body"] for line in second.splitlines()) == ["one", "twö"]
    assert only.json()["deleted"] == 2
    assert depth(sqs, queues.operator) == (0, 0)


# -- import ---------------------------------------------------------------------------------------


def exported_archive(
    capsys: pytest.CaptureFixture[str], sqs: SQSClient, queues: Queues, path: Path, count: int
) -> Counter[str]:
    bodies = Counter(f"m{i}" for i in range(count))
    park(sqs, queues.operator, list(bodies), extra={"blob": EXTRA["blob"]})
    assert export(capsys, queues, "operator", "--file", str(path), "--delete").code == 0
    return bodies


@pytest.mark.parametrize(
    "error",
    [unavailable("SendMessageBatch"), None],
    ids=["send-failure", "interrupted"],
)
def test_an_import_failing_halfway_is_rerun_and_sends_each_message_once(
    capsys: pytest.CaptureFixture[str],
    sqs: SQSClient,
    queues: Queues,
    command_sqs: SQSClient,
    tmp_path: Path,
    error: BaseException | None,
) -> None:
    archive = tmp_path / "parked.jsonl"
    expected = exported_archive(capsys, sqs, queues, archive, 25)
    if error is None:
        signal_on_call(command_sqs, "SendMessageBatch", 2)
    else:
        fail_call(command_sqs, "SendMessageBatch", 2, error)

    first = import_(capsys, queues, str(archive), "--to", "main")

    assert "Traceback" not in first.err
    if error is None:
        assert first.code == 130
        assert "rerun to continue" in first.err
        sent_first = 20  # the batch in flight when Ctrl-C came was finished
    else:
        assert first.code == 1
        tally = first.json()
        assert (tally["read"], tally["sent"], tally["skipped"], tally["failed"]) == (25, 15, 0, 10)
        assert tally["adds_up"]
        assert {f["line"] for f in tally["failures"]} == set(range(11, 21))
        assert all(f["reason"].startswith("ServiceUnavailable") for f in tally["failures"])
        sent_first = 15
    assert len((tmp_path / "parked.jsonl.progress").read_text().split()) == sent_first

    second = import_(capsys, queues, str(archive), "--to", "main")

    assert second.code == 0, second
    tally = second.json()
    assert (tally["read"], tally["sent"], tally["skipped"], tally["failed"]) == (
        25,
        25 - sent_first,
        sent_first,
        0,
    )
    assert tally["skips"] == {"already-imported": sent_first}
    copies = drain(sqs, queues.main)
    assert Counter(m["Body"] for m in copies) == expected  # each exactly once
    assert all(m["MessageAttributes"]["blob"] == EXTRA["blob"] for m in copies)


def test_reset_count_leaves_the_count_out(
    capsys: pytest.CaptureFixture[str], sqs: SQSClient, queues: Queues, tmp_path: Path
) -> None:
    archive = tmp_path / "parked.jsonl"
    exported_archive(capsys, sqs, queues, archive, 3)

    result = import_(capsys, queues, str(archive), "--to", "main", "--reset-count")

    assert result.code == 0, result
    for copy in drain(sqs, queues.main):
        names = set(copy["MessageAttributes"])
        # The count gone, the rest kept, the import's tag added (follow/).
        assert names == {PARK_REASON, "blob", FOLLOW_ATTRIBUTE}
        tag = copy["MessageAttributes"][FOLLOW_ATTRIBUTE]["StringValue"]
        assert tag.startswith(f"{result.json()['action_id']}/")


def test_reset_count_uses_the_count_attribute_named(
    capsys: pytest.CaptureFixture[str], sqs: SQSClient, queues: Queues, tmp_path: Path
) -> None:
    park(sqs, queues.operator, ["m"], extra={"orders-replays": string("2", "Number")})
    archive = tmp_path / "parked.jsonl"
    assert export(capsys, queues, "operator", "--file", str(archive), "--delete").code == 0

    result = import_(
        capsys,
        queues,
        str(archive),
        "--to",
        "operator",
        "--reset-count",
        "--count-attribute",
        "orders-replays",
    )

    assert result.code == 0, result
    [copy] = drain(sqs, queues.operator)
    assert set(copy["MessageAttributes"]) == {PARK_REASON, COUNT, FOLLOW_ATTRIBUTE}


def test_malformed_lines_are_failed_records_with_their_line_numbers(
    capsys: pytest.CaptureFixture[str], sqs: SQSClient, queues: Queues, tmp_path: Path
) -> None:
    good = {"format": "dlq-replay/1", "message_id": "m-1", "body": "ok", "attributes": {}}
    bad_binary = {
        **good,
        "message_id": "m-2",
        "attributes": {"b": {"DataType": "Binary", "BinaryValue": "not base64!"}},
    }
    archive = tmp_path / "edited.jsonl"
    archive.write_bytes(
        "\n".join(
            [
                json.dumps(good),
                "{not json",
                "",
                json.dumps({**good, "message_id": "m-3", "format": "other/9"}),
                json.dumps(bad_binary),
                json.dumps({**good, "message_id": "m-4", "body": None}),
                json.dumps(good),  # the same message id again
            ]
        ).encode()
        + b"\n\xff\xfe\n"
    )

    result = import_(capsys, queues, str(archive), "--to", "main")

    assert result.code == 1
    assert "Traceback" not in result.err
    tally = result.json()
    assert (tally["read"], tally["sent"], tally["skipped"], tally["failed"]) == (7, 1, 1, 5)
    assert tally["adds_up"]
    reasons = {f["line"]: f["reason"] for f in tally["failures"]}
    assert set(reasons) == {2, 4, 5, 6, 8}
    assert reasons[2].startswith("not JSON")
    assert "dlq-replay/1" in reasons[4]
    assert "base64" in reasons[5]
    assert "body" in reasons[6]
    assert reasons[8].startswith("not UTF-8")
    assert [m["Body"] for m in drain(sqs, queues.main)] == ["ok"]

    human = run_cli(capsys, "import", *queues.options(), str(archive), "--to", "main")
    assert human.code == 1
    assert "failed: line 2: not JSON" in human.out


def test_import_to_source_sends_each_record_to_the_queue_it_names(
    capsys: pytest.CaptureFixture[str], sqs: SQSClient, queues: Queues, tmp_path: Path
) -> None:
    payments = make_queues(sqs, "payments")
    gone = queue_arn(sqs, queues.main).replace("orders-main", "deleted-queue")

    def line(message_id: str, source: str | None) -> str:
        record = {"format": "dlq-replay/1", "message_id": message_id, "body": message_id}
        return json.dumps(record | ({"source_arn": source} if source else {}))

    archive = tmp_path / "edited.jsonl"
    archive.write_text(
        "\n".join(
            [
                line("to-orders", queue_arn(sqs, queues.main)),
                line("to-payments", queue_arn(sqs, payments.main)),
                line("no-source", None),
                line("source-gone", gone),
            ]
        )
    )

    result = import_(capsys, queues, str(archive), "--to", "source")

    assert result.code == 1, result
    tally = result.json()
    assert (tally["read"], tally["sent"], tally["failed"], tally["destination"]) == (
        4,
        2,
        2,
        "source",
    )
    assert [(f["line"], f["reason"]) for f in tally["failures"]] == [
        (3, "no-source-queue: the record names no source queue"),
        (4, "no-source-queue: not found"),
    ]
    assert [m["Body"] for m in drain(sqs, queues.main)] == ["to-orders"]
    assert [m["Body"] for m in drain(sqs, payments.main)] == ["to-payments"]


@pytest.mark.localstack_only(reason="moto does not set DeadLetterQueueSourceArn")
def test_a_dead_lettered_message_goes_back_to_its_source_queue(
    capsys: pytest.CaptureFixture[str], sqs: SQSClient, tmp_path: Path
) -> None:
    queues = make_queues(sqs, "shared", main_max_receive_count=1)
    sqs.send_message(QueueUrl=queues.main, MessageBody="failed once")
    sqs.receive_message(QueueUrl=queues.main, VisibilityTimeout=0)
    sqs.receive_message(QueueUrl=queues.main, WaitTimeSeconds=1)  # SQS dead-letters it here
    archive = tmp_path / "dlq.jsonl"

    exported = export(capsys, queues, "dlq", "--file", str(archive), "--delete")

    assert exported.code == 0, exported
    [record] = records(archive)
    assert record["source_arn"] == queue_arn(sqs, queues.main)
    imported = import_(capsys, queues, str(archive), "--to", "source")
    assert imported.code == 0, imported
    assert [m["Body"] for m in drain(sqs, queues.main)] == ["failed once"]


def test_export_needs_a_file_or_an_s3_uri(
    capsys: pytest.CaptureFixture[str], queues: Queues
) -> None:
    assert_one_line_error(export(capsys, queues, "operator"), 2, "--file")
    assert_one_line_error(
        export(capsys, queues, "operator", "--s3-uri", "s3://bucket"), 2, "s3://BUCKET/KEY"
    )
