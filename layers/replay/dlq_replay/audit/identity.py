"""Who the caller is, as STS reports it. An identity that cannot be read (an emulator without
STS, a network hiccup) is recorded as unknown with the reason rather than blocking an operator
in the middle of an incident: the credentials still authorise the action.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from botocore.exceptions import BotoCoreError, ClientError

if TYPE_CHECKING:
    from mypy_boto3_sts import STSClient

UNKNOWN = "unknown"


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
        data: dict[str, Any] = {"arn": self.arn, "account": self.account, "user_id": self.user_id}
        if self.unknown_because is not None:
            data["unknown_because"] = self.unknown_because
        return data

    @classmethod
    def from_json(cls, data: Any) -> Identity:
        if not isinstance(data, dict):
            return cls.unknown("not recorded")
        because = data.get("unknown_because")
        return cls(
            str(data.get("arn", UNKNOWN)),
            str(data.get("account", UNKNOWN)),
            str(data.get("user_id", UNKNOWN)),
            None if because is None else str(because),
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
