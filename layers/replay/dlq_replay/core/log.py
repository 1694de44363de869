"""The logging calls the package makes, as a protocol: Powertools Logger and logging.Logger
both fit, so every layer takes either without importing one (or a layer above it)."""

from __future__ import annotations

from typing import Any, Protocol


class Log(Protocol):
    """The four levels, with the keyword arguments both loggers take (`extra`)."""

    def debug(self, msg: str, *args: Any, **kwargs: Any) -> Any: ...
    def info(self, msg: str, *args: Any, **kwargs: Any) -> Any: ...
    def warning(self, msg: str, *args: Any, **kwargs: Any) -> Any: ...
    def error(self, msg: str, *args: Any, **kwargs: Any) -> Any: ...
