"""`dlq-replay audit` reads what was followed (docs/operator-audit.md, "Did it work"): each move
(redrive, import) gets its `followed` cell and `--json` object from the follow records beside the
trail (the stack's table here, on moto), read in one `follows` call for the listed moves; other
actions get no key; a move with no record says `not followed`. `--follow ID` waits for the move
to settle: here in process, on the table, with returns counted while it waits."""

from __future__ import annotations

import re
import threading
import time
import uuid
from datetime import datetime
from typing import TYPE_CHECKING, Any

import boto3
import pytest
from dlq_replay.follow.tables import DynamoFollowStore
from dlq_replay.follow.tag import FollowTag

from .stack import deploy
from .support import assert_one_line_error, finished_action, park, run_cli

if TYPE_CHECKING:
    from mypy_boto3_cloudformation import CloudFormationClient
    from mypy_boto3_sqs import SQSClient

pytestmark = pytest.mark.moto_only(reason="a stack with its table, deployed into moto")

MOVE_KEYS = {"sent", "returned", "untracked", "settled_at"}
FOLLOWED = re.compile(
    r"sent [0-9,]+ · returned [0-9,]+ · untracked [0-9,]+ · "
    r"(settled [0-9: -]+|settling until [0-9: -]+|sending)"
)


@pytest.fixture
def shop(aws: None) -> dict[str, str]:
    cfn: CloudFormationClient = boto3.client("cloudformation")
    return deploy(cfn, "shop")


@pytest.fixture
def table(shop: dict[str, str]) -> str:
    return shop["AuditTableName"]


def recorded(table: str, command: str, *, ago: float = 60.0) -> str:
    """A finished CLI action of `command` in the trail; its id."""
    return finished_action(boto3.client("dynamodb"), table, command, ago=ago)


def followed_move(
    table: str,
    action_id: str,
    *,
    sent: int,
    untracked: int = 0,
    window: int,
    ended_ago: float | None,
    returned: int = 0,
) -> DynamoFollowStore:
    """The move's follow record as the moves write it: started, sent, (ended), returns."""
    store = DynamoFollowStore(boto3.client("dynamodb"), table)
    now = time.time()
    store.started(action_id, window, now - 3600, command="redrive")
    store.sent(action_id, sent, untracked)
    if ended_ago is not None:
        store.finished(action_id, now - ended_ago)
    at = now - (ended_ago or 0.0)
    store.returns([FollowTag(action_id, f"m-{i}") for i in range(returned)], at)
    return store


def clock(at: float) -> str:
    """A time as the audit writes it: `14:32` today (UTC), with its date on another day."""
    same_day = time.gmtime(at)[:3] == time.gmtime()[:3]
    return time.strftime("%H:%M" if same_day else "%Y-%m-%d %H:%M", time.gmtime(at))


def listed(capsys: pytest.CaptureFixture[str], *options: str) -> dict[str, dict[str, Any]]:
    result = run_cli(capsys, "audit", "--json", "--stack", "shop", *options)
    assert result.code == 0, result
    return {action["action_id"]: action for action in result.json()["actions"]}


def test_each_move_gets_its_followed_object_and_other_actions_get_none(
    capsys: pytest.CaptureFixture[str], table: str
) -> None:
    settled = recorded(table, "redrive", ago=7200)
    followed_move(table, settled, sent=1000, window=60, ended_ago=3000, returned=120)
    settling = recorded(table, "import", ago=600)
    followed_move(table, settling, sent=40, untracked=2, window=3600, ended_ago=10, returned=3)
    sending = recorded(table, "redrive", ago=30)
    followed_move(table, sending, sent=7, window=60, ended_ago=None)
    native = recorded(table, "redrive", ago=20)  # SQS's own move task: no follow record
    paused = recorded(table, "pause", ago=10)

    actions = listed(capsys)

    first = actions[settled]["followed"]
    assert set(first) == MOVE_KEYS
    assert (first["sent"], first["returned"], first["untracked"]) == (1000, 120, 0)
    # settled a window after its last return (at the sending's end here), to the second.
    ended = datetime.fromisoformat(first["settled_at"].replace("Z", "+00:00")).timestamp()
    assert abs(ended - (time.time() - 3000 + 60)) < 5
    assert actions[settling]["followed"] == {
        "sent": 40,
        "returned": 3,
        "untracked": 2,
        "settled_at": None,
    }
    assert actions[sending]["followed"]["settled_at"] is None
    assert actions[native]["followed"] is None
    assert "followed" not in actions[paused]


