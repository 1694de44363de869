"""Operator moves followed (docs/operator-audit.md): every copy a client-side `redrive` or an
`import` sends carries `dlq-replay-action` = `<action id>/<moved message id>` where a slot is
free (else it is counted untracked), the command prints and `--json` gives its action id, and
the move's follow record beside the audit trail holds what was sent and the settle window of
the queue the copies went to. A dry run sends nothing and records nothing."""

from __future__ import annotations

import json
import os
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from dlq_replay.follow.journal import FileFollowStore, default_follow_path
from dlq_replay.follow.moves import MoveFollow
from dlq_replay.follow.tag import FOLLOW_ATTRIBUTE
from dlq_replay.ops.receiving import drain

from .support import COUNT, PARK_REASON, Queues, park, run_cli, string

if TYPE_CHECKING:
    from mypy_boto3_sqs import SQSClient
    from mypy_boto3_sqs.type_defs import MessageAttributeValueTypeDef

pytestmark = pytest.mark.emulator

FAST = ("--wait-seconds", "0")
CLIENT = ("--client-side", *FAST)  # the operator queue is a DLQ: else SQS's own move


def follow_record(action_id: str) -> MoveFollow:
    """The move as the local trail's follow file holds it (no table: beside the audit file)."""
    move = FileFollowStore(default_follow_path()).follow(action_id)
    assert move is not None, f"no follow record of {action_id}"
    return move


def tag_of(message: Any) -> str | None:
    value = message.get("MessageAttributes", {}).get(FOLLOW_ATTRIBUTE)
    return None if value is None else str(value["StringValue"])


def configure(sqs: SQSClient, url: str, **attributes: str) -> None:
    sqs.set_queue_attributes(QueueUrl=url, Attributes=attributes)  # type: ignore[arg-type]


def test_a_redrive_tags_each_copy_with_its_action_and_records_what_it_sent(
    capsys: pytest.CaptureFixture[str], sqs: SQSClient, queues: Queues
) -> None:
    # The destination's window: (maxReceiveCount 3 (make_queues) + 1) x 45 s + 20 s, no delay.
    configure(sqs, queues.main, VisibilityTimeout="45")
    ids = park(sqs, queues.operator, [f"order-{i}" for i in range(23)])

    result = run_cli(capsys, "redrive", *queues.options(), *CLIENT, "--json")

    assert result.code == 0, result
    action_id = result.json()["action_id"]
    assert len(action_id) == 32
    copies = drain(sqs, queues.main)
    assert sorted(tag_of(m) or "" for m in copies) == sorted(f"{action_id}/{i}" for i in ids)
    move = follow_record(action_id)
    assert (move.sent, move.untracked, move.returned) == (23, 0, 0)
    assert move.window_seconds == 4 * 45 + 20
    assert move.command == "redrive"
    assert move.started_at is not None
    assert move.sent_at is not None
    assert move.sent_at >= move.started_at
    assert move.to_json(move.sent_at)["settled_at"] is None  # its window has just begun


def test_the_human_output_says_how_to_follow_the_move(
    capsys: pytest.CaptureFixture[str], sqs: SQSClient, queues: Queues
) -> None:
    (moved,) = park(sqs, queues.operator, ["a"])

    result = run_cli(capsys, "redrive", *queues.options(), *CLIENT)

    assert result.code == 0, result
    (line,) = [line for line in result.out.splitlines() if "action" in line]
    action_id = line.split()[3].rstrip(":")
    assert line == f"followed as action {action_id}: dlq-replay audit --follow {action_id}"
    assert tag_of(drain(sqs, queues.main)[0]) == f"{action_id}/{moved}"


def test_a_copy_with_no_free_slot_is_sent_untagged_and_counted_untracked(
    capsys: pytest.CaptureFixture[str], sqs: SQSClient, queues: Queues
) -> None:
    full: dict[str, MessageAttributeValueTypeDef] = {f"a{i}": string(str(i)) for i in range(9)}
    # 9 and the count: SQS's 10, so no slot is left for the tag.
    (crowded,) = park(sqs, queues.operator, ["crowded"], reason=None, extra=full)
    (roomy,) = park(sqs, queues.operator, ["roomy"], extra={"a0": string("0")})

    result = run_cli(capsys, "redrive", *queues.options(), *CLIENT, "--json")

    assert result.code == 0, result
    action_id = result.json()["action_id"]
    by_body = {m["Body"]: m for m in drain(sqs, queues.main)}
    # All 10 are carried, the copy neither refused nor cut: it is only not followed.
    assert set(by_body["crowded"]["MessageAttributes"]) == {*full, COUNT}
    assert tag_of(by_body["crowded"]) is None
    assert tag_of(by_body["roomy"]) == f"{action_id}/{roomy}"
    move = follow_record(action_id)
    assert (move.sent, move.untracked) == (1, 1)
    assert crowded != roomy


