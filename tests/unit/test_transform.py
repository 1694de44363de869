"""A rule target's Input, InputPath and InputTransformer applied to the event in a DLQ record.

The examples are AWS's, from the input transformation page:
https://docs.aws.amazon.com/eventbridge/latest/userguide/eb-transform-target-input.html
("Input transform examples", "Common issues with transforming input"), and the
InputTransformer API reference:
https://docs.aws.amazon.com/eventbridge/latest/APIReference/API_InputTransformer.html
"""

from __future__ import annotations

import json

import pytest
from dlq_replay.core.transform import MISSING, NotApplied, TargetInput, select, target_payload

# The page's example Amazon EC2 event.
EVENT = {
    "version": "0",
    "id": "7bf73129-1428-4cd3-a780-95db273d1602",
    "detail-type": "EC2 Instance State-change Notification",
    "source": "aws.ec2",
    "account": "123456789012",
    "time": "2015-11-11T21:29:54Z",
    "region": "us-east-1",
    "resources": ["arn:aws:ec2:us-east-1:123456789012:instance/i-abcd1111"],
    "detail": {"instance-id": "i-0123456789", "state": "RUNNING"},
}
BODY = json.dumps(EVENT)
# The page's Input Path (its "timestamp", "instance", "state" and "resource").
PATHS = (
    ("timestamp", "$.time"),
    ("instance", "$.detail.instance-id"),
    ("state", "$.detail.state"),
    ("resource", "$.resources[0]"),
)
RULE_ARN = "arn:aws:events:us-east-2:123456789012:rule/example"


def transformed(template: str, body: str = BODY, paths: tuple[tuple[str, str], ...] = PATHS) -> str:
    result = target_payload(
        body, TargetInput(paths=paths, template=template), rule_arn=RULE_ARN, rule_name="example"
    )
    assert isinstance(result, str), result
    return result


def refusal(target: TargetInput, body: str = BODY) -> str:
    result = target_payload(body, target, rule_arn=RULE_ARN, rule_name="example")
    assert isinstance(result, NotApplied), result
    return result.reason


@pytest.mark.parametrize(
    ("template", "output"),
    [
        # "Simple string"
        ('"instance <instance> is in <state>"', '"instance i-0123456789 is in RUNNING"'),
        # "String with escaped quotes"
        (
            r'"instance \"<instance>\" is in <state>"',
            r'"instance \"i-0123456789\" is in RUNNING"',
        ),
        # "Simple JSON": strings outside quotes are quoted.
        (
            '{\n  "instance" : <instance>,\n  "state": <state>\n}',
            '{\n  "instance" : "i-0123456789",\n  "state": "RUNNING"\n}',
        ),
        # "JSON with strings and variables"
        (
            '{"instance" : <instance>, "state": "<state>", '
            r'"instanceStatus": "instance \"<instance>\" is in <state>"}',
            '{"instance" : "i-0123456789", "state": "RUNNING", '
            r'"instanceStatus": "instance \"i-0123456789\" is in RUNNING"}',
        ),
        # "JSON with a mix of variables and static information"
        (
            '{"instance" : <instance>, "state": [ 9, <state>, true ], "Transformed" : "Yes"}',
            '{"instance" : "i-0123456789", "state": [ 9, "RUNNING", true ], "Transformed" : "Yes"}',
        ),
        # "Including reserved variables in a string"
        ('"<aws.events.rule-name> triggered"', '"example triggered"'),
        # An array index path (the page's "resource": "$.resources[0]").
        ('{"r": <resource>}', '{"r": "arn:aws:ec2:us-east-1:123456789012:instance/i-abcd1111"}'),
    ],
)
def test_awss_documented_templates_give_awss_documented_output(template: str, output: str) -> None:
    assert transformed(template) == output
    json.loads(output)  # every documented output above is JSON


def test_reserved_variables_in_json_are_the_rule_and_the_event_without_its_detail() -> None:
    """AWS's "Including reserved variables in JSON"; `aws.events.event` is "the original event
    payload as JSON (without the detail field)", `aws.events.event.json` the whole event."""
    template = (
        '{"instance" : <instance>, "state": <state>, "ruleArn" : <aws.events.rule-arn>, '
        '"ruleName" : <aws.events.rule-name>, "originalEvent" : <aws.events.event>, '
        '"whole": <aws.events.event.json>}'
    )

    output = json.loads(transformed(template))

    assert output == {
        "instance": "i-0123456789",
        "state": "RUNNING",
        "ruleArn": RULE_ARN,
        "ruleName": "example",
        "originalEvent": {k: v for k, v in EVENT.items() if k != "detail"},
        "whole": EVENT,
    }


def test_an_object_outside_quotes_is_json_and_inside_quotes_loses_its_quotes() -> None:
    """AWS: "If a JSON path references a JSON object or array, but the variable is referenced in a
    string, EventBridge removes any internal quotes"; "if you want to output a JSON object
    based on a single JSON path variable, you must place it as a key": {"detail": <detail>}."""
    paths = (("detail", "$.detail"),)

    assert json.loads(transformed('{"detail": <detail>}', paths=paths)) == {
        "detail": EVENT["detail"]
    }
    assert transformed('"Detail is <detail>"', paths=paths) == (
        '"Detail is {instance-id:i-0123456789,state:RUNNING}"'
    )