def test_the_table_has_a_followed_column_with_the_same_words(
    capsys: pytest.CaptureFixture[str], table: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "400")  # one line a row, to read the cells whole
    settled = recorded(table, "redrive", ago=7200)
    followed_move(table, settled, sent=1000, window=60, ended_ago=3000, returned=120)
    settling = recorded(table, "import", ago=600)
    followed_move(table, settling, sent=40, window=3600, ended_ago=10)
    recorded(table, "redrive", ago=20)  # native: no follow record
    recorded(table, "pause", ago=10)

    result = run_cli(capsys, "audit", "--stack", "shop")

    assert result.code == 0, result
    rows = [line.split("│") for line in result.out.splitlines() if "│" in line]
    assert "┃ followed " in result.out, result.out
    cells = {row[2].strip() + " " + row[-2].strip() for row in rows}
    ended, until = clock(time.time() - 3000 + 60), clock(time.time() - 10 + 3600)
    assert cells == {
        f"redrive sent 1,000 · returned 120 · untracked 0 · settled {ended}",
        f"import sent 40 · returned 0 · untracked 0 · settling until {until}",
        "redrive not followed",
        "pause ",
    }, result.out


def test_a_table_of_moves_none_followed_says_so_in_one_line_instead_of_a_column(
    capsys: pytest.CaptureFixture[str], table: str
) -> None:
    recorded(table, "redrive", ago=20)  # native: no follow record
    recorded(table, "pause", ago=10)

    result = run_cli(capsys, "audit", "--stack", "shop")

    assert result.code == 0, result
    assert "┃ followed" not in result.out, result.out
    assert result.out.splitlines()[-1] == (
        "followed: not followed, the move listed (SQS's own move task cannot carry the "
        "action's id; a move recorded before following existed has none either)"
    )


def test_the_follow_records_are_read_for_the_listed_moves_only(
    capsys: pytest.CaptureFixture[str], table: str
) -> None:
    """The follow records are read for the listed moves only (one `follows` call: one
    BatchGetItem for the three moves' summaries and shards), none for a pause; counted at
    botocore's boundary."""
    moves = [recorded(table, "redrive", ago=100 + i) for i in range(3)]
    for action_id in moves:
        followed_move(table, action_id, sent=5, window=60, ended_ago=10)
    for i in range(4):
        recorded(table, "pause", ago=10 + i)
    queries: list[str] = []
    batches: list[int] = []

    def count(params: dict[str, Any], **_: Any) -> None:
        value = params.get("ExpressionAttributeValues", {}).get(":p", {}).get("S", "")
        queries.append(value)

    def count_keys(params: dict[str, Any], **_: Any) -> None:
        keys = [key for asked in params["RequestItems"].values() for key in asked["Keys"]]
        batches.append(len(keys))
        queries.extend(key["pk"]["S"] for key in keys)

    from dlq_replay.cli import deployment

    original = deployment.make_client

    def make_client(args: Any, service: str) -> Any:
        client = original(args, service)
        if service == "dynamodb":
            client.meta.events.register("provide-client-params.dynamodb.Query", count)
            client.meta.events.register("provide-client-params.dynamodb.BatchGetItem", count_keys)
        return client

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(deployment, "make_client", make_client)
        actions = listed(capsys)

    assert all(actions[m]["followed"]["sent"] == 5 for m in moves)
    follow_reads = sorted({q for q in queries if q.startswith("follow#")})
    assert follow_reads == sorted(f"follow#{m}" for m in moves)
    assert batches == [3 * 17]  # each move's summary and 16 shards, in one request


def test_a_real_redrive_is_followed_and_its_returns_show_in_the_trail(
    capsys: pytest.CaptureFixture[str], shop: dict[str, str], sqs: SQSClient, table: str
) -> None:
    """End to end on moto: the redrive writes its follow record, the trail reads it back."""
    park(sqs, shop["OperatorQueueUrl"], ["a", "b", "c"])
    moved = run_cli(
        capsys, "redrive", "--stack", "shop", "--wait-seconds", "0", "--client-side", "--json"
    )
    assert moved.code == 0, moved
    action_id = moved.json()["action_id"]
    DynamoFollowStore(boto3.client("dynamodb"), table).returns(
        [FollowTag(action_id, "k1"), FollowTag(action_id, "k1")], time.time()
    )

    followed = listed(capsys)[action_id]["followed"]

    assert (followed["sent"], followed["returned"], followed["untracked"]) == (3, 1, 0)
    assert followed["settled_at"] is None  # the main queue's window has not passed


