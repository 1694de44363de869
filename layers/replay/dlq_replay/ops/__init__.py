"""The operator"s SQS work, apart from how the CLI shows it (docs/design.md, "Operator tools").

Every function takes boto3 clients (or nothing at all) and returns frozen dataclasses; parsing
options and printing live in `dlq_replay.cli`. Two SQS facts shape it:

* `ReceiveMessage` raises a message"s receive count, and on a queue with a RedrivePolicy that
  count decides when SQS moves the message on (the DLQ"s safety net, the main queue"s DLQ).
  Looking at messages therefore spends a budget (`receiving.ReceiveBudget`) and stops before
  it is gone.
* `StartMessageMoveTask` only takes a queue that is some queue"s DLQ as its source and moves
  messages unchanged (`movetask`); anything else (a rewritten count, a filter, a limit) is a
  client-side move (`redrive`): send the copy, then delete exactly the originals whose copy
  was sent.

One module per concern: `stack` (finding a deployment), `queues`, `depth`, `draining`,
`status`, `pause` (the event source on and off), `receiving`, `kinds` (who wrote a record,
where it goes back to), `peek`, `redrive` (`clientmove`
for its client-side move, `pacing` for its speed and `--until-failing`, `ending` for when it
is done, `preflight` for what it reads first), `movetask`, `plan`, `archive` (the JSON
Lines records of `export` and `import`), `export` (`s3archive` for its S3 side),
`importing`; the public names of those the CLI uses
are re-exported here, each imported when first asked for (PEP 562): a command imports only
the modules it uses (`redrive` none of `export`, `status`, `plan`, `archive`...), 40-50 ms of
its start-up. The functions named as their module (`peek`, `status`, `export`, and
`clientmove.redrive`) are imported from their module: here the name is the module.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from dlq_replay.ops.archive import (
        ArchiveError,
        ArchiveRecord,
    )
    from dlq_replay.ops.breaker import (
        BreakerStatus,
        breaker_status,
        operator_took_over,
    )
    from dlq_replay.ops.clientmove import (
        ClientMove,
        prepare,
    )
    from dlq_replay.ops.errors import OpsError
    from dlq_replay.ops.export import (
        Export,
        ExportLeftover,
        ExportPhase,
        ExportRequest,
        ExportResult,
        prepare_export,
    )
    from dlq_replay.ops.importing import (
        Importer,
        ImportFailure,
        ImportRequest,
        ImportTally,
        import_archive,
    )
    from dlq_replay.ops.kinds import (
        ALL_KINDS,
        KindCounts,
        kind_counts,
        recognised,
    )
    from dlq_replay.ops.movetask import (
        MAX_MOVE_RATE,
        MoveTask,
        latest_move_task,
        start_move_task,
        wait_move_task,
    )
    from dlq_replay.ops.pacing import (
        DEFAULT_ADAPTIVE_RATE,
        PaceReport,
        PaceStop,
        UntilFailing,
        WatchError,
        WatchProblem,
        failure_delay,
        watched_dlq,
    )
    from dlq_replay.ops.pause import (
        PauseResult,
        set_event_source,
        wait_for_state,
    )
    from dlq_replay.ops.peek import (
        PeekedMessage,
        PeekRequest,
        PeekResult,
    )
    from dlq_replay.ops.plan import (
        AttemptPlan,
        BackoffPlan,
        backoff_plan,
        quantile,
    )
    from dlq_replay.ops.queues import (
        QueueInfo,
        RedrivePolicy,
        queue_info,
    )
    from dlq_replay.ops.receiving import (
        ReceiveBudget,
        budget_refusal,
        receive,
        receive_budget,
        receive_count_of,
        release,
    )
    from dlq_replay.ops.redrive import (
        DEFAULT_CONCURRENCY,
        MAX_CONCURRENCY,
        NOT_ROUTED,
        BudgetStop,
        FailReason,
        Leftover,
        ModeChoice,
        ModeReason,
        MoveMode,
        RedriveRequest,
        RedriveTally,
        Rewrite,
        SkipReason,
        Stop,
        both_allow,
        choose_mode,
        plan_copy,
    )
    from dlq_replay.ops.s3archive import (
        S3Location,
        check_writable,
    )
    from dlq_replay.ops.select import (
        NO_REASON,
        Selector,
        Where,
    )
    from dlq_replay.ops.stack import (
        QUEUE_ROLES,
        STACK_OUTPUTS,
        Deployment,
        discover,
        function_environment,
        stack_outputs,
    )
    from dlq_replay.ops.status import (
        EventSourceStatus,
        KindSample,
        QueueStatus,
        Status,
        event_source_status,
    )
    from dlq_replay.sqs.queue_age import oldest_message_ages
    from dlq_replay.sqs.sources import dead_letter_sources

# Where each public name lives: a module of this package, or a full module path.
_MODULES: dict[str, tuple[str, ...]] = {
    "archive": ("ArchiveError", "ArchiveRecord"),
    "plan": ("AttemptPlan", "BackoffPlan", "backoff_plan", "quantile"),
    "breaker": ("BreakerStatus", "breaker_status", "operator_took_over"),
    "redrive": (
        "BudgetStop",
        "DEFAULT_CONCURRENCY",
        "FailReason",
        "Leftover",
        "MAX_CONCURRENCY",
        "ModeChoice",
        "ModeReason",
        "MoveMode",
        "NOT_ROUTED",
        "RedriveRequest",
        "RedriveTally",
        "Rewrite",
        "SkipReason",
        "Stop",
        "both_allow",
        "choose_mode",
        "plan_copy",
    ),
    "clientmove": ("ClientMove", "prepare"),
    "pacing": (
        "DEFAULT_ADAPTIVE_RATE",
        "PaceReport",
        "PaceStop",
        "UntilFailing",
        "WatchError",
        "WatchProblem",
        "failure_delay",
        "watched_dlq",
    ),
    "stack": (
        "Deployment",
        "QUEUE_ROLES",
        "STACK_OUTPUTS",
        "discover",
        "function_environment",
        "stack_outputs",
    ),
    "status": ("EventSourceStatus", "KindSample", "QueueStatus", "Status", "event_source_status"),
    "export": (
        "Export",
        "ExportLeftover",
        "ExportPhase",
        "ExportRequest",
        "ExportResult",
        "prepare_export",
    ),
    "importing": ("ImportFailure", "ImportRequest", "ImportTally", "Importer", "import_archive"),
    "kinds": ("ALL_KINDS", "KindCounts", "kind_counts", "recognised"),
    "movetask": (
        "MAX_MOVE_RATE",
        "MoveTask",
        "latest_move_task",
        "start_move_task",
        "wait_move_task",
    ),
    "select": ("NO_REASON", "Selector", "Where"),
    "errors": ("OpsError",),
    "pause": ("PauseResult", "set_event_source", "wait_for_state"),
    "peek": ("PeekRequest", "PeekResult", "PeekedMessage"),
    "queues": ("QueueInfo", "RedrivePolicy", "queue_info"),
    "receiving": (
        "ReceiveBudget",
        "budget_refusal",
        "receive",
        "receive_budget",
        "receive_count_of",
        "release",
    ),
    "s3archive": ("S3Location", "check_writable"),
    "dlq_replay.sqs.sources": ("dead_letter_sources",),
    "dlq_replay.sqs.queue_age": ("oldest_message_ages",),
}
_HOME = {name: module for module, names in _MODULES.items() for name in names}

__all__ = [
    "ALL_KINDS",
    "DEFAULT_ADAPTIVE_RATE",
    "DEFAULT_CONCURRENCY",
    "MAX_CONCURRENCY",
    "MAX_MOVE_RATE",
    "NOT_ROUTED",
    "NO_REASON",
    "QUEUE_ROLES",
    "STACK_OUTPUTS",
    "ArchiveError",
    "ArchiveRecord",
    "AttemptPlan",
    "BackoffPlan",
    "BreakerStatus",
    "BudgetStop",
    "ClientMove",
    "Deployment",
    "EventSourceStatus",
    "Export",
    "ExportLeftover",
    "ExportPhase",
    "ExportRequest",
    "ExportResult",
    "FailReason",
    "ImportFailure",
    "ImportRequest",
    "ImportTally",
    "Importer",
    "KindCounts",
    "KindSample",
    "Leftover",
    "ModeChoice",
    "ModeReason",
    "MoveMode",
    "MoveTask",
    "OpsError",
    "PaceReport",
    "PaceStop",
    "PauseResult",
    "PeekRequest",
    "PeekResult",
    "PeekedMessage",
    "QueueInfo",
    "QueueStatus",
    "ReceiveBudget",
    "RedrivePolicy",
    "RedriveRequest",
    "RedriveTally",
    "Rewrite",
    "S3Location",
    "Selector",
    "SkipReason",
    "Status",
    "Stop",
    "UntilFailing",
    "WatchError",
    "WatchProblem",
    "Where",
    "backoff_plan",
    "both_allow",
    "breaker_status",
    "budget_refusal",
    "check_writable",
    "choose_mode",
    "dead_letter_sources",
    "discover",
    "event_source_status",
    "failure_delay",
    "function_environment",
    "import_archive",
    "kind_counts",
    "latest_move_task",
    "oldest_message_ages",
    "operator_took_over",
    "plan_copy",
    "prepare",
    "prepare_export",
    "quantile",
    "queue_info",
    "receive",
    "receive_budget",
    "receive_count_of",
    "recognised",
    "release",
    "set_event_source",
    "stack_outputs",
    "start_move_task",
    "wait_for_state",
    "wait_move_task",
    "watched_dlq",
]


def __getattr__(name: str) -> Any:
    """A public name, imported from its module when first asked for (then kept here)."""
    module = _HOME.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    path = module if "." in module else f"{__name__}.{module}"
    value = getattr(importlib.import_module(path), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
