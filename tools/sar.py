"""What the Serverless Application Repository gets: its README, its template, its sharing.

`make package` writes both files under build/sar/ from the project's own (README.md,
docs/deploying.md and `sam build`'s template), so nothing is kept by hand twice:
- the README is made of the sections a SAR page needs (README.md's architecture;
  docs/deploying.md's install, parameters, outputs, security), with every link made absolute
  to the released tag;
- the template points its Metadata at that README, the LICENSE and the release's source, and
  leaves out what SAR refuses (`SAR_UNSUPPORTED`).
"""

from __future__ import annotations

import argparse
import os
import posixpath
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

DEFAULT_SOURCE_CODE_URL = "https://github.com/sqs-dlq-replay/sqs-dlq-replay"
APPLICATION = "AWS::ServerlessRepo::Application"
# The sections a SAR page shows, in this order (jlhood's: architecture, install, parameters,
# outputs, security), each from the file that holds it (paths from the repository's root).
README = "README.md"
DEPLOYING = "docs/deploying.md"
SAR_SECTIONS: tuple[tuple[str, str], ...] = (
    (README, "Architecture"),
    (DEPLOYING, "Install and deploy"),
    (DEPLOYING, "Parameters"),
    (DEPLOYING, "Outputs"),
    (DEPLOYING, "Security"),
)
# Properties SAR refuses at publish time, by resource type: (property, what leaving it out
# changes). SAR validates AWS::Serverless::Function against its own copy of SAM's schema,
# which lags SAM: it refused FunctionUrlConfig (aws-sam-cli#3987, serverless-application-model
# #2421) and SnapStart (aws-sam-cli#4531) months after SAM had them, with "property X not
# defined for resource of type AWS::Serverless::Function". LoggingConfig and RecursiveLoop are
# newer still, and SAR documents no support for them: the SAR template leaves them out.
SAR_UNSUPPORTED: dict[str, tuple[tuple[str, str], ...]] = {
    "AWS::Serverless::Function": (
        (
            "LoggingConfig",
            "the function logs to /aws/lambda/<function>, which ReplayLogGroup now names (same "
            "retention; Powertools writes JSON at INFO, as LoggingConfig set)",
        ),
        (
            "RecursiveLoop",
            "Lambda's loop detection applies: a message replayed through its own DLQ more than "
            "16 times is stopped and reaches the operator queue by the DLQ's redrive policy",
        ),
    ),
}
# The log group the function writes to without LoggingConfig, and the event source that must
# not invoke the function before it exists (Lambda would create it, without retention, and
# the stack would then fail to create it).
_LOG_GROUP, _FUNCTION, _EVENT_SOURCE = (
    "ReplayLogGroup",
    "ReplayFunction",
    "ReplayFunctionDeadLetterQueueEvent",
)
_LOCAL_PATHS = {
    "AWS::Serverless::Function": "CodeUri",
    "AWS::Serverless::LayerVersion": "ContentUri",
}
_LINK = re.compile(r"\]\(([^)\s]+)\)")


