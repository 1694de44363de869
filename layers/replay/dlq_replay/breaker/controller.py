"""The rule of `breaker.rule` over a store and a switch, the same in Lambda (DynamoDB, the event
source mapping) and the worker (memory, the pollers). Batches already on their way when the
mapping is disabled are replayed as usual: failing them would raise their DLQ receive count."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Protocol

from aws_lambda_powertools.metrics import MetricUnit

from dlq_replay.breaker.breaker_state import (
    BreakerState,
    Cause,
    Phase,
    after_batch,
    by_operator,
    give_back,
    held_back,
    on_tick,
    probe_sent,
)
from dlq_replay.breaker.rule import (
    NOTHING_KNOWN,
    BreakerPolicy,
    Counts,
    Known,
    QueueTiming,
    in_window,
    observe,
    outage_in_window,
    returned,
)
from dlq_replay.core.messages import InboundMessage
from dlq_replay.notify.sns import ParkNotice, SnsClient, publish_notices

if TYPE_CHECKING:
    from aws_lambda_powertools.metrics import Metrics

    from dlq_replay.core.log import Log
    from dlq_replay.engine.report import Outcome

Clock = Callable[[], float]
# The main queue's timing is read again this often at most (a change applies from then on).
TIMING_READ_SECONDS = 300.0


class BreakerStore(Protocol):
    """The state and the window by send time (`breaker.function`, `breaker.worker_side`)."""

    def record(self, events: Sequence[tuple[float, Counts]]) -> None: ...
    def read(
        self, now: float, policy: BreakerPolicy
    ) -> tuple[BreakerState, list[tuple[float, Counts]]]: ...
    def load(self) -> BreakerState: ...
    def save(self, state: BreakerState, expected_version: int) -> bool: ...


class Switch(Protocol):
    def pause(self) -> None: ...
    def resume(self) -> None: ...
    def resumed_by_someone_else(self) -> bool: ...


class Breaker:
    """One breaker for one DLQ; safe to share between threads when its store is. The replay's
    calls (`give_back`, `after_batch`, `tick`) log an error and never fail the batch. What it
    reads besides its window (`breaker.evidence`) is None when unknown; `on_change`: the
    worker's stats, Lambda's probe rule (`rule`, also told of every closed tick)."""

    def __init__(
        self,
        store: BreakerStore,
        switch: Switch,
        *,
        logger: Log,
        count_attribute: str,
        policy: BreakerPolicy | None = None,
        clock: Clock = time.time,
        max_attempts: int | None = None,
        time_left: Callable[[], float | None] | None = None,
        depth: Callable[[], int | None] | None = None,
        timing: Callable[[], QueueTiming | None] | None = None,
        delay_seconds: float = 0.0,
        deleting: Callable[[float, int], bool | None] | None = None,  # (since, how many)
        metrics: Metrics | None = None,
        sns: SnsClient | None = None,
        topic_arn: str | None = None,
        source: str = "",
        on_change: Callable[[BreakerState], None] | None = None,
        rule: Callable[[BreakerState], None] | None = None,
    ) -> None:
        self.store = store
        self._switch = switch
        self._logger = logger
        self._count_attribute = count_attribute
        self._bounds = policy or BreakerPolicy()
        self._policy: tuple[float, BreakerPolicy] | None = None
        self._clock = clock
        self._max_attempts = max_attempts
        self._time_left, self._depth, self._timing = time_left, depth, timing
        self._delay_seconds, self._deleting = delay_seconds, deleting
        self._metrics, self._sns, self._topic_arn = metrics, sns, topic_arn
        self._source, self._on_change, self._rule = source, on_change, rule

    def now(self) -> float:
        return self._clock()

    @property
    def policy(self) -> BreakerPolicy:
        """The policy, its timing fitted to the main queue (read every TIMING_READ_SECONDS)."""
        timing = self._timing
        if timing is None:
            return self._bounds
        now = self._clock()
        if self._policy is None or now - self._policy[0] >= TIMING_READ_SECONDS:
            fitted = self._bounds.for_queue(timing(), self._delay_seconds)
            if self._policy is None or fitted != self._policy[1]:
                self._logger.info(
                    "outage breaker timing",
                    extra={
                        "window": fitted.window_seconds,
                        "first_pause": fitted.first_pause_seconds,
                        "probe_wait": fitted.probe_wait_seconds,
                    },
                )
            self._policy = (now, fitted)
        return self._policy[1]

    def give_back(
        self, messages: Sequence[InboundMessage], known: Known = NOTHING_KNOWN
    ) -> list[InboundMessage]:
        """The batch as the replay decides it: returns sent inside a known outage keep their
        count; while closed and an outage is suspected, a return that spent its last attempt is
        held back (short delays can spend every attempt before the rule trips; a known outage
        gives attempts back, but a park is for good). As it came when the state is unreadable."""
        count, last_attempt = self._count_attribute, self._max_attempts
        try:
            found = [returned(m, count, known) for m in messages]
            if not any(f is not None and f[1] is not None for f in found):
                return list(messages)
            state = self.store.load()
            decided, given = give_back(state, messages, count, known)
            if given:
                self._logger.info(
                    "attempts given back: sent into a known outage", extra={"given_back": given}
                )
                if self._metrics is not None:
                    self._metrics.add_metric("AttemptsGivenBack", MetricUnit.Count, given)
            if last_attempt is None or state.phase is not Phase.CLOSED:
                return decided
            if not any(f is not None and f[0] >= last_attempt for f in found):
                return decided
            if not self._suspected(state):
                return decided
            decided, held = held_back(decided, count, last_attempt, known)
            self._logger.info(
                "last attempts held back: an outage is suspected", extra={"held_back": held}
            )
            return decided
        except Exception as error:  # a safeguard must not fail the batch
            self._failed("outage breaker not read", error)
            return list(messages)

    def _suspected(self, state: BreakerState) -> bool:
        """At least MIN_RETURNS first replays of the window came back, and the consumer is not
        seen deleting since. No ratio: waiting for nearly all is what must not spend attempts."""
        now = self._clock()
        policy = self.policy
        _, window = self.store.read(now, policy)
        kept = in_window(window, now, policy, since=state.since)
        returns = sum(counts.returns for _, counts in kept)
        if returns < policy.min_returns:
            return False
        deleting = self._deleting
        if deleting is None:
            return True
        first = min(when for when, counts in kept if counts.returns)
        return not deleting(first, policy.deletions_enough(sum(c.replays for _, c in kept)))

    def after_batch(
        self,
        outcomes: Iterable[Outcome],
        sent_at: float,
        received: Sequence[InboundMessage] = (),
        *,
        known: Known = NOTHING_KNOWN,
    ) -> None:
        """Count a batch sent from `sent_at` (taken before it: never later than a return of it
        could say); returns are counted by the records as `received`, before `give_back`."""
        came = {message.message_id: message for message in received}
        outcomes = list(outcomes)
        refused = {
            o.message.message_id: o.refused_attempt
            for o in outcomes
            if o.refused_attempt is not None
        }
        handled = (
            (came.get(o.message.message_id, o.message), o.decision, o.failure is None)
            for o in outcomes
        )
        try:
            events = observe(handled, self._count_attribute, sent_at, known=known, refused=refused)
            self.record(events)
        except Exception as error:  # a safeguard must not fail the batch
            self._failed("outage breaker not updated", error)

    def record(self, events: Sequence[tuple[float, Counts]]) -> BreakerState:
        """Add a batch's events to the window; open on the signal unless the consumer deletes."""
        now = self._clock()
        policy = self.policy
        horizon = now - policy.window_seconds
        recent = [event for event in events if event[0] >= horizon]  # older never count
        if recent:
            self.store.record(recent)
        state, window = self.store.read(now, policy)
        if state.phase is Phase.OPEN:
            return state
        signal = outage_in_window(window, now, policy, since=state.since)
        if signal is None:
            return self._hold_probe(state, window, now, policy)
        counts = signal.counts
        deleting = self._deleting
        if deleting is not None and state.phase is Phase.CLOSED:
            enough = policy.deletions_enough(counts.replays)
            # From `failing_seconds` before the stretch: behind the toolkit's backoff the poison
            # reaches the DLQ after the good messages sent with it are done. Only when it trips.
            if deleting(signal.start - policy.failing_seconds, enough):
                self._logger.info(
                    "first replays came back, but the main queue's consumer deletes messages: "
                    "bad messages, not an outage; the breaker stays closed",
                    extra={"replays": counts.replays, "returns": counts.returns},
                )
                return state
        time_left = self._time_left() if self._time_left else None  # only now: CloudWatch
        opened = after_batch(state, signal, now, policy, time_left=time_left)
        if opened is None:
            self._logger.warning(
                "outage signal, but the DLQ's oldest message expires within a day: the breaker "
                "stays closed and the replay parks as usual",
                extra={"replays": counts.replays, "returns": counts.returns, "left": time_left},
            )
            return state
        if not self.store.save(opened, state.version):
            return self.store.load()  # another invocation decided first
        try:
            self._switch.pause()
        except Exception as error:  # the breaker is a safeguard, never the failure
            self._failed(
                "outage breaker could not pause the event source; the probe retries at its time",
                error,
            )
        self._signal(opened, counts)
        return opened

    def _hold_probe(
        self,
        state: BreakerState,
        window: list[tuple[float, Counts]],
        now: float,
        policy: BreakerPolicy,
    ) -> BreakerState:
        """Half-open with the probe's replays sent: stop receiving until they show."""
        holding = probe_sent(state, window, now, policy)
        if holding is None or not self.store.save(holding, state.version):
            return state
        self._switch.pause()
        self._logger.info("outage breaker probe sent; receiving again once its outcome shows")
        return holding

    def tick(self) -> BreakerState | None:
        """`step`, Lambda's probe rule following a closed breaker; None on an error."""
        try:
            state = self.step()
            if state.phase is Phase.CLOSED and self._rule is not None:
                self._rule(state)  # closed by an operator: nothing left to probe
        except Exception as error:  # the next tick tries again
            self._failed("outage breaker probe failed", error)
            return None
        if self._metrics is not None and state.phase is not Phase.CLOSED:
            # The alarm's signal: one datapoint a minute while the breaker is not closed.
            self._metrics.add_metric("BreakerOpen", MetricUnit.Count, 1)
        return state

    def step(self) -> BreakerState:
        """The unattended step (Lambda's schedule, the worker's every poll)."""
        state = self.store.load()
        if state.phase is Phase.CLOSED:
            return state
        now = self._clock()
        changed: BreakerState | None
        paused = state.phase is Phase.OPEN or state.holding
        if paused and self._switch.resumed_by_someone_else():
            changed = by_operator(state, now, Cause.TAKEN_OVER)
        else:
            opened = state.phase is Phase.OPEN
            time_left = self._time_left() if opened and self._time_left else None
            depth = self._depth() if paused and self._depth else None
            changed = on_tick(state, now, self.policy, time_left=time_left, depth=depth)
        if changed is None or not self.store.save(changed, state.version):
            return state if changed is None else self.store.load()
        if changed.phase is Phase.HALF_OPEN or changed.cause is Cause.RETENTION:
            self._switch.resume()
        elif changed.phase is Phase.CLOSED and state.holding:
            self._switch.resume()  # the probe's copies stayed away: the consumer is back
        if changed.cause is Cause.RETENTION:
            self._logger.warning(
                "the DLQ's oldest message expires within a day: outage breaker closed, the "
                "replay runs and parks as usual",
            )
        self._signal(changed, None)
        return changed

    def _signal(self, state: BreakerState, window: Counts | None) -> None:
        """A log line for every change; the metrics and a notice on open and close."""
        extra: dict[str, object] = {
            "breaker": state.phase.value,
            "cause": state.cause.value if state.cause else None,
            "openings": state.openings,
            "next_probe": state.next_probe,
        }
        if window is not None:
            extra.update(replays=window.replays, returns=window.returns)
        self._logger.warning(f"outage breaker {state.phase.value}", extra=extra)
        if self._on_change is not None:
            self._on_change(state)
        if state.phase is Phase.HALF_OPEN:
            return
        metric = "BreakerOpened" if state.phase is Phase.OPEN else "BreakerClosed"
        if self._metrics is not None:
            self._metrics.add_metric(metric, MetricUnit.Count, 1)
        if self._sns is None or self._topic_arn is None:
            return
        fields = {
            "event": f"breaker-{state.phase.value}",
            "source": self._source,
            "cause": extra["cause"],
            "since": state.since,
            "next_probe": state.next_probe,
            "openings": state.openings,
            "waiting": None,
        }
        notice = ParkNotice(
            record_id=f"breaker-{state.version}",
            message=json.dumps(fields, sort_keys=True),
            subject=f"sqs-dlq-replay: outage breaker {state.phase.value}",
            reason=f"breaker-{state.phase.value}",
            group_id="dlq-replay-breaker",
            deduplication_id=f"breaker-{state.version}-{int(state.since)}",
        )
        for failure in publish_notices(self._sns, self._topic_arn, [notice]):
            why = {"code": failure.code, "error": failure.message}
            self._logger.warning(
                "breaker notice not published", extra={"topic_arn": self._topic_arn, **why}
            )

    def _failed(self, what: str, error: Exception) -> None:
        self._logger.error(what, extra={"error": f"{type(error).__name__}: {error}"})
