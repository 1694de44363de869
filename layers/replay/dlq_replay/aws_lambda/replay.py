"""Lambda's SQS event in, the partial-batch response out: the replayer handles the whole batch
first, then Powertools' record handler reports each outcome, so the response shape and the FIFO
rule (a failed record fails the rest of its group) are Powertools' own."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from aws_lambda_powertools.utilities.batch import (
    BatchProcessor,
    EventType,
    SqsFifoPartialProcessor,
    process_partial_response,
)

from dlq_replay.breaker.controller import Breaker
from dlq_replay.breaker.function import is_probe_event, lambda_breaker, lazy_clients
from dlq_replay.core.attributes import is_mapping
from dlq_replay.core.log import Log
from dlq_replay.core.messages import InboundMessage
from dlq_replay.core.queues import is_fifo_arn
from dlq_replay.core.settings import Settings, SettingsError
from dlq_replay.engine.replayer import Replayer
from dlq_replay.engine.report import Outcome
from dlq_replay.notify.sns import notice_client

if TYPE_CHECKING:
    import boto3
    from aws_lambda_powertools.metrics import Metrics
    from aws_lambda_powertools.utilities.batch.types import PartialItemFailureResponse
    from aws_lambda_powertools.utilities.data_classes.sqs_event import SQSRecord
    from aws_lambda_powertools.utilities.typing import LambdaContext
    from mypy_boto3_sqs import SQSClient

    from dlq_replay.follow.replay_side import ReplayFollow


class MalformedEventError(ValueError):
    """Not Lambda's SQS event: the whole invocation fails (Lambda keeps the messages)."""


def _records(event: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    records = event.get("Records") if isinstance(event, Mapping) else None
    if not isinstance(records, list):
        raise MalformedEventError("not an SQS event: it has no Records list")
    for index, record in enumerate(records):
        if not is_mapping(record):
            raise MalformedEventError(f"not an SQS event: record {index} is not an object")
        message_id = record.get("messageId")
        if not isinstance(message_id, str) or not message_id:
            raise MalformedEventError(f"not an SQS event: record {index} has no messageId")
    return records


class RecordNotDone(Exception):  # noqa: N818 - names the outcome, not an error class
    """Raised inside the record handler only, to mark a batch item failure for Powertools."""


class LambdaReplay:
    """The callable behind `app.handler`: one event, one partial-batch response."""

    def __init__(
        self,
        replayer: Replayer,
        breaker: Breaker | None = None,
        follow: ReplayFollow | None = None,
    ) -> None:
        """`follow`: the recovery counts and the moves' returns, after every batch (None: off)."""
        self._replayer = replayer
        self.breaker = breaker
        self.follow = follow

    @classmethod
    def from_env(
        cls,
        env: Mapping[str, str],
        *,
        sqs: SQSClient,
        logger: Log,
        metrics: Metrics | None = None,
        session: boto3.Session | None = None,
    ) -> LambdaReplay:
        """Parse the settings (SettingsError on a bad value), and make what they turn on."""
        settings = Settings.from_env(env)
        sns = notice_client(settings, session=session)
        deliverer, ledger = None, None
        if settings.dlq_kind != "sqs":
            from dlq_replay.targets.deliverer import Deliverer, TargetClients
            from dlq_replay.targets.ledger import LEDGER_TABLE_VARIABLE, invocation_ledger

            ledger = invocation_ledger(env, session=session)
            if ledger is None:
                raise SettingsError(
                    LEDGER_TABLE_VARIABLE,
                    None,
                    "required when DLQ_KIND is not sqs (the template sets it to the stack's table)",
                )
            deliverer = Deliverer(TargetClients(session), concurrency=settings.send_concurrency)
        replayer = Replayer(
            settings,
            sqs,
            logger=logger,
            metrics=metrics,
            sns=sns,
            deliverer=deliverer,
            ledger=ledger,
        )
        clients = lazy_clients(session)  # one DynamoDB client for the breaker and the counts
        breaker = lambda_breaker(
            settings,
            env=env,
            sqs=sqs,
            clients=clients,
            logger=logger,
            metrics=metrics,
            sns=sns,
        )
        follow = None
        if env.get("FOLLOW_TABLE", "").strip():  # imported only with a table to count in
            from dlq_replay.follow.replay_side import lambda_follow

            follow = lambda_follow(
                env,
                settings,
                session=session,
                logger=logger,
                metrics=metrics,
                dynamodb=lambda: clients("dynamodb"),
            )
        return cls(replayer, breaker, follow)

    def __call__(
        self, event: Mapping[str, Any], context: LambdaContext | None = None
    ) -> PartialItemFailureResponse:
        if is_probe_event(event) and self.breaker is not None:
            self.breaker.tick()  # the probe rule: no record to answer for
            return {"batchItemFailures": []}
        records = _records(event)
        if not records:  # nothing to answer for (Powertools refuses an empty batch)
            return {"batchItemFailures": []}
        received = [InboundMessage.from_lambda_record(record) for record in records]
        lookup = self._replayer.look_up(received)
        if self.breaker is None:
            outcomes = self._replayer.process(received, lookup)
        else:
            sent_at = self.breaker.now()
            given = self.breaker.give_back(received, lookup.known)
            outcomes = self._replayer.process(given, lookup)
            self.breaker.after_batch(outcomes.values(), sent_at, received, known=lookup.known)
        if self.follow is not None:
            known = {mid: invocation.count for mid, invocation in lookup.known.items()}
            self.follow(received, outcomes, known)
        processor: BatchProcessor
        if any(is_fifo_arn(str(r.get("eventSourceARN", ""))) for r in records):
            processor = SqsFifoPartialProcessor(skip_group_on_error=True)
        else:
            processor = BatchProcessor(event_type=EventType.SQS)
        # A batch where all failed is still an answer: Lambda retries exactly the records listed.
        processor.raise_on_entire_batch_failure = False
        return process_partial_response(
            event=dict(event),
            record_handler=_record_handler(outcomes),
            processor=processor,
            context=context,
        )


def _record_handler(outcomes: Mapping[str, Outcome]) -> Any:
    def record_handler(record: SQSRecord) -> str:
        outcome = outcomes[record.message_id]
        if not outcome.done:
            raise RecordNotDone(outcome.decision.action.value)
        return outcome.decision.action.value

    return record_handler
