"""The parsers of every command and the argparse types that check values at parse time; light
on purpose (no boto3, no rich): `dlq-replay --help` builds its parser from this module alone."""

from __future__ import annotations

import argparse
import math
import re
import textwrap
from collections.abc import Callable, Collection, Mapping, Sequence
from pathlib import Path
from typing import Any, NoReturn, TypeVar
from urllib.parse import urlsplit

from dlq_replay.core.queues import queue_url_problem
from dlq_replay.core.settings import SETTING, SETTINGS, Setting, SettingsError

Subparsers = Any  # argparse's _SubParsersAction is private
Run = Callable[[argparse.Namespace], int]
T = TypeVar("T")


# A help text's own default, in its last parentheses: "(default 10)", "(default: the queue's)".
_OWN_DEFAULT = re.compile(r"\s*\(default:? ([^()]*)\)$")


class CommandHelpFormatter(argparse.HelpFormatter):
    """Every option's help ends with one parenthesis: its range, then its default ("(1-64;
    default: 1)", "(required)"; a help's own "(default: ...)" joins it); no word is broken at
    a hyphen (`--backoff-cap-seconds`)."""

    def _get_help_string(self, action: argparse.Action) -> str:
        text = action.help or ""
        if not action.option_strings or action.help == argparse.SUPPRESS:
            return text
        extras = []
        bounds = getattr(action.type, "range_text", None)
        if action.choices is not None:  # argparse's own choices: listed as every list is
            bounds = one_of([str(choice) for choice in action.choices])
        if bounds and bounds not in text:
            extras.append(bounds)
        own = _OWN_DEFAULT.search(text)
        if own is not None:
            text = text[: own.start()]
            extras.append(f"default: {own.group(1)}")
        elif action.default != argparse.SUPPRESS and "default" not in text:
            # -h/--help and --version (default SUPPRESS) have no default to show.
            extras.append(_default_text(action))
        return f"{text} ({'; '.join(extras)})" if extras else text

    def _split_lines(self, text: str, width: int) -> list[str]:
        return self._fill_text(text, width, "").splitlines()

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        return textwrap.fill(
            " ".join(text.split()),
            width,
            initial_indent=indent,
            subsequent_indent=indent,
            break_on_hyphens=False,
            break_long_words=False,  # a docs link stays whole, to copy
        )


def _default_text(action: argparse.Action) -> str:
    if action.required:
        return "required"
    if action.nargs == 0:
        # A flag that turns something off says what is on without it: "--no-breaker (default:
        # off)" would read as the breaker being off by default.
        negated = [name[5:] for name in action.option_strings if name.startswith("--no-")]
        return f"default: {negated[0]} on" if negated else "default: off"
    return f"default: {value_text(action.default)}"


def value_text(value: object) -> str:
    """A default as --help writes it: "none", "2" for 2.0, "0.3" for 0.3."""
    if value is None:
        return "none"
    return f"{value:g}" if isinstance(value, float) else str(value)


def one_of(values: Sequence[str]) -> str:
    """A closed list of values as every --help writes it."""
    return f"one of: {', '.join(values)}"


class CommandParser(argparse.ArgumentParser):
    """The parser of every command: the help formatter above, and a usage error in one line
    (`dlq-replay: error: ...`, exit 2) like every other error of the command."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("formatter_class", CommandHelpFormatter)
        super().__init__(*args, **kwargs)
        self.commands: Mapping[str, argparse.ArgumentParser] = {}  # the subcommands' parsers

    def parse_args(  # type: ignore[override]
        self, args: Sequence[str] | None = None, namespace: argparse.Namespace | None = None
    ) -> argparse.Namespace:
        """As argparse's, but an option the command does not know is reported by that
        command's parser, so the line points at its --help, not the top-level one."""
        parsed, extras = self.parse_known_args(args, namespace)
        if extras:
            owner = self.commands.get(getattr(parsed, "command", None) or "", self)
            owner.error(f"unrecognized arguments: {' '.join(extras)}")
        return parsed

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"dlq-replay: error: {message} (see: {self.prog} --help)\n")


