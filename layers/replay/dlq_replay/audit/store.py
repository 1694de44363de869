"""Where the trail is kept: the stack's DynamoDB table (shared by every operator of the stack,
durable) or, with no table to name, a JSON Lines file on this machine.

In the table every record is its own item, written once (PutItem, never overwritten:
`attribute_not_exists`), so the trail is append-only and an operator needs only PutItem and
Query. All records share one partition, `pk = audit`, sorted by `sk = <start time>#<action
id>#<phase>`: one Query in descending order lists the newest actions first, `--since` is a
range condition on the same key, and an action's end sorts beside its begin. One partition is
enough: operators write a few records an hour, far below a partition's 1,000 writes a second,
and a table without local secondary indexes has no size limit per partition key. The items
carry no `expires_at`, so the table's TTL never removes them.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any, Protocol

from dlq_replay.audit.model import AuditAction, AuditRecord, pair_records
from dlq_replay.targets.dynamo_items import from_item, to_item

PARTITION = "audit"
# The keys of the table an operator makes for the trail (docs/operator-audit.md): `pk` and
# `sk`, both strings; for create_table, with the table's name and billing.
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
    """Somewhere records are appended and listed newest first."""

    @property
    def where(self) -> str:
        """For people: `DynamoDB table NAME` or the file's path."""
        ...

    @property
    def shared(self) -> bool:
        """Whether the other operators of the stack see it."""
        ...

    def write(self, record: AuditRecord) -> None:
        """Append one record (raises the store's own error when it cannot)."""
        ...

    def actions(self, *, since: str | None = None, limit: int = 50) -> list[AuditAction]:
        """The newest `limit` actions started at or after `since` (a `utc_text`), newest first."""
        ...


def take_actions(records: Iterable[AuditRecord], limit: int) -> list[AuditAction]:
    """The first `limit` actions of newest-first records, reading no further than needed:
    once a `limit + 1`th action shows up, the first `limit` are whole (begin and end are
    neighbours in the order)."""
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

    def __init__(self, dynamodb: Any, table: str) -> None:  # a boto3 DynamoDB client
        self._dynamodb = dynamodb
        self.table = table

    @property
    def where(self) -> str:
        return f"DynamoDB table {self.table}"

    @property
    def shared(self) -> bool:
        return True

    def write(self, record: AuditRecord) -> None:
        self._dynamodb.put_item(
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
        return take_actions(self._records(since, page=2 * limit + 2), limit)

    def _records(self, since: str | None, page: int) -> Iterator[AuditRecord]:
        condition = "pk = :p" + (" AND sk >= :s" if since else "")
        values = to_item({":p": PARTITION} | ({":s": since} if since else {}))
        query: dict[str, Any] = {
            "TableName": self.table,
            "KeyConditionExpression": condition,
            "ExpressionAttributeValues": values,
            "ScanIndexForward": False,
            "Limit": page,
        }
        while True:
            found = self._dynamodb.query(**query)
            for item in found.get("Items", []):
                record = _parsed(_record_text(item))
                if record is not None:
                    yield record
            last = found.get("LastEvaluatedKey")
            if not last:
                return
            query["ExclusiveStartKey"] = last


def default_file_path() -> Path:
    """`$XDG_STATE_HOME/dlq-replay/audit.jsonl` (XDG's place for state: `~/.local/state`)."""
    state = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(state) / "dlq-replay" / FILE_NAME


class FileAuditStore:
    """One JSON object a line, appended with a single write and synced to disk: the fallback
    when no table is named. It survives the process, not the machine, and no other operator
    sees it."""

    def __init__(self, path: Path | None = None) -> None:
        self.path = path or default_file_path()

    @property
    def where(self) -> str:
        return str(self.path)

    @property
    def shared(self) -> bool:
        return False

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


def _record_text(item: dict[str, Any]) -> str:
    """An item's whole record, or "" for an item that holds none (a foreign one)."""
    try:
        text = from_item({"record": item["record"]})["record"]
    except (KeyError, TypeError, AttributeError):
        return ""
    return text if isinstance(text, str) else ""


def _parsed(text: str) -> AuditRecord | None:
    """A stored record, or None for what is not one (a torn last line, a foreign item)."""
    try:
        data = json.loads(text)
        return AuditRecord.from_json(data) if isinstance(data, dict) else None
    except (ValueError, KeyError, TypeError):
        return None
