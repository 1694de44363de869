"""`dlq-replay audit` prints what others recorded: whatever text a record holds (its command,
options, error, who), the table shows every control character escaped, reads no markup, and
`--json` stays the exact text."""

from __future__ import annotations

import io
import json
import re
import unicodedata
from pathlib import Path

import pytest
from dlq_replay.audit import AuditOutcome, AuditPhase, AuditRecord, FileAuditStore, Identity, Origin
from dlq_replay.cli.trail import actions_table, visible
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from rich.console import Console

from .support import run_cli

BIDI = frozenset(map(chr, [*range(0x202A, 0x202F), *range(0x2066, 0x206A), 0x200E, 0x200F]))
# What a terminal acts on, mixed into otherwise arbitrary text so every example has some.
CONTROLS = st.sampled_from(
    [
        *("\x1b", "\x1b[2J", "\x1b]0;title\x07", "\r", "\n", "\t", "\x07", "\x7f", "\x9b"),
        *("\x85", "\u2028", "\u2029", "\x00", "[bold]", "[/]"),
        *sorted(BIDI),
    ]
)
STYLE = re.compile(r"\x1b\[[0-9;]*m")  # what rich writes to style a terminal's text
TEXTS = st.lists(st.text(max_size=12) | CONTROLS, max_size=6).map("".join)


def acts_on_a_terminal(char: str) -> bool:
    return unicodedata.category(char) in {"Cc", "Zl", "Zp"} or char in BIDI


def records(command: str, option: str, value: str, error: str, who: str) -> list[AuditRecord]:
    at = "2026-11-29T02:00:00.000000Z"
    identity = Identity(f"arn:aws:sts::123456789012:assumed-role/{who}", "123456789012", who)
    begin = AuditRecord(
        "a1", AuditPhase.BEGIN, at, at, command, Origin.CLI, identity, request={option: value}
    )
    end = AuditRecord(
        "a1",
        AuditPhase.END,
        at,
        at,
        command,
        Origin.CLI,
        identity,
        request={option: [value]},
        queues=(f"https://sqs/1/{value}",),
        outcome=AuditOutcome.INTERRUPTED,
        exit_code=130,
        tally={"moved": 1},
        error=error,
        left=value,
    )
    return [begin, end]


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(command=TEXTS, option=TEXTS, value=TEXTS, error=TEXTS, who=TEXTS)
def test_the_table_shows_no_control_character_whatever_was_recorded(
    tmp_path_factory: pytest.TempPathFactory,
    command: str,
    option: str,
    value: str,
    error: str,
    who: str,
) -> None:
    store = FileAuditStore(tmp_path_factory.mktemp("trail") / "audit.jsonl")
    for record in records(command, option, value, error, who):
        store.write(record)
    out = io.StringIO()
    # As `make_console` prints when stdout is no terminal, and as a terminal would.
    for terminal in (False, True):
        Console(file=out, markup=False, highlight=False, width=120, force_terminal=terminal).print(
            actions_table(store.actions(), f"audit trail: {value}")
        )
    printed = out.getvalue()

    plain = STYLE.sub("", printed)  # the terminal's own styling, rich's, aside
    assert not [ch for ch in plain if ch != "\n" and acts_on_a_terminal(ch)]


def test_visible_escapes_each_control_and_keeps_the_rest() -> None:
    escaped = "a\\x1b[31mb\\u202ec\\x0d\\x0a\\x09\\x9b\\x7f"
    assert visible("a\x1b[31mb\u202ec\r\n\t\x9b\x7f") == escaped
    assert visible("résumé → 東京 [bold]") == "résumé → 東京 [bold]"


def test_recorded_escapes_and_markup_print_as_text_and_json_stays_exact(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path))
    hostile = "\x1b[2J\x1b]0;pwned\x07[bold red]x[/] \u202eevil"
    for record in records("redrive", "filter", hostile, f"boom {hostile}", "Ops/alice"):
        FileAuditStore().write(record)

    table = run_cli(capsys, "audit")
    listed = run_cli(capsys, "audit", "--json")

    assert table.code == 0, table
    assert "\x1b" not in table.out + table.err
    assert "\u202e" not in table.out
    # Each escape as text, the markup too (rich folds the long cells over two lines).
    assert "filter=\\x1b[2J\\x1b]0;pwned\\x07[bold" in table.out, table.out
    assert "boom" in table.out
    assert "red]x[/] \\u202eevil" in table.out, table.out
    (action,) = json.loads(listed.out)["actions"]
    assert action["request"] == {"filter": hostile}
    assert action["error"] == f"boom {hostile}"
    assert action["left"] == hostile
