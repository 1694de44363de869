"""A queue read once into a local SQLite database, which the console's filters and charts query:
a large queue costs one read, not one per page, filter or chart.

Reading is `dlq-replay export` without `--delete` (`ops.export.Export`), within the receive
budget and through the receive memory; a read that ends before the queue does says so
(`partial`: why, `expected`: how many the queue held before). The archive is loaded in chunks,
so a large one never sits in memory whole.
"""

from __future__ import annotations

import itertools
import json
import re
import sqlite3
import threading
import time
from collections.abc import Sequence
from contextlib import closing
from dataclasses import dataclass, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dlq_replay.core.decision import park_reason_of
from dlq_replay.core.kinds import RecordKind
from dlq_replay.ops.archive import ArchiveRecord, parse_line
from dlq_replay.ops.export import Export, ExportRequest, ExportResult
from dlq_replay.ops.opserror import OpsError
from dlq_replay.ops.queueinfo import QueueInfo
from dlq_replay.ops.receivememory import ReceiveMemory
from dlq_replay.ops.receiving import ALL_KINDS
from dlq_replay.ops.select import NO_REASON, parse_duration

if TYPE_CHECKING:
    from mypy_boto3_sqs import SQSClient
    from mypy_boto3_sqs.type_defs import MessageTypeDef

# How long the read keeps what it received hidden, at most (made visible at once when done).
HIDE_SECONDS = 300
READ_RESERVE = 1  # receives a read leaves every message before its maxReceiveCount
PAGE_SIZE = 50
LOAD_CHUNK = 2000  # archive lines parsed and inserted at a time
# The age histogram's buckets: upper bounds in seconds.
AGE_BUCKETS = (
    (60, "< 1m"),
    (600, "1-10m"),
    (3600, "10m-1h"),
    (6 * 3600, "1-6h"),
    (86400, "6h-1d"),
    (4 * 86400, "1-4d"),
    (None, "> 4d"),
)

_SCHEMA = """
CREATE TABLE messages (
    id TEXT PRIMARY KEY, body TEXT NOT NULL, attributes TEXT NOT NULL, sent_ms INTEGER,
    receive_count INTEGER, source_arn TEXT, kind TEXT NOT NULL, target TEXT, error TEXT,
    reason TEXT NOT NULL, group_id TEXT, line TEXT NOT NULL
);
"""
_INDEXES = """
CREATE INDEX by_reason ON messages (reason);
CREATE INDEX by_kind ON messages (kind);
CREATE INDEX by_sent ON messages (sent_ms);
"""


@dataclass(frozen=True, slots=True)
class Filter:
    """The queue page's filters; every given one must hold (text: a substring of the body,
    error: of the service's error; ages: durations such as 90s, 15m, 2h, 3d)."""

    reason: str = ""
    kind: str = ""
    target: str = ""
    error: str = ""
    text: str = ""
    older_than: str = ""
    newer_than: str = ""

    @classmethod
    def from_form(cls, form: Any) -> Filter:
        return cls(**{name: str(form.get(name, "")).strip()[:500] for name in _FIELDS})

    def query(self) -> dict[str, str]:
        return {name: getattr(self, name) for name in _FIELDS if getattr(self, name)}

    def where(self, now: float) -> tuple[str, list[Any]]:
        """The SQL condition and its parameters; ValueError for an age that is no duration."""
        given = self.query()
        params = [
            (now - parse_duration(value)) * 1000 if name.endswith("_than") else value
            for name, value in given.items()
        ]
        return " AND ".join(_CONDITIONS[name] for name in given) or "1", params


# Each filter's SQL condition, in the order the condition lists them.
_CONDITIONS = {
    "reason": "reason = ?",
    "kind": "kind = ?",
    "target": "instr(coalesce(target, ''), ?) > 0",
    "error": "instr(coalesce(error, ''), ?) > 0",
    "text": "instr(body, ?) > 0",
    "older_than": "sent_ms <= ?",
    "newer_than": "sent_ms >= ?",
}
_FIELDS = tuple(_CONDITIONS)


