"""Where the trail is kept: the stack's DynamoDB table or, with no table to name, a JSON Lines
file on this machine. In the table each record is an item written once (append-only: PutItem
and Query only) in the partition `pk = audit`, sorted by `sk = <start>#<action id>#<phase>`:
one descending Query lists the newest first, each end beside its begin. No `expires_at`."""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from dlq_replay.audit.model import AuditAction, AuditRecord, pair_records
from dlq_replay.targets.dynamo_items import from_item, to_item

if TYPE_CHECKING:
    from dlq_replay.follow.moves import FollowStore

PARTITION = "audit"
# The keys of the table an operator makes for the trail (docs/operator-audit.md), for create_table.
TABLE_KEYS: dict[str, Any] = {
    "AttributeDefinitions": [
        {"AttributeName": "pk", "AttributeType": "S"},
        {"AttributeName": "sk", "AttributeType": "S"},
    ],
    "KeySchema": [
        {"AttributeName": "pk", "KeyType": "HASH"},
        {"AttributeName": "sk", "KeyType": "RANGE"},
    ],
}
FILE_NAME = "audit.jsonl"


class AuditStore(Protocol):
    where: str  # for people: `DynamoDB table NAME` or the file's path
    shared: bool  # whether the other operators of the stack see it

    def write(self, record: AuditRecord) -> None: ...

    def actions(self, *, since: str | None = None, limit: int = 50) -> list[AuditAction]:
        """The newest `limit` actions started at or after `since` (a `utc_text`), newest first."""
        ...

    def follow_store(self) -> FollowStore:
        """The moves' and the replay's counts beside the trail."""
        ...


def take_actions(records: Iterable[AuditRecord], limit: int) -> list[AuditAction]:
    """The first `limit` actions of newest-first records, reading no further than needed."""
    taken: list[AuditRecord] = []
    seen: set[str] = set()
    for record in records:
        if record.action_id not in seen:
            if len(seen) == limit:
                break
            seen.add(record.action_id)
        taken.append(record)
    return pair_records(taken)


class DynamoAuditStore:
    """The records as items of the stack's table (template.yaml's OutageBreakerTable)."""

    shared = True

    def __init__(self, dynamodb: Any, table: str) -> None:  # a boto3 DynamoDB client
        self.client = dynamodb  # the move's follow record shares it
        self.table = table
        self.where = f"DynamoDB table {table}"

    def write(self, record: AuditRecord) -> None:
        self.client.put_item(
            TableName=self.table,
            Item=to_item(
                {
                    "pk": PARTITION,
                    "sk": record.sort_key,
                    "action_id": record.action_id,
                    "phase": str(record.phase),
                    "command": record.command,
                    "origin": str(record.origin),
                    "caller_arn": record.identity.arn,
                    "at": record.at,
                    # The whole record, as the file store keeps it: one reader for both.
                    "record": json.dumps(record.to_json(), separators=(",", ":")),
                }
            ),
            ConditionExpression="attribute_not_exists(pk)",
        )

    def actions(self, *, since: str | None = None, limit: int = 50) -> list[AuditAction]:
        pages = self.client.get_paginator("query").paginate(
            TableName=self.table,
            KeyConditionExpression="pk = :p" + (" AND sk >= :s" if since else ""),
            ExpressionAttributeValues=to_item({":p": PARTITION} | ({":s": since} if since else {})),
            ScanIndexForward=False,
            Limit=2 * limit + 2,
        )
        items = (item for page in pages for item in page.get("Items", []))
        return take_actions((record for item in items if (record := _parsed(item))), limit)

    def follow_store(self) -> FollowStore:
        from dlq_replay.follow.tables import DynamoFollowStore

        return DynamoFollowStore(self.client, self.table)


class FileAuditStore:
    """One JSON object a line, appended with a single write and synced to disk."""

    shared = False

    def __init__(self, path: Path | None = None) -> None:
        from dlq_replay.follow.journal import default_follow_path

        self.path = path or default_follow_path().with_name(FILE_NAME)  # XDG's place for state
        self.where = str(self.path)

    def write(self, record: AuditRecord) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        line = json.dumps(record.to_json(), separators=(",", ":")) + "\n"
        # O_APPEND and one write: two processes appending at once never interleave a line.
        descriptor = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            os.write(descriptor, line.encode())
            os.fsync(descriptor)
        finally:
            os.close(descriptor)

    def actions(self, *, since: str | None = None, limit: int = 50) -> list[AuditAction]:
        try:
            text = self.path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return []
        records = [record for line in text.splitlines() if (record := _parsed(line))]
        chosen = [r for r in records if since is None or r.sort_key >= since]
        chosen.sort(key=lambda record: record.sort_key, reverse=True)
        return take_actions(chosen, limit)

    def follow_store(self) -> FollowStore:
        """The follow-up's file beside the trail's (the worker's, both in their default place)."""
        from dlq_replay.follow.journal import FILE_NAME as FOLLOW_FILE
        from dlq_replay.follow.journal import FileFollowStore

        return FileFollowStore(self.path.with_name(FOLLOW_FILE))


def _parsed(stored: Any) -> AuditRecord | None:
    """A stored record (a line, or an item whose `record` is one), or None for what is not one:
    a torn last line, a foreign item."""
    try:
        text = (
            from_item({"record": stored["record"]})["record"]
            if isinstance(stored, dict)
            else stored
        )
        data = json.loads(text)
        return AuditRecord.from_json(data) if isinstance(data, dict) else None
    except (ValueError, KeyError, TypeError, AttributeError):
        return None
