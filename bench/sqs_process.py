"""The benchmarks' in-memory SQS (sqs_http.FakeSqs) in a process of its own, as SQS is: its
CPU is then not the tool's, and the two do not take turns at one interpreter's lock (in one
process the fake's work and the tool's share a core's worth of Python). `hosted_sqs(latency)`
starts it and returns a proxy with the calls a benchmark makes: set-up, the endpoint, the
books."""

from __future__ import annotations

from multiprocessing.managers import BaseManager
from typing import Any

from sqs_http import FakeSqs


class HostedSqs(FakeSqs):
    """FakeSqs with its books read by method (a proxy carries calls, not attributes)."""

    def endpoint(self) -> str:
        return self.endpoint_url

    def call_counts(self) -> dict[str, int]:
        with self.changed:
            return dict(self.calls)

    def arrived(self, name: str) -> list[str]:
        with self.changed:
            return list(self.queues[name].arrived)


class _Host(BaseManager):
    pass


_Host.register(
    "HostedSqs",
    HostedSqs,
    exposed=("start", "stop", "queue", "fill", "url", "endpoint", "call_counts", "arrived"),
)


class Hosted:
    """The proxy, and the process it lives in (ended by `stop`)."""

    def __init__(self, latency: float) -> None:
        self._host = _Host()
        self._host.start()
        self._fake: Any = self._host.HostedSqs(latency)  # type: ignore[attr-defined]
        self.endpoint_url: str = self._fake.endpoint()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._fake, name)

    def stop(self) -> None:
        try:
            self._fake.stop()
        finally:
            self._host.shutdown()


def hosted_sqs(latency: float) -> Hosted:
    return Hosted(latency)