def test_numbers_booleans_and_null_are_json_literals_inside_and_outside_quotes() -> None:
    body = json.dumps({**EVENT, "detail": {"count": 3, "ok": True, "none": None, "pi": 3.25}})
    paths = (
        ("n", "$.detail.count"),
        ("ok", "$.detail.ok"),
        ("no", "$.detail.none"),
        ("pi", "$.detail.pi"),
    )

    output = transformed(
        '{"n": <n>, "ok": <ok>, "no": <no>, "s": "<n> <ok> <no> <pi>"}', body, paths
    )

    assert output == '{"n": 3, "ok": true, "no": null, "s": "3 true null 3.25"}'


def test_a_variable_whose_path_matches_nothing_is_left_out_inside_quotes() -> None:
    """AWS: "If you specify a variable to match a JSON path that doesn't exist in the event, that
    variable isn't created and won't appear in the output"."""
    paths = (*PATHS, ("gone", "$.detail.gone"))

    assert transformed('"state <state><gone>"', paths=paths) == '"state RUNNING"'
    reason = refusal(TargetInput(paths=paths, template='{"gone": <gone>}'))
    assert "<gone>" in reason
    assert "selects nothing" in reason


def test_lines_of_quoted_text_are_applied() -> None:
    """AWS's way to a text of several lines: each line of the template in double quotes."""
    assert transformed('"<instance> is"\n"<state>"') == '"i-0123456789 is"\n"RUNNING"'


def test_input_is_delivered_as_configured_and_input_path_selects_part_of_the_event() -> None:
    constant = '{"fixed": [1, 2]}'
    assert target_payload(BODY, TargetInput(input=constant), rule_arn=RULE_ARN, rule_name="e") == (
        constant
    )
    for path, expected in [
        ("$.detail", '{"instance-id":"i-0123456789","state":"RUNNING"}'),
        ("$.detail.state", '"RUNNING"'),
        ("$.resources[0]", '"arn:aws:ec2:us-east-1:123456789012:instance/i-abcd1111"'),
        ("$", BODY),
    ]:
        payload = target_payload(
            BODY, TargetInput(input_path=path), rule_arn=RULE_ARN, rule_name="e"
        )
        assert payload == expected, path


def test_a_target_without_input_settings_gets_the_body_unchanged() -> None:
    body = "not even JSON"
    assert target_payload(body, TargetInput(), rule_arn=RULE_ARN, rule_name="e") == body


@pytest.mark.parametrize(
    ("target", "because"),
    [
        (TargetInput(input_path="$.detail.*"), "wildcard"),
        (TargetInput(input_path="$['detail']"), "syntax"),
        (TargetInput(input_path="detail"), "does not start with $"),
        (TargetInput(input_path="$.detail.gone"), "selects nothing"),
        (TargetInput(template='{"t": <aws.events.event.ingestion-time>}'), "does not say when"),
        (TargetInput(template='"<aws.events.event.json>"'), "only as a JSON field's value"),
        # The API reference's "<instance> is in state <status>": AWS shows no output for a
        # template that is not JSON; the quoted strings make this one not JSON either.
        (TargetInput(paths=PATHS, template="<instance> is in state <state>"), "not JSON"),
        (TargetInput(paths=(("w", "$.detail.*"),), template="{}"), "wildcard"),
    ],
)
def test_what_aws_does_not_document_is_not_applied(target: TargetInput, because: str) -> None:
    assert because in refusal(target)


def test_a_string_value_with_a_quote_inside_quotes_is_not_json_and_not_applied() -> None:
    """EventBridge "doesn't escape values extracted by Input Path": the quote ends the string."""
    body = json.dumps({**EVENT, "detail": {"note": 'say "hi"'}})

    assert "not JSON" in refusal(
        TargetInput(paths=(("n", "$.detail.note"),), template='"<n>"'), body
    )


@pytest.mark.parametrize(
    ("body", "because"),
    [
        ("plain text", "not JSON"),
        ('"instance i-0123456789 is in RUNNING"', "not a whole EventBridge event"),
        ('{"instance": "i-0123456789"}', "not a whole EventBridge event"),
    ],
)
def test_a_body_that_is_not_an_event_is_not_transformed(body: str, because: str) -> None:
    for target in (
        TargetInput(input="{}"),
        TargetInput(input_path="$.detail"),
        TargetInput(paths=PATHS, template='"<state>"'),
    ):
        assert because in refusal(target, body)


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("$", EVENT),
        ("$.detail.instance-id", "i-0123456789"),
        ("$.detail-type", "EC2 Instance State-change Notification"),
        ("$.resources[0]", EVENT["resources"][0]),  # type: ignore[index]
    ],
)
def test_the_paths_eventbridge_supports(path: str, expected: object) -> None:
    assert select(EVENT, path) == expected


def test_a_key_may_hold_a_slash_and_an_index_out_of_range_matches_nothing() -> None:
    event = {"a/b": [{"c_d": 1}]}

    assert select(event, "$.a/b[0].c_d") == 1
    assert select(event, "$.a/b[1]") is MISSING
    assert select(event, "$.a/b[0].e") is MISSING
