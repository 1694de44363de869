"""The attribute that ties a moved copy to its move: `dlq-replay-action`, a String
`<audit action id>/<message id moved>`. The replay copies it, so a second return still counts.
What arrives on a DLQ was written by anybody: the value is parsed strictly.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import NamedTuple

from dlq_replay.core.attributes import INTERNAL_ATTRIBUTE_PREFIX, Attribute

FOLLOW_ATTRIBUTE = f"{INTERNAL_ATTRIBUTE_PREFIX}action"
# The audit's ids are 32 hex digits; a little room for other uuid-like spellings.
_ACTION_ID = re.compile(r"[A-Za-z0-9_-]{1,64}")
# SQS message ids are uuids (at most 100 characters); printable ASCII, no space.
_KEY = re.compile(r"[!-~]{1,128}")


class FollowTag(NamedTuple):
    """(A NamedTuple: a dataclass costs the Lambda's cold start ~0.6 ms.)"""

    action_id: str
    key: str


def valid_action_id(action_id: str) -> bool:
    return _ACTION_ID.fullmatch(action_id) is not None


def follow_value(action_id: str, key: str) -> str:
    """The attribute's value; ValueError for an id or key a tag cannot carry (every value
    written parses back)."""
    if not valid_action_id(action_id):
        raise ValueError(f"not an action id for {FOLLOW_ATTRIBUTE}: {action_id!r}")
    if _KEY.fullmatch(key) is None:
        raise ValueError(f"not a message key for {FOLLOW_ATTRIBUTE}: {key!r}")
    return f"{action_id}/{key}"


def parse_follow_value(text: str) -> FollowTag | None:
    """The tag a value carries, or None for anything malformed (never raises)."""
    if not isinstance(text, str):
        return None
    action_id, slash, key = text.partition("/")
    if not slash or not valid_action_id(action_id) or _KEY.fullmatch(key) is None:
        return None
    return FollowTag(action_id, key)


def read_tag(values: Mapping[str, Attribute]) -> FollowTag | None:
    """The tag of a record's attributes (a String, custom suffixes too), else None."""
    found = values.get(FOLLOW_ATTRIBUTE)
    if found is None or found.base_type != "String" or found.string_value is None:
        return None
    return parse_follow_value(found.string_value)
