"""The README and the template SAR gets, both generated from the project's own files."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import dlq_replay
import pytest

from tools.sar import (
    APPLICATION,
    SAR_SECTIONS,
    SAR_UNSUPPORTED,
    SarError,
    read_documents,
    sar_readme,
    sar_template,
    slug,
    write_template,
)
from tools.transform_template import load_template, transform_template

from .conftest import ROOT

SOURCE = "https://github.com/example/fork"
VERSION = dlq_replay.__version__


@pytest.fixture(scope="module")
def readme() -> str:
    return sar_readme(read_documents(ROOT), SOURCE, VERSION)


def test_every_link_works_outside_the_repository(readme: str) -> None:
    anchors = {slug(h) for h in re.findall(r"^#{2,4} (.+)$", readme, re.MULTILINE)}
    targets = re.findall(r"\]\(([^)\s]+)\)", readme)
    assert targets
    for target in targets:
        if target.startswith("#"):
            assert target[1:] in anchors, target
        else:
            assert target.startswith("https://"), target
    # docs/deploying.md's links resolve from docs/, the README's from the root.
    assert f"{SOURCE}/blob/v{VERSION}/examples/nested-app.yaml" in readme
    assert f"{SOURCE}/blob/v{VERSION}/docs/design.md" in readme
    assert f"{SOURCE}/blob/v{VERSION}/docs/operating.md#" in readme


def test_it_keeps_the_sections_a_sar_page_needs_in_order(readme: str) -> None:
    headings = re.findall(r"^## (.+)$", readme, re.MULTILINE)
    assert headings == [*(title for _, title in SAR_SECTIONS), "More"]
    assert readme.startswith("# sqs-dlq-replay\n\nGives SQS dead-letter queues a second life.")
    assert "Code layout" not in readme  # for developers of the repository
    assert "| `MainQueueArn` |" in readme  # the table, not the README's link to it


def test_its_parameter_table_names_every_template_parameter(readme: str) -> None:
    parameters = load_template(ROOT / "template.yaml")["Parameters"]
    rows = set(re.findall(r"^\| `(\w+)` \|", readme, re.MULTILINE))
    assert set(parameters) <= rows


def test_documents_without_a_needed_section_are_refused() -> None:
    documents = {
        "README.md": "# x\n\n## Architecture\n",
        "docs/deploying.md": "# d\n\n## Install and deploy\n\n## Parameters\n\n## Security\n",
    }
    with pytest.raises(SarError, match=r"no section Outputs \(docs/deploying.md\)$"):
        sar_readme(documents, SOURCE, "1.0.0")


def _built() -> dict[str, Any]:
    return load_template(ROOT / "template.yaml")


def test_the_metadata_points_at_the_release(tmp_path: Path) -> None:
    template, _ = sar_template(
        _built(),
        rebase=Path("../x"),
        readme="README-SAR.md",
        license_file="../LICENSE",
        source_code_url=SOURCE,
        home_page_url="https://example.com/home",
        version=VERSION,
    )
    application = template["Metadata"][APPLICATION]
    assert application["SourceCodeUrl"] == f"{SOURCE}/tree/v{VERSION}"
    assert application["HomePageUrl"] == "https://example.com/home"
    assert (application["ReadmeUrl"], application["LicenseUrl"]) == ("README-SAR.md", "../LICENSE")
    assert (
        template["Resources"]["ReplayFunction"]["Properties"]["CodeUri"] == "../x/functions/replay"
    )


def test_a_template_of_another_version_is_refused() -> None:
    with pytest.raises(SarError, match="SemanticVersion"):
        sar_template(
            _built(),
            rebase=Path("."),
            readme="r",
            license_file="l",
            source_code_url=SOURCE,
            home_page_url=SOURCE,
            version="9.9.9",
        )


def test_the_sar_template_deploys_what_the_template_deploys(tmp_path: Path) -> None:
    """Transformed by the SAM translator, the SAR variant is the template itself but for the
    properties SAR refuses and what stands in for them: nothing else is lost in the rewrite."""
    readme = tmp_path / "README-SAR.md"
    readme.write_text("# r\n")
    removed = write_template(
        ROOT / "template.yaml",
        tmp_path / "sar" / "template.yaml",
        readme=readme,
        license_file=ROOT / "LICENSE",
        source_code_url=SOURCE,
        home_page_url=SOURCE,
        version=VERSION,
    )
    assert [line.split()[0] for line in removed] == [
        "ReplayFunction.LoggingConfig",
        "ReplayFunction.RecursiveLoop",
    ]
    original = transform_template(ROOT / "template.yaml", region="us-east-1")
    variant = transform_template(tmp_path / "sar" / "template.yaml", region="us-east-1")

    function = variant["Resources"]["ReplayFunction"]["Properties"]
    assert "LoggingConfig" not in function
    assert "RecursiveLoop" not in function
    log_group = variant["Resources"]["ReplayLogGroup"]["Properties"]
    assert log_group.pop("LogGroupName") == {"Fn::Sub": "/aws/lambda/${ReplayFunction}"}
    event_source = variant["Resources"]["ReplayFunctionDeadLetterQueueEvent"]
    assert event_source.pop("DependsOn") == ["ReplayLogGroup"]
    for prop in ("LoggingConfig", "RecursiveLoop"):
        original["Resources"]["ReplayFunction"]["Properties"].pop(prop)
    assert _normalised(variant) == _normalised(original)


def _normalised(cfn: dict[str, Any]) -> Any:
    """Without what differs by where the template lies: the local artifact paths, and the layer
    version's logical id (SAM hashes the path into it), and the SAR metadata."""
    cfn = {k: v for k, v in cfn.items() if k != "Metadata"}
    text = json.dumps(cfn)
    for name, resource in cfn["Resources"].items():
        if resource["Type"] == "AWS::Lambda::LayerVersion":
            text = text.replace(name, "ReplayLayerVersion")
    text = re.sub(r'"S3Key": "[^"]*"', '"S3Key": "local"', text)
    return json.loads(text)


def test_every_unsupported_property_names_its_reason() -> None:
    for kind, properties in SAR_UNSUPPORTED.items():
        assert kind.startswith("AWS::")
        for prop, why in properties:
            assert prop
            assert len(why) > 20