@dataclass(frozen=True, slots=True)
class Row:
    """One message of the table, as the page shows it."""

    id: str
    body: str
    attributes: dict[str, Any]
    sent_ms: int | None
    receive_count: int | None
    source_arn: str | None
    kind: str
    target: str | None
    error: str | None
    reason: str
    group_id: str | None

    def age(self, now: float) -> float | None:
        return None if self.sent_ms is None else max(0.0, now - self.sent_ms / 1000)

    @property
    def pretty_body(self) -> str:
        """The body, JSON pretty-printed when it is JSON; else (or when it nests deeper than
        the parser goes, which any sender may do within 256 KB) as it is."""
        try:
            return json.dumps(json.loads(self.body), indent=2, ensure_ascii=False)
        except (ValueError, RecursionError):
            return self.body


class Snapshot:
    """One queue's snapshot: read in a thread (`read`), queried from any thread."""

    def __init__(self, folder: Path, queue: QueueInfo) -> None:
        self.queue = queue
        safe = re.sub(r"[^A-Za-z0-9_.-]", "_", queue.name)
        self.path = folder / f"{safe}-{int(time.time() * 1000)}.sqlite"
        self.state = "reading"
        self.error: str | None = None
        self.examined = 0
        self.result: ExportResult | None = None
        self.partial: str | None = None  # why the read did not see the whole queue
        self.expected: int | None = None  # messages in the queue before the read
        self.finished: float | None = None
        self.stop = threading.Event()
        self._lock = threading.Lock()

    @property
    def ready(self) -> bool:
        return self.state == "ready"

    def read(
        self,
        sqs: SQSClient,
        replay_targets: frozenset[str],
        accepted_kinds: frozenset[RecordKind] = ALL_KINDS,
        memory: ReceiveMemory | None = None,
        wait_seconds: int = 1,
    ) -> None:
        """Read the queue (ops.export to a file of ours, no delete), then load it."""
        archive = self.path.with_suffix(".jsonl")
        request = ExportRequest(
            source=self.queue,
            path=archive,
            hide_seconds=HIDE_SECONDS,
            wait_seconds=wait_seconds,
            reserve=READ_RESERVE,
            replay_targets=replay_targets,
            accepted_kinds=accepted_kinds,
        )

        def progress(result: ExportResult) -> None:
            self.examined = result.examined

        # The archive loads while the read gives the messages back (both mostly wait).
        loading: list[BaseException] = []
        loader = threading.Thread(target=self._load, args=(archive, loading), name="load")
        try:
            job = Export(sqs, request, stop=self.stop, memory=memory)
            self.expected = job.expected
            self.result = job.run(progress, on_archived=loader.start)
            self.examined, self.partial = self.result.examined, self.result.partial
            loader.join()
            if loading:
                raise loading[0]
            self.state = "ready"
        except Exception as error:  # shown on the page, one line
            self.state = "failed"
            text = " ".join(str(error).split())
            self.error = text if isinstance(error, OpsError) else f"{type(error).__name__}: {text}"
        finally:
            if loader.ident is not None:
                loader.join()
            archive.unlink(missing_ok=True)
            self.finished = time.time()

    def _load(self, archive: Path, failed: list[BaseException] | None = None) -> None:
        """The archive into the database in chunks, indexed after; errors go to `failed`, if any."""
        with closing(sqlite3.connect(self.path)) as db:
            try:
                db.executescript(_SCHEMA)
                with archive.open(encoding="utf-8", newline="") as lines:
                    rows = (_row_of(line) for line in lines if line.strip())
                    while chunk := list(itertools.islice(rows, LOAD_CHUNK)):
                        db.executemany(
                            "INSERT OR REPLACE INTO messages VALUES (?,?,?,?,?,?,?,?,?,?,?,?)",
                            chunk,
                        )
                db.executescript(_INDEXES)
                db.commit()
            except Exception as error:
                if failed is None:
                    raise
                failed.append(error)

    def _query(self, sql: str, params: Sequence[Any] = ()) -> list[Any]:
        with self._lock, closing(sqlite3.connect(self.path)) as db:
            return db.execute(sql, params).fetchall()

    def _select(
        self, columns: str, selected: Filter, now: float, rest: str = "", *more: Any
    ) -> list[Any]:
        """The messages the filter chooses; `more`: the parameters of `rest`."""
        where, params = selected.where(now)
        sql = f"SELECT {columns} FROM messages WHERE {where} {rest}"  # noqa: S608
        return self._query(sql, [*params, *more])

    def count(self, selected: Filter, now: float) -> int:
        return int(self._select("count(*)", selected, now)[0][0])

    def rows(self, selected: Filter, now: float, page: int = 0) -> list[Row]:
        found = self._select(
            ", ".join(field.name for field in fields(Row)),
            selected,
            now,
            "ORDER BY sent_ms, id LIMIT ? OFFSET ?",
            PAGE_SIZE,
            page * PAGE_SIZE,
        )
        return [Row(r[0], r[1], json.loads(r[2]), *r[3:]) for r in found]

    def ids(self, selected: Filter, now: float) -> list[str]:
        return [r[0] for r in self._select("id", selected, now)]

    def groups(self, column: str, selected: Filter, now: float) -> list[tuple[str, int]]:
        """Messages by `column` (reason, kind, target), most first."""
        if column not in {"reason", "kind", "target"}:
            raise ValueError(column)
        found = self._select(
            f"coalesce({column}, '-'), count(*)",
            selected,
            now,
            "GROUP BY 1 ORDER BY 2 DESC, 1 LIMIT 12",
        )
        return [(str(value), int(n)) for value, n in found]

    def ages(self, selected: Filter, now: float) -> list[tuple[str, int]]:
        """The age histogram (AGE_BUCKETS), by SentTimestamp."""
        counts = [0] * len(AGE_BUCKETS)
        for (sent,) in self._select("sent_ms", selected, now, "AND sent_ms IS NOT NULL"):
            age = now - sent / 1000
            index = next(i for i, (top, _) in enumerate(AGE_BUCKETS) if top is None or age < top)
            counts[index] += 1
        return [(label, counts[i]) for i, (_, label) in enumerate(AGE_BUCKETS)]

    def oldest_age(self, now: float) -> float | None:
        found = self._query("SELECT min(sent_ms) FROM messages")[0][0]
        return None if found is None else max(0.0, now - found / 1000)

    def messages(self, ids: Sequence[str]) -> list[MessageTypeDef]:
        """The snapshot's messages as SQS returned them (for `ops.plan_copy`)."""
        chosen = set(ids)
        found = self._query("SELECT id, line FROM messages")
        return [message_of(parse_line(line)) for message_id, line in found if message_id in chosen]


