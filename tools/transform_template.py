"""Transform a SAM template into plain CloudFormation, offline.

Runs aws-sam-translator, the library behind the `AWS::Serverless-2016-10-31` transform, so
the result is what CloudFormation would deploy: cfn-lint can check it and tests can assert
on it. Nothing is sent to AWS. The translator still wants a region (the partition of the
ARNs it generates follows it): ``--region``, else ``AWS_DEFAULT_REGION``, else us-east-1.
Local code paths (``CodeUri: functions/replay/``) become ``s3://local-artifacts/<path>``, as
`sam package` would upload them; the translator accepts nothing else.

    python tools/transform_template.py template.yaml -o build/transformed.json
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

import boto3

DEFAULT_REGION = "us-east-1"
LOCAL_ARTIFACT_BUCKET = "local-artifacts"
# Resource type -> the property that may name a local path.
LOCAL_PATH_PROPERTIES = {
    "AWS::Serverless::Function": "CodeUri",
    "AWS::Serverless::LayerVersion": "ContentUri",
    "AWS::Serverless::Api": "DefinitionUri",
    "AWS::Serverless::HttpApi": "DefinitionUri",
    "AWS::Serverless::StateMachine": "DefinitionUri",
}


class TransformError(Exception):
    """The SAM translator refused the template; the message lists its reasons."""


class OfflineManagedPolicyLoader:
    """Stands in for samtranslator's ManagedPolicyLoader, which lists policies through IAM.

    The translator resolves managed policy names from the map bundled with it first and asks
    the loader only for names it does not know; offline there is nothing more to offer.
    """

    def load(self) -> dict[str, str]:
        return {}


def load_template(path: Path) -> dict[str, Any]:
    """Parse a YAML or JSON template, short-form intrinsics (!Ref, !If, ...) included."""
    from samtranslator.yaml_helper import yaml_parse

    parsed = yaml_parse(path.read_text(encoding="utf-8"))
    if not isinstance(parsed, dict):
        raise TransformError(f"{path}: a template is a mapping, got {type(parsed).__name__}")
    return parsed


def replace_local_paths(template: dict[str, Any]) -> None:
    """Point local CodeUri/ContentUri/DefinitionUri paths at s3://local-artifacts/<path>."""
    resources = template.get("Resources")
    if not isinstance(resources, dict):
        return
    for resource in resources.values():
        if not isinstance(resource, dict):
            continue
        prop = LOCAL_PATH_PROPERTIES.get(str(resource.get("Type")))
        properties = resource.get("Properties")
        if prop is None or not isinstance(properties, dict):
            continue
        if prop == "CodeUri" and properties.get("PackageType", "Zip") != "Zip":
            continue
        value = properties.get(prop)
        if isinstance(value, str) and not value.startswith("s3://"):
            properties[prop] = f"s3://{LOCAL_ARTIFACT_BUCKET}/{value}"


def transform(
    template: dict[str, Any],
    parameter_values: dict[str, Any] | None = None,
    region: str | None = None,
) -> dict[str, Any]:
    """Return the CloudFormation template the SAM transform makes of a parsed SAM template."""
    from samtranslator.model.exceptions import InvalidDocumentException
    from samtranslator.parser.parser import Parser
    from samtranslator.public.translator import Translator

    region = region or os.environ.get("AWS_DEFAULT_REGION") or DEFAULT_REGION
    loader = OfflineManagedPolicyLoader()
    # The session only carries the region (AWS::Region, AWS::Partition, generated ARNs).
    translator = Translator(None, Parser(), boto_session=boto3.session.Session(region_name=region))
    try:
        result = translator.translate(
            template,
            parameter_values=dict(parameter_values or {}),
            get_managed_policy_map=loader.load,
        )
    except InvalidDocumentException as exc:
        reasons = "; ".join(str(cause.message) for cause in exc.causes)
        raise TransformError(reasons or str(exc)) from exc
    if not isinstance(result, dict):
        raise TransformError(f"the SAM translator returned {type(result).__name__}")
    return result


def transform_template(
    path: Path,
    parameter_values: dict[str, Any] | None = None,
    region: str | None = None,
) -> dict[str, Any]:
    """Load the SAM template at path, point its local paths at S3 and transform it."""
    template = load_template(path)
    replace_local_paths(template)
    return transform(template, parameter_values, region)


def _parse_parameter(text: str) -> tuple[str, str]:
    name, sep, value = text.partition("=")
    if not sep or not name:
        raise argparse.ArgumentTypeError(f"expected NAME=VALUE, got {text!r}")
    return name, value


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description="Transform a SAM template into CloudFormation JSON, offline."
    )
    parser.add_argument("template", type=Path, help="SAM template (YAML or JSON)")
    parser.add_argument("-o", "--output", type=Path, help="write the JSON here, not to stdout")
    parser.add_argument("--region", help=f"default: AWS_DEFAULT_REGION, else {DEFAULT_REGION}")
    parser.add_argument(
        "--parameter",
        action="append",
        default=[],
        type=_parse_parameter,
        metavar="NAME=VALUE",
        help="a parameter value for the translator (repeatable)",
    )
    args = parser.parse_args(argv)
    try:
        result = transform_template(args.template, dict(args.parameter), args.region)
    except (TransformError, OSError) as exc:
        print(f"{args.template}: {exc}", file=sys.stderr)
        return 1
    text = json.dumps(result, indent=2) + "\n"
    if args.output is None:
        sys.stdout.write(text)
    else:
        args.output.parent.mkdir(parents=True, exist_ok=True)
        args.output.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
