"""`dlq-replay worker`'s side of following: the same recovery counts and returns the Lambda
writes (follow/replay_side.py), in the stack's table when it has one, else in this machine's
file (follow/journal.py, which the Lambda never loads: it is not in the layer).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dlq_replay.core.log import Log
from dlq_replay.core.settings import Settings
from dlq_replay.follow.journal import FileFollowStore, FileRecoveryStore, default_follow_path
from dlq_replay.follow.moves import FollowStore, FollowThreshold
from dlq_replay.follow.recovery import RecoveryStore
from dlq_replay.follow.replay_side import ReplayFollow, sns_publisher, table_stores, threshold_of

if TYPE_CHECKING:
    from dlq_replay.notify.sns import SnsClient


def file_stores(
    threshold: FollowThreshold, path: Path | None = None
) -> Callable[[], tuple[RecoveryStore, FollowStore]]:
    """The local file's stores (`path`, default `default_follow_path()`), without a table."""

    def make() -> tuple[RecoveryStore, FollowStore]:
        return FileRecoveryStore(path), FileFollowStore(path, threshold=threshold)

    return make


def worker_follow(
    settings: Settings,
    *,
    table: str | None,
    dynamodb: Callable[[], Any],
    sns: Callable[[], SnsClient] | None,
    logger: Log,
    path: Path | None = None,
) -> tuple[ReplayFollow, str]:
    """`dlq-replay worker`'s follow-up: the table's stores (the same counts the Lambda
    writes), else the local file's; and the one line that says where the counts go."""
    threshold = threshold_of(settings)
    topic = settings.follow_notice_topic_arn
    publish = sns_publisher(functools.cache(sns), topic) if topic and sns is not None else None
    if table:
        stores = table_stores(dynamodb, table, threshold)
        where = f"follow: recovery counts and returns go to the table {table}"
    else:
        file = path or default_follow_path()
        stores = file_stores(threshold, file)
        where = (
            f"follow: recovery counts and returns go to {file}, which no other operator sees "
            "(pass --stack NAME or --audit-table NAME)"
        )
    follow = ReplayFollow(
        stores, count_attribute=settings.count_attribute, logger=logger, publish=publish
    )
    return follow, where