def test_an_older_move_s_tag_is_replaced_by_this_move_s(
    capsys: pytest.CaptureFixture[str], sqs: SQSClient, queues: Queues
) -> None:
    older = {FOLLOW_ATTRIBUTE: string("0" * 32 + "/an-older-key"), "tenant": string("acme")}
    (moved,) = park(sqs, queues.operator, ["again"], extra=older)

    result = run_cli(capsys, "redrive", *queues.options(), *CLIENT, "--json")

    assert result.code == 0, result
    (copy,) = drain(sqs, queues.main)
    assert tag_of(copy) == f"{result.json()['action_id']}/{moved}"
    assert set(copy["MessageAttributes"]) == {FOLLOW_ATTRIBUTE, "tenant", COUNT}
    assert follow_record(result.json()["action_id"]).sent == 1


def test_keep_tags_the_copies_and_leaves_the_originals_as_they_were(
    capsys: pytest.CaptureFixture[str], sqs: SQSClient, queues: Queues
) -> None:
    ids = park(sqs, queues.operator, ["x", "y", "z"])

    result = run_cli(capsys, "redrive", *queues.options(), *CLIENT, "--keep", "--json")

    assert result.code == 0, result
    action_id = result.json()["action_id"]
    originals = drain(sqs, queues.operator)
    assert sorted(m["MessageId"] for m in originals) == sorted(ids)
    assert all(tag_of(m) is None and PARK_REASON in m["MessageAttributes"] for m in originals)
    copies = drain(sqs, queues.main)
    assert sorted(tag_of(m) or "" for m in copies) == sorted(f"{action_id}/{i}" for i in ids)
    assert follow_record(action_id).sent == 3


def test_reset_count_and_the_tag_are_orthogonal(
    capsys: pytest.CaptureFixture[str], sqs: SQSClient, queues: Queues
) -> None:
    (moved,) = park(sqs, queues.operator, ["fresh"], extra={"tenant": string("acme")})

    result = run_cli(capsys, "redrive", *queues.options(), *CLIENT, "--reset-count", "--json")

    assert result.code == 0, result
    (copy,) = drain(sqs, queues.main)
    assert set(copy["MessageAttributes"]) == {"tenant", FOLLOW_ATTRIBUTE}
    assert tag_of(copy) == f"{result.json()['action_id']}/{moved}"


def test_a_dry_run_tags_nothing_and_records_no_follow(
    capsys: pytest.CaptureFixture[str], sqs: SQSClient, queues: Queues
) -> None:
    park(sqs, queues.operator, ["a", "b"])

    result = run_cli(capsys, "redrive", *queues.options(), *CLIENT, "--dry-run", "--json")

    assert result.code == 0, result
    assert "action_id" not in result.json()
    assert not default_follow_path().exists()
    human = run_cli(capsys, "redrive", *queues.options(), *CLIENT, "--dry-run")
    assert "action" not in human.out
    assert [tag_of(m) for m in drain(sqs, queues.operator)] == [None, None]


def test_an_import_tags_each_record_with_its_archived_message_id(
    capsys: pytest.CaptureFixture[str], sqs: SQSClient, queues: Queues, tmp_path: Path
) -> None:
    configure(sqs, queues.main, VisibilityTimeout="20")
    ids = park(sqs, queues.operator, ["p", "q", "r"], extra={"tenant": string("acme")})
    archive = tmp_path / "parked.jsonl"
    exported = run_cli(
        capsys, "export", "operator", *queues.options(), "--file", str(archive), *FAST
    )
    assert exported.code == 0, exported
    drain(sqs, queues.operator)

    result = run_cli(capsys, "import", *queues.options(), str(archive), "--to", "main", "--json")

    assert result.code == 0, result
    action_id = result.json()["action_id"]
    copies = drain(sqs, queues.main)
    assert sorted(tag_of(m) or "" for m in copies) == sorted(f"{action_id}/{i}" for i in ids)
    for copy in copies:  # the archived attributes, all carried, the tag beside them
        assert set(copy["MessageAttributes"]) == {"tenant", COUNT, PARK_REASON, FOLLOW_ATTRIBUTE}
    move = follow_record(action_id)
    assert (move.sent, move.untracked, move.command) == (3, 0, "import")
    assert move.window_seconds == 4 * 20 + 20  # make_queues: maxReceiveCount 3; no delay
    human = run_cli(capsys, "import", *queues.options(), str(archive), "--to", "main")
    assert "followed as action " in human.out  # a rerun (everything skipped) is a move too


def test_the_audit_end_record_and_the_follow_file_sit_side_by_side(
    capsys: pytest.CaptureFixture[str], sqs: SQSClient, queues: Queues
) -> None:
    park(sqs, queues.operator, ["a", "b"])

    result = run_cli(capsys, "redrive", *queues.options(), *CLIENT, "--json")

    assert result.code == 0, result
    folder = Path(os.environ["XDG_STATE_HOME"]) / "dlq-replay"
    ends = [
        json.loads(line)
        for line in (folder / "audit.jsonl").read_text().splitlines()
        if json.loads(line)["phase"] == "end"
    ]
    (end,) = ends
    assert end["action_id"] == result.json()["action_id"]
    kinds = Counter(
        json.loads(line)["kind"] for line in (folder / "follow.jsonl").read_text().splitlines()
    )
    # Aggregated: one start, the counts once (a quick move), one end; never one per message.
    assert kinds == Counter({"started": 1, "sent": 1, "finished": 1})