def _row_of(line: str) -> tuple[Any, ...]:
    """One archive line (a record as `export` wrote it) as a row of the table."""
    record = parse_line(line)
    shown = record.to_dict()["attributes"]
    code, text = record.error_code, record.error_message
    error = f"{code}: {text}" if code and text and text != code else code or text or None
    return (
        record.message_id,
        record.body,
        json.dumps(shown, ensure_ascii=False),
        record.sent_timestamp,
        record.receive_count,
        record.source_arn,
        record.kind or "sqs",
        record.target_arn,
        error,
        park_reason_of(record.body, record.attributes) or NO_REASON,
        record.message_group_id,
        line.rstrip("\n"),
    )


def message_of(record: ArchiveRecord) -> MessageTypeDef:
    """An archive record as boto3's ReceiveMessage returns the message."""
    attributes = {name: value.to_sqs() for name, value in record.attributes.items()}
    sent = record.sent_timestamp
    system = {
        "DeadLetterQueueSourceArn": record.source_arn,
        "MessageGroupId": record.message_group_id,
        "MessageDeduplicationId": record.message_deduplication_id,
        "AWSTraceHeader": record.aws_trace_header,
        "SentTimestamp": None if sent is None else str(sent),
        "ApproximateReceiveCount": str(record.receive_count or 1),
    }
    message: Any = {
        "MessageId": record.message_id,
        "ReceiptHandle": "",
        "Body": record.body,
        "MessageAttributes": attributes,
        "Attributes": {key: value for key, value in system.items() if value is not None},
    }
    return message  # type: ignore[no-any-return]
