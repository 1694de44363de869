"""An in-memory EventBridge `ListTargetsByRule` endpoint over HTTP for the benchmarks, beside
bench/sqs_http.py and bench/lambda_http.py: EventBridge's JSON protocol (`POST /` with
`X-Amz-Target: AWSEvents.ListTargetsByRule`, what boto3 speaks to EventBridge), every request
held a fixed latency before it is answered.

The replay reads the rule of every EventBridge record it delivers (the target's input settings
and group id), once per rule: the server answers the targets it was given for a rule and keeps
the books (reads by rule). Any other action, or an unknown rule, is refused (400).
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping, Sequence
from typing import Any

from fake_http import FakeRequest, FakeServer

_LIST_TARGETS = "AWSEvents.ListTargetsByRule"


class FakeEvents(FakeServer):
    """The server: `rules` maps a rule's name to its targets (as `ListTargetsByRule` lists
    them); `reads` counts the reads by rule name."""

    def __init__(self, latency: float, rules: Mapping[str, Sequence[Mapping[str, Any]]]) -> None:
        super().__init__(_Request, latency)
        self.rules = {name: list(targets) for name, targets in rules.items()}
        self.reads: dict[str, int] = {}


class _Request(FakeRequest):
    server: FakeEvents

    def do_POST(self) -> None:  # noqa: N802 - http.server calls it by this name
        request = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
        time.sleep(self.server.latency)
        if self.headers.get("X-Amz-Target") != _LIST_TARGETS:
            self._answer(400, {"__type": "UnknownOperationException", "message": "not faked"})
            return
        rule = request.get("Rule", "")
        if rule not in self.server.rules:
            self._answer(400, {"__type": "ResourceNotFoundException", "message": f"{rule}?"})
            return
        with self.server.lock:
            self.server.reads[rule] = self.server.reads.get(rule, 0) + 1
        self._answer(200, {"Targets": self.server.rules[rule]})

    def _answer(self, status: int, answer: Mapping[str, Any]) -> None:
        self.answer(
            status, json.dumps(answer).encode(), {"Content-Type": "application/x-amz-json-1.1"}
        )
