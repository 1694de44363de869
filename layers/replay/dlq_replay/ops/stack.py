"""Finding a deployment: the queues and the function from a stack's outputs or explicit URLs."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from dlq_replay.ops.opserror import OpsError

if TYPE_CHECKING:
    from mypy_boto3_cloudformation import CloudFormationClient
    from mypy_boto3_lambda import LambdaClient


# Output names of template.yaml that lead to the queues and the function.
STACK_OUTPUTS: dict[str, str] = {
    "main": "MainQueueUrl",
    "dlq": "DeadLetterQueueUrl",
    "operator": "OperatorQueueUrl",
    "function": "ReplayFunctionName",
}
QUEUE_ROLES = ("main", "dlq", "operator")


@dataclass(frozen=True, slots=True)
class Deployment:
    """Where the queues and the function are: from `--stack` outputs and explicit options."""

    main: str | None = None
    dlq: str | None = None
    operator: str | None = None
    function_name: str | None = None
    stack: str | None = None

    def queue(self, role: str) -> str | None:
        return {"main": self.main, "dlq": self.dlq, "operator": self.operator}.get(role)

    def known_queues(self) -> list[tuple[str, str]]:
        return [(role, url) for role in QUEUE_ROLES if (url := self.queue(role))]


def stack_outputs(cfn: CloudFormationClient, stack_name: str) -> dict[str, str]:
    """Every output of a deployed stack, by output key (missing stack: ClientError)."""
    stacks = cfn.describe_stacks(StackName=stack_name)["Stacks"]
    if not stacks:
        raise OpsError(f"stack {stack_name} not found")
    return {
        str(output["OutputKey"]): str(output["OutputValue"])
        for output in stacks[0].get("Outputs", [])
        if "OutputKey" in output and "OutputValue" in output
    }


def discover(
    explicit: Deployment, cfn: CloudFormationClient | None = None, stack: str | None = None
) -> Deployment:
    """The deployment: stack outputs (when a stack is named), explicit values on top."""
    found: dict[str, str] = {}
    if stack:
        if cfn is None:
            raise ValueError("a CloudFormation client is needed to read a stack")
        outputs = stack_outputs(cfn, stack)
        found = {role: outputs[key] for role, key in STACK_OUTPUTS.items() if outputs.get(key)}
        if not any(role in found for role in QUEUE_ROLES):
            names = ", ".join(STACK_OUTPUTS.values())
            raise OpsError(f"stack {stack} has none of the outputs {names}: is it sqs-dlq-replay?")
    return Deployment(
        main=explicit.main or found.get("main"),
        dlq=explicit.dlq or found.get("dlq"),
        operator=explicit.operator or found.get("operator"),
        function_name=explicit.function_name or found.get("function"),
        stack=stack,
    )


def function_environment(lam: LambdaClient, function_name: str) -> dict[str, str]:
    """The replay function's environment variables: its settings."""
    config = lam.get_function_configuration(FunctionName=function_name)
    return dict(config.get("Environment", {}).get("Variables", {}))
