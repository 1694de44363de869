"""The repository root on sys.path, for the tools the integration tests drive
(tools/record_sqs_corpus.py replays the SQS corpus); tools/ is a development package of the
repository, not of the installed distribution."""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))