class SettingType:
    """argparse type of an option that sets a function variable: the parser refuses exactly what
    the function would; the value stays text, as in the function's environment."""

    def __init__(self, setting: Setting[Any]) -> None:
        self.setting = setting
        allowed = setting.rule.constraints.get("AllowedValues")
        choices = [str(value) for value in allowed] if isinstance(allowed, list) else []
        self.range_text = one_of(choices) if choices else setting.rule.summary
        self.__name__ = setting.variable  # argparse names the type in some messages

    @property
    def metavar(self) -> str:
        """The option's value as --help names it: SECONDS, N (a count), URL, ARN, else VALUE."""
        variable = self.setting.variable
        if variable.endswith("_SECONDS"):
            return "SECONDS"
        if isinstance(self.setting.rule.constraints.get("MaxValue"), int):  # integer_rule
            return "N"
        for suffix, label in (("_URL", "URL"), ("_ARN", "ARN"), ("_ARNS", "ARN")):
            if variable.endswith(suffix):
                return label
        return "VALUE"

    def __call__(self, text: str) -> str:
        try:
            self.setting.parse(text)
        except SettingsError as error:
            raise argparse.ArgumentTypeError(
                f"{text!r} {error.rule} [{self.setting.variable}]"
            ) from None
        return text


def add_setting_options(
    parser: argparse.ArgumentParser,
    variables: Sequence[str] | None = None,
    *,
    title: str = "replay settings (override the environment variables)",
    aliases: Mapping[str, str] | None = None,
    old_names: Mapping[str, str] | None = None,
    defaults: Mapping[str, object] | None = None,
    repeatable: Collection[str] = (),
) -> None:
    """One option per row of the settings table (all, or those named), help and check from the
    row, into `args.<VARIABLE>`: None when left out without `defaults`, so the environment
    decides. `aliases` replace a row's name in --help; it and `old_names` keep working."""
    group = parser.add_argument_group(title)
    chosen = SETTINGS if variables is None else [SETTING[name] for name in variables]
    for setting in chosen:
        name = (aliases or {}).get(setting.variable, setting.option)
        old = (old_names or {}).get(setting.variable)
        hidden = [option for option in (setting.option, old) if option and option != name]
        if defaults is not None:
            default: object = defaults[setting.variable]
            shown = f"default: {value_text(default)}"
        else:
            default = None
            fallback = "required" if setting.required else (setting.default or "none")
            shown = f"default: ${setting.variable}, else {fallback}"
        several = setting.variable in repeatable
        kind = SettingType(setting)
        common: dict[str, Any] = {
            "dest": setting.variable,
            "metavar": kind.metavar,
            "type": kind,
            "action": JoinedValues if several else "store",
        }
        group.add_argument(
            name,
            default=default,
            help=f"{setting.help} ({kind.range_text}{'; repeatable' if several else ''}; {shown})",
            **common,
        )
        for option in hidden:
            # SUPPRESS: the shown option alone sets the default.
            group.add_argument(option, default=argparse.SUPPRESS, help=argparse.SUPPRESS, **common)


class JoinedValues(argparse.Action):
    """A comma-list setting given several times: the values joined, as the variable holds them."""

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: Any,
        option_string: str | None = None,
    ) -> None:
        earlier = getattr(namespace, self.dest, None)
        given = earlier is not None and earlier is not self.default
        setattr(namespace, self.dest, f"{earlier},{values}" if given else values)


def setting_overrides(args: argparse.Namespace) -> dict[str, str | None]:
    """The setting options of `add_setting_options`, by variable (None: not given)."""
    return {setting.variable: getattr(args, setting.variable, None) for setting in SETTINGS}


