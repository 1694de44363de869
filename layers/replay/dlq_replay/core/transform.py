"""What an EventBridge rule's target is given instead of the event: `Input`, `InputPath` or an
`InputTransformer`, applied by AWS's documented rules (docs/kind-eventbridge.md); anything else
is `NotApplied`, rather than a shape EventBridge might not have given the target."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

# Every EventBridge event has these fields; a body without them may be the transformed input.
EVENT_FIELDS = (
    "version",
    "id",
    "detail-type",
    "source",
    "account",
    "time",
    "region",
    "resources",
    "detail",
)
RULE_ARN_VARIABLE = "aws.events.rule-arn"
RULE_NAME_VARIABLE = "aws.events.rule-name"
EVENT_VARIABLE = "aws.events.event"  # the event without its detail
EVENT_JSON_VARIABLE = "aws.events.event.json"  # the whole event
INGESTION_TIME_VARIABLE = "aws.events.event.ingestion-time"

# One step of a supported path: `.key` (letters, digits, `-`, `_`, `/`) or `[index]`.
_STEP = re.compile(r"\.([A-Za-z0-9_\-/]+)|\[(\d+)\]")
_PLACEHOLDER = re.compile(r"<([^<>\s]+)>")
_COMPACT = (",", ":")


@dataclass(frozen=True, slots=True)
class TargetInput:
    """A rule target's input settings, as `ListTargetsByRule` gives them (none: the event)."""

    input: str | None = None  # constant JSON text: delivered instead of the event
    input_path: str | None = None  # the part of the event delivered
    paths: tuple[tuple[str, str], ...] = ()  # InputTransformer.InputPathsMap
    template: str | None = None  # InputTransformer.InputTemplate

    @property
    def transforms(self) -> bool:
        return self.input is not None or self.input_path is not None or self.template is not None


@dataclass(frozen=True, slots=True)
class NotApplied:
    reason: str


def target_payload(
    body: str, target: TargetInput, *, rule_arn: str, rule_name: str
) -> str | NotApplied:
    if not target.transforms:
        return body
    try:
        event = json.loads(body)
    except (ValueError, RecursionError):
        return NotApplied("the body is not JSON, so not the event the transformation applies to")
    if not isinstance(event, dict) or not all(field in event for field in EVENT_FIELDS):
        return NotApplied(
            "the body is not a whole EventBridge event (it may be the target's input already)"
        )
    if target.input is not None:
        return target.input
    if target.input_path is not None:
        return _selected(body, event, target.input_path)
    return _fill(target, event, rule_arn=rule_arn, rule_name=rule_name)


def _selected(body: str, event: dict[str, Any], path: str) -> str | NotApplied:
    """What `InputPath` gives the target: the whole body for `$`, else the value selected."""
    if path == "$":
        return body
    found = select(event, path)
    if isinstance(found, NotApplied):
        return found
    if found is MISSING:
        return NotApplied(f"InputPath {path} selects nothing in the event")
    return _json(found)


class _Missing:
    """A path that matches nothing (None is JSON's null, a value)."""


MISSING = _Missing()


def select(event: Any, path: str) -> Any:
    """The value at `path`, `MISSING`, or `NotApplied` for a path EventBridge does not document."""
    if not path.startswith("$"):
        return NotApplied(f"the path {path!r} does not start with $")
    if "*" in path:
        return NotApplied(f"the path {path} has a wildcard: AWS does not say what it selects")
    value, position = event, 1
    while position < len(path):
        step = _STEP.match(path, position)
        if step is None:
            return NotApplied(f"the path {path} is not of the syntax EventBridge supports")
        key, index = step.groups()
        position = step.end()
        if key is not None:
            if not isinstance(value, dict) or key not in value:
                return MISSING
            value = value[key]
        else:
            if not isinstance(value, list) or int(index) >= len(value):
                return MISSING
            value = value[int(index)]
    return value


def _fill(
    target: TargetInput, event: dict[str, Any], *, rule_arn: str, rule_name: str
) -> str | NotApplied:
    """The template with each placeholder replaced as AWS documents."""
    template = target.template or ""
    values: dict[str, Any] = {
        RULE_ARN_VARIABLE: rule_arn,
        RULE_NAME_VARIABLE: rule_name,
        EVENT_VARIABLE: {k: v for k, v in event.items() if k != "detail"},
        EVENT_JSON_VARIABLE: event,
    }
    paths = dict(target.paths)
    for name, path in paths.items():
        found = select(event, path)
        if isinstance(found, NotApplied):
            return found
        values[name] = found
    out: list[str] = []
    in_string, position = False, 0
    while position < len(template):
        character = template[position]
        if character == "<":
            placeholder = _PLACEHOLDER.match(template, position)
            name = placeholder.group(1) if placeholder else ""
            if placeholder and name == INGESTION_TIME_VARIABLE:
                return NotApplied(
                    f"<{name}>: the DLQ record does not say when EventBridge received the event"
                )
            if placeholder and name in values:
                text = _value_text(name, values[name], paths.get(name), in_string=in_string)
                if isinstance(text, NotApplied):
                    return text
                out.append(text)
                position = placeholder.end()
                continue
        elif in_string and character == "\\":
            out.append(template[position : position + 2])
            position += 2
            continue
        elif character == '"':
            in_string = not in_string
        out.append(character)
        position += 1
    return _checked("".join(out))


def _value_text(name: str, value: Any, path: str | None, *, in_string: bool) -> str | NotApplied:
    if value is MISSING:
        # Inside quotes it "isn't created and won't appear in the output".
        return "" if in_string else NotApplied(f"<{name}>: the path {path} selects nothing")
    if not in_string:
        return _json(value)
    if name in (EVENT_VARIABLE, EVENT_JSON_VARIABLE):
        return NotApplied(f"<{name}> inside quotes: AWS allows it only as a JSON field's value")
    if isinstance(value, str):
        return value
    text = _json(value)
    return text.replace('"', "") if isinstance(value, dict | list) else text


def _checked(output: str) -> str | NotApplied:
    """`output` if it is JSON: one value, or several separated by white space."""
    decoder = json.JSONDecoder()
    position = 0
    try:
        while True:
            while position < len(output) and output[position].isspace():
                position += 1
            if position == len(output) and position:
                return output
            _, position = decoder.raw_decode(output, position)
    except ValueError:
        return NotApplied(
            "the template's output is not JSON; what EventBridge delivers then is not documented"
        )


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=_COMPACT)
