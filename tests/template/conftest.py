"""Fixtures for the template tests: template.yaml parsed and transformed once per session."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
# tools/ is a development package of the repository, not of the installed distribution.
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from tools.transform_template import (  # noqa: E402 (needs the path above)
    load_template,
    transform_template,
)


@pytest.fixture(scope="session")
def root() -> Path:
    return ROOT


@pytest.fixture(scope="session")
def sam_template() -> dict[str, Any]:
    """template.yaml as written (SAM resources, short-form intrinsics expanded)."""
    return load_template(ROOT / "template.yaml")


@pytest.fixture(scope="session")
def cfn() -> dict[str, Any]:
    """template.yaml after the SAM transform: what CloudFormation deploys."""
    return transform_template(ROOT / "template.yaml", region="us-east-1")
