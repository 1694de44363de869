"""The line a batch's routine records share (engine/report.routine_summary): each record short,
the destination once when they all went to one place, on each record when they did not."""

from __future__ import annotations

from dlq_replay.engine.report import routine_summary

MAIN = "https://sqs.us-east-1.amazonaws.com/123456789012/orders"
BILLING = "https://sqs.us-east-1.amazonaws.com/123456789012/billing"


def fields(
    message_id: str, action: str, destination: str | None, **more: object
) -> dict[str, object]:
    """A record's fields as `Replayer._fields` builds them."""
    return {
        "message_id": message_id,
        "outcome": action,
        "action": action,
        "attempt": 2,
        "delay_seconds": 30,
        "destination": destination,
        **more,
    }


def test_one_destination_is_named_once_and_each_record_keeps_what_follows_it() -> None:
    summary = routine_summary(
        [
            fields("a", "replay", MAIN),
            fields("b", "defer", MAIN, not_before=1_800_000_000),
            fields("c", "replay", MAIN, message_group_id="g", problem="ignored here"),
        ]
    )

    assert summary == {
        "counts": {"replay": 2, "defer": 1},
        "destination": MAIN,
        "records": [
            {"message_id": "a", "action": "replay", "attempt": 2, "delay_seconds": 30},
            {
                "message_id": "b",
                "action": "defer",
                "attempt": 2,
                "delay_seconds": 30,
                "not_before": 1_800_000_000,
            },
            {
                "message_id": "c",
                "action": "replay",
                "attempt": 2,
                "delay_seconds": 30,
                "message_group_id": "g",
            },
        ],
    }


def test_records_bound_for_different_queues_each_name_their_own() -> None:
    summary = routine_summary([fields("a", "replay", MAIN), fields("b", "replay", BILLING)])

    assert "destination" not in summary
    assert [(r["message_id"], r["destination"]) for r in summary["records"]] == [
        ("a", MAIN),
        ("b", BILLING),
    ]


def test_a_body_is_kept_only_when_the_record_carries_it() -> None:
    (with_body,) = routine_summary([fields("a", "replay", MAIN, body="hello")])["records"]
    (without,) = routine_summary([fields("a", "replay", MAIN)])["records"]

    assert with_body["body"] == "hello"
    assert "body" not in without


def test_held_records_name_no_destination_and_do_not_split_the_batch() -> None:
    summary = routine_summary(
        [fields("a", "replay", MAIN), fields("b", "hold", None), fields("c", "replay", BILLING)]
    )
    alone = routine_summary([fields("b", "hold", None)])

    assert [r.get("destination") for r in summary["records"]] == [MAIN, None, BILLING]
    assert "destination" not in summary["records"][1]
    assert "destination" not in alone
    assert (
        routine_summary([fields("a", "replay", MAIN), fields("b", "hold", None)])["destination"]
        == MAIN
    )
