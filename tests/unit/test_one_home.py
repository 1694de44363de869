"""ARN, queue-URL and FIFO facts have one home, core/queues.py.

Differential: each helper answers what the inline expression it replaced answered (the old
expression is copied here as a lambda, with the file it came from), over arbitrary text. Where
the answers differ, the test says exactly where and why. Then a scan of the package's source
fails when an inline parse comes back.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable
from pathlib import Path

import dlq_replay
import pytest
from dlq_replay.core.queues import (
    Arn,
    arn_account,
    arn_name,
    arn_region,
    arn_resource,
    is_fifo_arn,
    is_fifo_name,
    is_fifo_url,
    queue_name,
    rule_location,
    url_region,
)
from hypothesis import example, given
from hypothesis import strategies as st

# Text made of the pieces that matter (slashes, colons, `.fifo`, ARN and URL parts) in any
# order and number, and plain arbitrary text (unicode, control characters).
PIECES = st.sampled_from(
    ["/", "/", ":", ":", ".fifo", ".", "arn", "aws", "sqs", "https://", "sqs.", "eu-west-1",
     ".amazonaws.com", "123456789012", "orders", "é", "\x00", " ", ""]
)  # fmt: skip
TEXT = st.one_of(st.text(), st.lists(st.one_of(PIECES, st.text(max_size=3))).map("".join))

NAME = st.from_regex(r"[A-Za-z0-9_-]{1,75}(\.fifo)?", fullmatch=True)
REGION = st.from_regex(r"[a-z]{2}(-[a-z]+)?-[0-9]", fullmatch=True)
QUEUE_ARN = st.builds(
    lambda partition, region, name: f"arn:{partition}:sqs:{region}:123456789012:{name}",
    st.sampled_from(["aws", "aws-cn", "aws-us-gov"]),
    REGION,
    NAME,
)
RULE_ARN = st.builds(
    lambda region, bus, rule: f"arn:aws:events:{region}:123456789012:rule/{bus}{rule}",
    REGION,
    st.sampled_from(["", "shop/", "aws.partner/saas.com/a1/"]),
    st.from_regex(r"[A-Za-z0-9_.-]{1,64}", fullmatch=True),
)


def outcome(function: Callable[[str], object], text: str) -> object:
    """What `function` answered, or that it raised (no replaced expression's caller catches)."""
    try:
        return function(text)
    except (IndexError, ValueError):
        return "raised"


# queue_name(url): the replaced expressions that stripped a trailing slash first.
NAME_STRIPPED: list[tuple[str, Callable[[str], str]]] = [
    (
        "sqs/depth.py, breaker/evidence.py, cli/plan.py",
        lambda u: u.rstrip("/").rsplit("/", 1)[-1],
    ),
    ("core/queues.py queue_url_problem", lambda u: u.rstrip("/").rsplit("/", 1)[-1]),
]
# ... and those that did not: a URL with a trailing slash (which queue_url_problem accepts,
# "http://localhost:9324/queue/orders/") was named "" there; it is now named as everywhere.
NAME_UNSTRIPPED: list[tuple[str, Callable[[str], str]]] = [
    ("cli/trail.py, cli/pace_options.py, cli/console/state.py (2)", lambda u: u.rsplit("/", 1)[-1]),
    ("demo/emulator.py", lambda u: u.rsplit("/", maxsplit=1)[-1]),
]


@given(TEXT)
@example("https://sqs.eu-west-1.amazonaws.com/123456789012/orders/")
@example("orders")
@example("///")
def test_a_queue_urls_name_is_what_each_inline_split_said(url: str) -> None:
    for where, old in NAME_STRIPPED:
        assert queue_name(url) == old(url), where
    for where, old in NAME_UNSTRIPPED:
        if url.endswith("/"):
            assert old(url) == "", where
            assert queue_name(url) == old(url.rstrip("/")), where
        else:
            assert queue_name(url) == old(url), where


@given(TEXT)
@example("https://host/1/orders.fifo/")
@example(".fifo")
@example("orders.fifo.x")
def test_fifo_ness_is_what_each_inline_endswith_said(text: str) -> None:
    # notify/sns.py (topic ARN), engine/replayer.py (queue ARN), targets/deliverer.py
    # (target ARN), aws_lambda/replay.py (eventSourceARN): ARNs as is.
    assert is_fifo_arn(text) == text.endswith(".fifo")
    assert is_fifo_name(text) == text.endswith(".fifo")
    # core/queues.py and cli/console/inventory.py, cli/plan.py: URLs. The two in cli/ did not
    # strip a trailing slash, so called a FIFO queue's URL ending in "/" a standard queue's.
    assert is_fifo_url(text) == text.rstrip("/").endswith(".fifo")
    if not text.endswith("/"):
        assert is_fifo_url(text) == text.endswith(".fifo")
    # The name of a URL or ARN tells the same as the whole.
    assert is_fifo_url(text) == is_fifo_name(queue_name(text))
    assert is_fifo_arn(text) == is_fifo_name(arn_name(text))


@given(TEXT)
@example("arn:aws:sqs:eu-west-1:123456789012:orders")
@example("arn:aws:lambda:eu-west-1:123456789012:function:f:live")
@example("arn:aws:sts::123456789012:assumed-role/Ops/alice")
@example("a:b:c:d:e")
def test_an_arns_fields_are_what_each_inline_split_said(text: str) -> None:
    # ops/queueinfo.py (2), cli/console/inventory.py: a queue's name.
    assert arn_name(text) == text.rsplit(":", 1)[-1]
    # cli/trail.py: a caller identity's resource.
    assert arn_resource(text) == text.split(":", 5)[-1]
    # engine/kinds/__init__.py: a record's account.
    assert arn_account(text) == (text.split(":")[4] if text.count(":") >= 5 else None)
    # demo/eventbridge_run.py: `split(":")[4]` of a bus ARN it made itself (all six fields).
    if text.count(":") >= 5:
        assert arn_account(text) == text.split(":")[4]
    # local/eventsource.py: the region; what raised IndexError raises ValueError.
    assert outcome(arn_region, text) == outcome(lambda t: t.split(":")[3], text)


# cli/errors.py's own pattern, as it was.
_OLD_URL_REGION = re.compile(r"^https://sqs\.([a-z0-9-]+)\.amazonaws\.com")


@given(TEXT)
@example("https://sqs.eu-west-1.amazonaws.com/123456789012/orders")
@example("https://sqs.cn-north-1.amazonaws.com.cn/123456789012/orders")
@example("http://sqs.eu-west-1.amazonaws.com/1/q")
@example("https://sqs..amazonaws.com/1/q")
@example("https://sqs.EU-west-1.amazonaws.com/1/q")
@example("https://sqs.eu-west-1.amazonaws.community")
@example("https://sqs.eu-wést-1.amazonaws.com/1/q")
def test_a_urls_region_is_what_the_inline_pattern_said(url: str) -> None:
    found = _OLD_URL_REGION.match(url)
    assert url_region(url) == (found.group(1) if found else None)


@given(QUEUE_ARN, NAME)
def test_a_sibling_queue_arn_is_the_inline_prefix_and_name(arn: str, name: str) -> None:
    # demo/eventbridge_run.py: `f"{target_arn.rsplit(':', 1)[0]}:{name}"`.
    assert Arn.queue(arn).sibling(name) == f"{arn.rsplit(':', 1)[0]}:{name}"


@given(RULE_ARN)
def test_a_rules_bus_arn_is_the_inline_format(rule_arn: str) -> None:
    # targets/deliverer.py: the bus's ARN for a rule on another account's bus.
    region, _, bus = rule_location(rule_arn)
    arn = Arn.parse(rule_arn)
    old = f"arn:{arn.partition}:events:{region}:{arn.account}:event-bus/{bus or 'default'}"
    assert arn.sibling(f"event-bus/{bus or 'default'}") == old


# ---- the scan -------------------------------------------------------------------------------

PACKAGE = Path(dlq_replay.__file__).parent
HOME = PACKAGE / "core" / "queues.py"
# Parses that look like these but are of something else: (file, source text of the call, why).
ALLOWED = {
    ("consumer/visibility.py", 'origin.string_value.rsplit("/", 1)'): (
        "the origin attribute `<first message id>/<attempt>`, no URL"
    ),
    ("core/decision.py", 'text.rsplit("/", 1)'): (
        "the origin attribute `<first message id>/<attempt>`, no URL"
    ),
}
# From the right, a "/" or ":" split takes a name off a URL or ARN; from the left, a "/" split
# reads a path (the console's token prefix, an S3 URI, a credential scope), a ":" one an ARN.
_SPLITS = {"split": (":",), "partition": (":",), "rsplit": ("/", ":"), "rpartition": ("/", ":")}
_SUFFIXES = {"endswith", "removesuffix", "startswith"}
_PATTERN_CALLS = {"compile", "match", "fullmatch", "search", "findall", "sub"}
_ARN_OR_URL = re.compile(r"arn:|amazonaws|:sqs:")


def inline_parses(source: str) -> list[str]:
    """The source text of each call or f-string in `source` that parses or builds an ARN, a
    queue URL or FIFO-ness by itself."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.JoinedStr):
            head = node.values[0] if node.values else None
            if isinstance(head, ast.Constant) and str(head.value).startswith("arn:"):
                found.append(ast.get_source_segment(source, node) or "")
            continue
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
            continue
        method = node.func.attr
        texts = [
            part.value
            for arg in node.args[:1]
            for part in (arg.elts if isinstance(arg, ast.Tuple) else [arg])
            if isinstance(part, ast.Constant) and isinstance(part.value, str)
        ]
        if (
            (method in _SPLITS and any(text in _SPLITS[method] for text in texts))
            or (method in _SUFFIXES and any(".fifo" in text for text in texts))
            or (method in _PATTERN_CALLS and any(_ARN_OR_URL.search(text) for text in texts))
        ):
            found.append(ast.get_source_segment(source, node) or "")
    return found


@pytest.mark.parametrize(
    "source",
    [
        'name = url.rstrip("/").rsplit("/", 1)[-1]',
        'name = url.rsplit("/", maxsplit=1)[-1]',
        'account = arn.split(":")[4]',
        'resource = arn.split(":", 5)[-1]',
        'prefix = arn.rsplit(":", 1)[0]',
        'bus, _, name = resource.rpartition("/")',
        'fifo = url.endswith(".fifo")',
        'fifo = arn.endswith((".fifo", "x"))',
        'PATTERN = re.compile(r"arn:aws:sqs:(.*)")',
        'REGION = re.compile(r"^https://sqs\\.([a-z0-9-]+)\\.amazonaws\\.com")',
        'arn = f"arn:{partition}:sqs:{region}:{account}:{name}"',
    ],
)
def test_the_scan_sees_each_inline_form(source: str) -> None:
    assert inline_parses(source), source


@pytest.mark.parametrize(
    "source",
    [
        'services = prog.rsplit(" ", 1)[-1]',
        'owner, _, name = field.rpartition(".")',
        'bucket, _, key = uri.removeprefix("s3://").partition("/")',
        'scope = credential.split("/")',
        "name = queue_name(url)",
        'PATTERN = r"^$|^arn:aws[a-z-]*:sqs:"  # a template constraint, compiled nowhere',
    ],
)
def test_the_scan_passes_what_is_no_inline_parse(source: str) -> None:
    assert inline_parses(source) == []


def test_no_inline_parse_of_an_arn_a_url_or_fifo_outside_its_home() -> None:
    found = [
        f"{path.relative_to(PACKAGE)}: {call}"
        for path in sorted(PACKAGE.rglob("*.py"))
        if path != HOME
        for call in inline_parses(path.read_text(encoding="utf-8"))
        if (str(path.relative_to(PACKAGE)), call) not in ALLOWED
    ]
    assert found == [], "parse these with dlq_replay.core.queues:\n" + "\n".join(found)


def test_every_allowed_parse_is_still_there() -> None:
    """An allow-list entry whose call is gone would let a real parse back in unseen."""
    for path, call in ALLOWED:
        assert call in inline_parses((PACKAGE / path).read_text(encoding="utf-8")), path