class SarError(Exception):
    """The SAR files cannot be made; the message is the one line to print."""


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def sar_readme(documents: Mapping[str, str], source_code_url: str, version: str) -> str:
    """The SAR page's README: README.md's title and opening paragraph, then `SAR_SECTIONS`,
    with links that work outside the repository (SAR shows the README on its own page).

    `documents` maps a path from the repository's root to its text.
    """
    split = {path: _split_sections(text) for path, text in documents.items()}
    missing = [
        f"{title} ({path})"
        for path, title in SAR_SECTIONS
        if title not in split.get(path, ("", {}))[1]
    ]
    if missing:
        raise SarError(f"no section {', '.join(missing)}")
    opening = split[README][0].split("\n\n")[:2]  # the title and what it does
    body = [(path, split[path][1][title]) for path, title in SAR_SECTIONS]
    tree = f"{source_code_url}/tree/v{version}"
    blob = f"{source_code_url}/blob/v{version}"
    footer = (
        f"## More\n\nThe operator CLI (`dlq-replay`), the worker that runs outside Lambda, "
        f"backoff planning, observability and the full documentation: [the project's README]"
        f"({blob}/README.md). Source of this version: {tree}.\n"
    )
    headings = "\n".join(section for _, section in body)
    local = {slug(h) for h in re.findall(r"^#{2,4} (.+)$", headings, re.MULTILINE)}

    def absolute(path: str, section: str) -> str:
        def link(match: re.Match[str]) -> str:
            target = match.group(1)
            if re.match(r"[a-z]+:", target):
                return match.group(0)
            if target.startswith("#"):
                return match.group(0) if target[1:] in local else f"]({blob}/{path}{target})"
            return (
                f"]({blob}/{posixpath.normpath(posixpath.join(posixpath.dirname(path), target))})"
            )

        return _LINK.sub(link, section)

    sections = [absolute(path, section) for path, section in body]
    return "\n\n".join([*opening, *sections]).rstrip() + "\n\n" + footer


def _split_sections(readme: str) -> tuple[str, dict[str, str]]:
    """The text before the first `## ` heading, and each `## ` section by its title."""
    parts = re.split(r"^(?=## )", readme, flags=re.MULTILINE)
    sections = {}
    for part in parts[1:]:
        title = part.splitlines()[0][3:].strip()
        sections[title] = part.rstrip()
    return parts[0], sections


def read_documents(root: Path) -> dict[str, str]:
    """The files `SAR_SECTIONS` draws from, by their path from the repository's root."""
    return {path: (root / path).read_text(encoding="utf-8") for path, _ in SAR_SECTIONS}


def write_readme(root: Path, output: Path, source_code_url: str, version: str) -> None:
    output.parent.mkdir(parents=True, exist_ok=True)
    text = sar_readme(read_documents(root), source_code_url, version)
    output.write_text(text, encoding="utf-8")


def sar_template(
    template: dict[str, Any],
    *,
    rebase: Path,
    readme: str,
    license_file: str,
    source_code_url: str,
    home_page_url: str,
    version: str,
) -> tuple[dict[str, Any], list[str]]:
    """The template to package for SAR, and one line per property it left out.

    `rebase` is the folder local code paths are relative to, seen from the output's folder.
    """
    application = template.get("Metadata", {}).get(APPLICATION)
    if not isinstance(application, dict):
        raise SarError(f"the template has no Metadata {APPLICATION}")
    if str(application.get("SemanticVersion")) != version:
        raise SarError(
            f"the template's SemanticVersion {application.get('SemanticVersion')} is not "
            f"__version__ {version}: run `make release VERSION=...` or check-version"
        )
    application.update(
        ReadmeUrl=readme,
        LicenseUrl=license_file,
        SourceCodeUrl=f"{source_code_url}/tree/v{version}",
        HomePageUrl=home_page_url,
    )
    removed = []
    for name, resource in template.get("Resources", {}).items():
        kind = resource.get("Type")
        properties = resource.get("Properties", {})
        path_key = _LOCAL_PATHS.get(kind)
        if path_key and isinstance(properties.get(path_key), str):
            uri = properties[path_key]
            if "://" not in uri:
                properties[path_key] = (rebase / uri).as_posix()
        for prop, why in SAR_UNSUPPORTED.get(kind, ()):
            if properties.pop(prop, None) is not None:
                removed.append(f"{name}.{prop} left out: {why}")
    if f"{_FUNCTION}.LoggingConfig" in " ".join(removed):
        _log_to_the_default_group(template["Resources"])
    return template, removed


