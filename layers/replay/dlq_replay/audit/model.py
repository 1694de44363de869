"""The records of the audit trail and their JSON form (what the stores keep), and who the caller
is as STS reports it: an identity that cannot be read is recorded as unknown with the reason
rather than blocking an operator in the middle of an incident."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from enum import StrEnum
from typing import TYPE_CHECKING, Any, TypeVar

from botocore.exceptions import BotoCoreError, ClientError

if TYPE_CHECKING:
    from mypy_boto3_sts import STSClient

UNKNOWN = "unknown"
_T = TypeVar("_T")


@dataclass(frozen=True, slots=True)
class Identity:
    """The caller; `unknown_because` is set (and the rest `unknown`) when STS could not say."""

    arn: str
    account: str
    user_id: str
    unknown_because: str | None = None

    @classmethod
    def unknown(cls, reason: str) -> Identity:
        return cls(UNKNOWN, UNKNOWN, UNKNOWN, reason)

    @property
    def known(self) -> bool:
        return self.unknown_because is None

    def to_json(self) -> dict[str, Any]:
        return _present({name: getattr(self, name) for name in self.__slots__})

    @classmethod
    def from_json(cls, data: Any) -> Identity:
        if not isinstance(data, dict):
            return cls.unknown("not recorded")
        return cls(
            str(data.get("arn", UNKNOWN)),
            str(data.get("account", UNKNOWN)),
            str(data.get("user_id", UNKNOWN)),
            _optional(data, "unknown_because", str),
        )


def caller_identity(sts: STSClient | None) -> Identity:
    """GetCallerIdentity, or an unknown identity with the reason."""
    if sts is None:
        return Identity.unknown("no STS client")
    try:
        found = sts.get_caller_identity()
    except ClientError as error:
        info = error.response.get("Error", {})
        code = info.get("Code") or error.response.get("ResponseMetadata", {}).get(
            "HTTPStatusCode", "?"
        )
        return Identity.unknown(f"GetCallerIdentity failed: {code}")
    except BotoCoreError as error:
        return Identity.unknown(f"GetCallerIdentity failed: {type(error).__name__}")
    return Identity(*(str(found.get(key, UNKNOWN)) for key in ("Arn", "Account", "UserId")))


class AuditPhase(StrEnum):
    BEGIN = "begin"
    END = "end"


class Origin(StrEnum):
    CLI = "cli"
    CONSOLE = "console"


class AuditOutcome(StrEnum):
    OK = "ok"  # exit 0: done as asked
    FAILED = "failed"  # ran, and some of it failed (exit 1): the tally says what
    ERROR = "error"  # stopped by an error before or while it ran
    INTERRUPTED = "interrupted"  # a signal stopped it: the tally says what SQS confirmed


def utc_text(moment: datetime) -> str:
    """An ISO 8601 UTC time of fixed width (microseconds, `Z`): its text sorts as time does."""
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


@dataclass(frozen=True, slots=True)
class AuditRecord:
    """One record. `started_at` is the action's start, `at` when this record was written."""

    action_id: str
    phase: AuditPhase
    started_at: str
    at: str
    command: str
    origin: Origin
    identity: Identity
    request: Mapping[str, Any] = field(default_factory=dict)  # the options as given
    queues: tuple[str, ...] = ()  # the queues it worked on, once resolved (end)
    selection_size: int | None = None  # what the selection held when the work began
    outcome: AuditOutcome | None = None  # end only
    exit_code: int | None = None
    tally: Mapping[str, Any] | None = None
    error: str | None = None
    left: str | None = None  # an interrupted action's leftovers: hidden messages, until when
    abandoned: str | None = None  # why its process exited without waiting for the work

    @property
    def sort_key(self) -> str:
        """Newest first is descending order; the end of an action sorts beside its begin."""
        return f"{self.started_at}#{self.action_id}#{self.phase}"

    def to_json(self) -> dict[str, Any]:
        """Its fields in order, those without a value left out."""
        return _present(
            {name: getattr(self, name) for name in self.__slots__}
            | {
                "identity": self.identity.to_json(),
                "request": dict(self.request),
                "queues": list(self.queues) or None,
                "tally": None if self.tally is None else dict(self.tally),
            }
        )

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> AuditRecord:
        """A stored record; KeyError or ValueError when it is not one."""
        return cls(
            action_id=str(data["action_id"]),
            phase=AuditPhase(data["phase"]),
            started_at=str(data["started_at"]),
            at=str(data["at"]),
            command=str(data["command"]),
            origin=Origin(data["origin"]),
            identity=Identity.from_json(data.get("identity")),
            request=dict(data.get("request") or {}),
            queues=tuple(str(queue) for queue in data.get("queues") or ()),
            selection_size=_optional(data, "selection_size", int),
            outcome=_optional(data, "outcome", AuditOutcome),
            exit_code=_optional(data, "exit_code", int),
            tally=data.get("tally"),
            error=_optional(data, "error", str),
            left=_optional(data, "left", str),
            abandoned=_optional(data, "abandoned", str),
        )


def _optional(data: Mapping[str, Any], key: str, kind: Callable[[Any], _T]) -> _T | None:
    value = data.get(key)
    return None if value is None else kind(value)


def _present(data: dict[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in data.items() if value is not None}


@dataclass(frozen=True, slots=True)
class AuditAction:
    begin: AuditRecord | None
    end: AuditRecord | None

    @property
    def record(self) -> AuditRecord:
        found = self.begin or self.end
        assert found is not None  # pair_records makes none without a record
        return found

    @property
    def outcome_text(self) -> str:
        if self.end is None:
            return "no result recorded (still running, or its process was killed)"
        if self.begin is None:
            return f"{self.end.outcome} (no begin record)"
        return str(self.end.outcome)

    def to_json(self, **read: Any) -> dict[str, Any]:
        """The action for `audit --json`; `read`: what a reader adds (a move's `followed`)."""
        record = self.record
        end = self.end.to_json() if self.end else {}
        ended = ("selection_size", "outcome", "exit_code", "tally", "error", "left", "abandoned")
        return {
            "action_id": record.action_id,
            "started_at": record.started_at,
            "ended_at": end.get("at"),
            "command": record.command,
            "origin": str(record.origin),
            "identity": record.identity.to_json(),
            "request": dict(record.request),
            "queues": end.get("queues", []),
            **{key: end.get(key) for key in ended},
            **read,
        }


def pair_records(records: Iterable[AuditRecord]) -> list[AuditAction]:
    """The actions of newest-first records, newest first (each begin joined to its end)."""
    begins: dict[str, AuditRecord] = {}
    ends: dict[str, AuditRecord] = {}
    order: list[str] = []
    for record in records:
        if record.action_id not in begins and record.action_id not in ends:
            order.append(record.action_id)
        (begins if record.phase is AuditPhase.BEGIN else ends)[record.action_id] = record
    return [AuditAction(begins.get(action), ends.get(action)) for action in order]
