"""Transform a SAM template into plain CloudFormation, offline.

Uses aws-sam-translator, the library behind the `AWS::Serverless-2016-10-31` transform, so
the result is what CloudFormation would deploy: cfn-lint can check it and tests can assert
on it. Nothing is sent to AWS. The translator still wants a region (the partition of the
ARNs it generates follows it), taken from ``--region``, ``AWS_DEFAULT_REGION`` or
``us-east-1``.

    python tools/transform_template.py template.yaml -o build/transformed.json
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

DEFAULT_REGION = "us-east-1"
# Local code paths are replaced by S3 locations in this bucket, keeping the path as the key,
# as `sam package` would (the translator accepts nothing else).
LOCAL_ARTIFACT_BUCKET = "local-artifacts"
# Resource type -> property that may hold a local path.
LOCAL_PATH_PROPERTIES = {
    "AWS::Serverless::Function": "CodeUri",
    "AWS::Serverless::LayerVersion": "ContentUri",
    "AWS::Serverless::Api": "DefinitionUri",
    "AWS::Serverless::HttpApi": "DefinitionUri",
    "AWS::Serverless::StateMachine": "DefinitionUri",
}


class OfflineManagedPolicyLoader:
    """Stands in for samtranslator's ManagedPolicyLoader, which lists policies through IAM.

    The translator resolves managed policy names from the map bundled with it first and asks
    the loader only for names it does not know; offline there is nothing more to offer.
    """

    def load(self) -> dict[str, str]:
        return {}


def load_template(path: Path) -> dict[str, Any]:
    """Parse a CloudFormation/SAM YAML or JSON template, short-form intrinsics included."""
    from samtranslator.yaml_helper import yaml_parse  # noqa: PLC0415 (needs the region set)

    parsed = yaml_parse(path.read_text(encoding="utf-8"))
    if not isinstance(parsed, dict):
        raise TypeError(f"{path}: a template is a mapping, got {type(parsed).__name__}")
    return parsed


def replace_local_paths(template: dict[str, Any]) -> None:
    """Point local CodeUri/ContentUri/DefinitionUri paths at s3://local-artifacts/<path>."""
    resources = template.get("Resources", {})
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


def transform_template(
    path: Path,
    parameter_values: dict[str, Any] | None = None,
    region: str | None = None,
) -> dict[str, Any]:
    """Return the CloudFormation template the SAM transform makes of the template at path."""
    os.environ.setdefault("AWS_DEFAULT_REGION", region or DEFAULT_REGION)
    if region is not None:
        os.environ["AWS_DEFAULT_REGION"] = region

    # Imported late: the translator reads the region when its modules first use boto3.
    from samtranslator.translator.transform import transform  # noqa: PLC0415

    template = load_template(path)
    replace_local_paths(template)
    result = transform(template, dict(parameter_values or {}), OfflineManagedPolicyLoader())
    if not isinstance(result, dict):
        raise TypeError(f"the SAM translator returned {type(result).__name__}, not a mapping")
    return result


def _parse_parameter(text: str) -> tuple[str, str]:
    name, sep, value = text.partition("=")
    if not sep or not name:
        raise argparse.ArgumentTypeError(f"expected NAME=VALUE, got {text!r}")
    return name, value


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("template", type=Path, help="SAM template (YAML or JSON)")
    parser.add_argument("-o", "--output", type=Path, help="write JSON here instead of stdout")
    parser.add_argument("--region", help=f"defaults to AWS_DEFAULT_REGION, else {DEFAULT_REGION}")
    parser.add_argument(
        "--parameter",
        action="append",
        default=[],
        type=_parse_parameter,
        metavar="NAME=VALUE",
        help="parameter value handed to the translator (repeatable)",
    )
    args = parser.parse_args(argv)

    from samtranslator.model.exceptions import InvalidDocumentException  # noqa: PLC0415

    try:
        result = transform_template(args.template, dict(args.parameter), args.region)
    except InvalidDocumentException as exc:
        for cause in exc.causes:
            print(f"{args.template}: {cause.message}", file=sys.stderr)
        return 1
    text = json.dumps(result, indent=2, sort_keys=False) + "\n"
    if args.output is None:
        sys.stdout.write(text)
    else:
        args.output.parent.mkdir(parents=True, exist_ok=True)
        args.output.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
