"""Charts as server-side SVG: bars as numbers the template draws (autoescaped like the rest), no
script, no library in the page."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

WIDTH = 420
BAR_HEIGHT = 18
GAP = 6
LABEL_WIDTH = 170


@dataclass(frozen=True, slots=True)
class Bar:
    label: str
    count: int
    x: int
    y: int
    width: int
    text_y: int


@dataclass(frozen=True, slots=True)
class Chart:
    title: str
    bars: tuple[Bar, ...]
    width: int
    height: int
    label_width: int


def bar_chart(title: str, counts: Sequence[tuple[str, int]]) -> Chart:
    """Horizontal bars, one per (label, count), scaled to the largest."""
    top = max((count for _, count in counts), default=0) or 1
    span = WIDTH - LABEL_WIDTH - 60
    bars = tuple(
        Bar(
            label=label if len(label) <= 28 else label[:27] + "…",
            count=count,
            x=LABEL_WIDTH,
            y=index * (BAR_HEIGHT + GAP),
            width=max(1 if count else 0, round(span * count / top)),
            text_y=index * (BAR_HEIGHT + GAP) + BAR_HEIGHT - 5,
        )
        for index, (label, count) in enumerate(counts)
    )
    height = max(BAR_HEIGHT, len(bars) * (BAR_HEIGHT + GAP))
    return Chart(title, bars, WIDTH, height, LABEL_WIDTH)