def _log_to_the_default_group(resources: dict[str, Any]) -> None:
    """Without LoggingConfig the function logs to /aws/lambda/<its name>: give that name to the
    stack's log group, which keeps its retention, and create the group before anything can
    invoke the function."""
    log_group = resources[_LOG_GROUP]["Properties"]
    log_group["LogGroupName"] = {"Fn::Sub": f"/aws/lambda/${{{_FUNCTION}}}"}
    event_source = resources[_EVENT_SOURCE]
    depends = event_source.get("DependsOn", [])
    depends = [depends] if isinstance(depends, str) else list(depends)
    event_source["DependsOn"] = [*depends, _LOG_GROUP]


def write_template(
    built: Path,
    output: Path,
    *,
    readme: Path,
    license_file: Path,
    source_code_url: str,
    home_page_url: str,
    version: str,
) -> list[str]:
    """Write the SAR template next to nothing else: every path in it is relative to `output`."""
    from samtranslator.yaml_helper import yaml_parse

    if not built.is_file():
        raise SarError(f"{built} not found: run `sam build` (make build) first")
    output.parent.mkdir(parents=True, exist_ok=True)
    here = output.parent.resolve()

    def relative(path: Path) -> str:
        return Path(os.path.relpath(path.resolve(), here)).as_posix()

    template, removed = sar_template(
        yaml_parse(built.read_text(encoding="utf-8")),
        rebase=Path(relative(built.parent)),
        readme=relative(readme),
        license_file=relative(license_file),
        source_code_url=source_code_url,
        home_page_url=home_page_url,
        version=version,
    )
    output.write_text(
        yaml.safe_dump(template, sort_keys=False, width=100, allow_unicode=True), encoding="utf-8"
    )
    return removed


def account_id(text: str) -> str:
    if not re.fullmatch(r"\d{12}", text):
        raise argparse.ArgumentTypeError(f"{text!r} is not a 12-digit AWS account id")
    return text


def org_id(text: str) -> str:
    if not re.fullmatch(r"o-[a-z0-9]{10,32}", text):
        raise argparse.ArgumentTypeError(f"{text!r} is not an AWS Organizations id (o-...)")
    return text


def share_statements(args: argparse.Namespace) -> list[dict[str, Any]]:
    """The application policy for `share`'s choice: who may deploy it."""
    if args.public:
        return [{"Principals": ["*"], "Actions": ["Deploy"]}]
    if args.org:
        # SAR requires UnshareApplication next to Deploy in an organization statement.
        return [
            {
                "Principals": ["*"],
                "PrincipalOrgIDs": [args.org],
                "Actions": ["Deploy", "UnshareApplication"],
            }
        ]
    if args.account:
        return [{"Principals": sorted(set(args.account)), "Actions": ["Deploy"]}]
    return []


def share(args: argparse.Namespace, client: Any = None) -> str:
    """Put the application policy; the application is found by its name when not given."""
    import boto3
    from botocore.exceptions import BotoCoreError, ClientError

    sar = client or boto3.client("serverlessrepo")
    statements = share_statements(args)
    try:
        application_id = args.application_id or _application_id(sar)
        sar.put_application_policy(ApplicationId=application_id, Statements=statements)
    except (BotoCoreError, ClientError) as error:
        raise SarError(f"PutApplicationPolicy failed: {error}") from error
    who = (
        "nobody else"
        if not statements
        else statements[0].get("PrincipalOrgIDs") or (statements[0]["Principals"])
    )
    return f"{application_id}: deployable by {who}"


def _application_id(sar: Any) -> str:
    from samtranslator.yaml_helper import yaml_parse

    root = Path(__file__).resolve().parents[1]
    name = yaml_parse((root / "template.yaml").read_text(encoding="utf-8"))["Metadata"][
        APPLICATION
    ]["Name"]
    for page in sar.get_paginator("list_applications").paginate():
        for application in page["Applications"]:
            if application["Name"] == name:
                return str(application["ApplicationId"])
    raise SarError(f"no application named {name!r} in this account and region: publish first")
