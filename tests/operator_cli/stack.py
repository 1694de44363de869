"""A small CloudFormation stack for moto with template.yaml's output names: the stand-in of
tools/standin_stack.py, deployed."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from mypy_boto3_cloudformation import CloudFormationClient

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from tools.standin_stack import FUNCTION_ENVIRONMENT, template  # noqa: E402

__all__ = ["FUNCTION_ENVIRONMENT", "ROOT", "deploy", "template", "template_output_names"]


def deploy(cfn: CloudFormationClient, name: str, *, create_main: bool = True) -> dict[str, str]:
    """Create the stack; returns its outputs."""
    cfn.create_stack(StackName=name, TemplateBody=json.dumps(template(create_main=create_main)))
    stack = cfn.describe_stacks(StackName=name)["Stacks"][0]
    assert stack["StackStatus"] == "CREATE_COMPLETE", stack
    return {o["OutputKey"]: o["OutputValue"] for o in stack.get("Outputs", [])}


def template_output_names() -> set[str]:
    """The output names of the real template.yaml (top-level keys of its Outputs section)."""
    text = (ROOT / "template.yaml").read_text()
    section = text.split("\nOutputs:\n", 1)[1]
    names: set[str] = set()
    for line in section.splitlines():
        if line and not line.startswith(" ") and not line.startswith("#"):
            break  # the next top-level section
        if match := re.fullmatch(r"  ([A-Za-z0-9]+):\s*", line):
            names.add(match.group(1))
    return names