def test_follow_prints_each_return_and_exits_1_once_settled_with_returns(
    capsys: pytest.CaptureFixture[str], table: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    action_id = recorded(table, "redrive")
    window = 3
    store = followed_move(table, action_id, sent=1000, window=window, ended_ago=0.0)
    reads = threading.Condition()
    seen = [0]  # the command's reads of the move so far

    def counted(**_: Any) -> None:
        with reads:
            seen[0] += 1
            reads.notify_all()

    from dlq_replay.cli import deployment

    original = deployment.make_client

    def make_client(args: Any, service: str) -> Any:
        client = original(args, service)
        if service == "dynamodb":
            client.meta.events.register("after-call.dynamodb.BatchGetItem", counted)
        return client

    monkeypatch.setattr(deployment, "make_client", make_client)
    last_return = [0.0]

    def after_a_read() -> None:
        with reads:
            now = seen[0]
            assert reads.wait_for(lambda: seen[0] > now, timeout=20)

    def come_back() -> None:
        after_a_read()  # the command is waiting
        store.returns([FollowTag(action_id, f"a{i}") for i in range(3)], time.time())
        after_a_read()  # it read the first three back
        last_return[0] = time.time()
        store.returns([FollowTag(action_id, f"b{i}") for i in range(2)], last_return[0])

    returns = threading.Thread(target=come_back)
    returns.start()
    result = run_cli(
        capsys, "audit", "--stack", "shop", "--follow", action_id, "--poll-seconds", "0.1"
    )
    ended = time.time()
    returns.join()

    assert result.code == 1, result
    lines = result.out.splitlines()
    assert lines[0].startswith(f"following action {action_id} (redrive): sent 1,000"), lines
    # Each change once, as `+N returned (TOTAL of SENT)`: the increments add up to each total
    # (a batch's keys go to their shards one write each, so a read may see part of a batch).
    progress = [
        re.fullmatch(r"\+([0-9]+) returned \(([0-9]+) of 1,000\)", line) for line in lines[1:-1]
    ]
    assert all(progress), lines
    steps = [(int(m.group(1)), int(m.group(2))) for m in progress if m]
    totals = [total for _, total in steps]
    assert [sum(n for n, _ in steps[: i + 1]) for i in range(len(steps))] == totals, lines
    assert totals[-1] == 5, lines
    assert 3 in totals, lines  # read between the two batches too
    assert re.fullmatch(r"settled at [0-9]{2}:[0-9]{2}: 5 of 1,000 came back", lines[-1]), lines
    assert ended >= last_return[0] + window  # the window after the last return, not less


def test_follow_exits_0_when_the_move_settled_with_nothing_back_and_json_is_one_object(
    capsys: pytest.CaptureFixture[str], table: str
) -> None:
    action_id = recorded(table, "import")
    followed_move(table, action_id, sent=12, window=5, ended_ago=60)

    result = run_cli(capsys, "audit", "--stack", "shop", "--follow", action_id, "--json")

    assert result.code == 0, result
    answer = result.json()
    assert answer["outcome"] == "settled"
    assert answer["action_id"] == action_id
    assert answer["followed"]["returned"] == 0
    assert answer["followed"]["settled_at"] is not None
    assert set(answer["followed"]) == MOVE_KEYS


@pytest.mark.parametrize(
    ("command", "fragment"),
    [("pause", "is a pause, not a move"), ("redrive", "is not followed: a native redrive")],
)
def test_follow_of_an_action_with_nothing_to_follow_is_one_line_exit_2(
    capsys: pytest.CaptureFixture[str], table: str, command: str, fragment: str
) -> None:
    action_id = recorded(table, command)

    result = run_cli(capsys, "audit", "--stack", "shop", "--follow", action_id)

    assert_one_line_error(result, 2, action_id, fragment)


def test_follow_of_an_id_nobody_recorded_is_one_line_exit_2(
    capsys: pytest.CaptureFixture[str], table: str
) -> None:
    result = run_cli(capsys, "audit", "--stack", "shop", "--follow", uuid.uuid4().hex)

    assert_one_line_error(result, 2, "no move", "is followed beside DynamoDB table")


@pytest.mark.parametrize("value", ["0", "0.05", "301", "nan", "soon", "-1"])
def test_wrong_poll_seconds_are_one_line(
    capsys: pytest.CaptureFixture[str], aws: None, value: str
) -> None:
    result = run_cli(capsys, "audit", "--follow", "abc", f"--poll-seconds={value}")
    assert_one_line_error(result, 2, "--poll-seconds")