def checked(parse: Callable[[str], T], what: str) -> Callable[[str], T]:
    """argparse type of a parser that raises ValueError: its message is the usage error."""

    def convert(text: str) -> T:
        try:
            return parse(text)
        except ValueError as error:
            raise argparse.ArgumentTypeError(str(error)) from None

    convert.__name__ = what  # argparse names the type in its message
    return convert


def queue_url(text: str) -> str:
    """argparse type of every queue URL option: the same rule as the function's settings."""
    problem = queue_url_problem(text)
    if problem is not None:
        raise argparse.ArgumentTypeError(f"{text!r} is not an SQS queue URL: it {problem}")
    return text


class int_between:  # noqa: N801 - used like the function it replaces: type=int_between(1, 10)
    """argparse type: an integer in [low, high]; the help shows the range."""

    def __init__(self, low: int, high: int) -> None:
        self.low, self.high = low, high
        self.range_text = f"{low}-{high}"

    def __call__(self, text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
        if not self.low <= value <= self.high:
            raise argparse.ArgumentTypeError(f"must be from {self.low} to {self.high}, got {value}")
        return value


class _Number:
    """argparse type: a finite number that `fits`; the help shows the range."""

    def __init__(
        self, name: str, range_text: str, fits: Callable[[float], bool], rule: str
    ) -> None:
        self.__name__, self.range_text, self.fits, self.rule = name, range_text, fits, rule

    def __call__(self, text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
        if not math.isfinite(value):  # nan, inf, 1e309: not "below 0" nor any other range
            raise argparse.ArgumentTypeError(f"not a finite number: {text!r}")
        if not self.fits(value):
            raise argparse.ArgumentTypeError(f"must be {self.rule}, got {text}")
        return value


share = _Number("share", "0-1", lambda value: 0 <= value <= 1, "from 0 to 1")
positive_number = _Number("positive number", "> 0", lambda value: value > 0, "above 0")


def readable_file(text: str) -> Path:
    """argparse type of a file the command reads (import's archive): readable, before AWS is
    asked anything."""
    path = Path(text)
    if path.is_dir():
        raise argparse.ArgumentTypeError(f"{text}: is a directory, not a file")
    try:
        with path.open("rb"):
            pass
    except OSError as error:
        raise argparse.ArgumentTypeError(f"{text}: {error.strerror or error}") from None
    return path


ENDPOINT_FORM = "http:// or https://, a host and an optional port, e.g. http://localhost:4566"
# A host name as botocore accepts it (labels of letters, digits and inner hyphens), or an IP.
_HOST = re.compile(r"^((?!-)[A-Z\d-]{1,63}(?<!-)\.)*((?!-)[A-Z\d-]{1,63}(?<!-))\.?$", re.I)


def endpoint_problem(text: str) -> str | None:
    """Why `text` is not an endpoint URL botocore would take (None: it is one); botocore's own
    refusal is a ValueError deep in client creation."""
    try:
        parts = urlsplit(text)
        port = parts.port
    except ValueError as error:
        return f"is not a URL ({error})"
    del port
    if parts.scheme not in {"http", "https"}:
        return "has no http:// or https:// in front"
    host = parts.hostname
    if not host or not (_HOST.match(host) or ":" in host) or any(c.isspace() for c in text):
        return "names no valid host"
    return None


def endpoint_url(text: str) -> str:
    """argparse type of --endpoint-url."""
    problem = endpoint_problem(text)
    if problem is not None:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not an endpoint URL: it {problem} (expected {ENDPOINT_FORM})"
        )
    return text


# An AWS region name as botocore checks it (`us-east-1`): letters, digits, inner hyphens.
_REGION = re.compile(r"^[a-zA-Z0-9](?:[a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?$")


def region_name(text: str) -> str:
    """argparse type of --region."""
    if not _REGION.match(text):
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a region name (expected letters, digits and hyphens, e.g. us-east-1)"
        )
    return text
