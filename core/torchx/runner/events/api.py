"""The torchx usage event record."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, fields
from enum import Enum
from typing import Any, Optional, Union

__all__ = ["SourceType", "TorchxEvent"]


class SourceType(str, Enum):  # noqa: UP042 - TorchX type: str mixin, str() is the name
    """Where the API call that produced an event came from."""

    UNKNOWN = "<unknown>"
    INTERNAL = "INTERNAL"
    EXTERNAL = "EXTERNAL"


@dataclass
class TorchxEvent:
    """One call of a runner API, with its timing and any exception it raised.

    Attributes:
        session: the per-process session id.
        scheduler: the scheduler backend name.
        api: the runner API that was called (``run``, ``status``, ...).
        app_id: the app id, when known.
        app_image: the image of the first role, when known.
        app_metadata: the AppDef metadata, when known.
        runcfg: the scheduler run config as JSON, when given.
        raw_exception: the formatted traceback of an exception raised by the call.
        source: where the call came from.
        cpu_time_usec: process CPU time spent in the call.
        wall_time_usec: wall-clock time spent in the call.
        start_epoch_time_usec: when the call started (Unix epoch, microseconds).
        workspace: the workspace argument, when given.
        exception_type: the exception class name.
        exception_message: the exception message.
        exception_source_location: JSON ``{filename, lineno, name}`` of the raising frame.
    """

    session: str
    scheduler: str
    api: str
    app_id: Optional[str] = None
    app_image: Optional[str] = None
    app_metadata: Optional[dict[str, Any]] = None
    runcfg: Optional[str] = None
    raw_exception: Optional[str] = None
    source: SourceType = SourceType.UNKNOWN
    cpu_time_usec: Optional[int] = None
    wall_time_usec: Optional[int] = None
    start_epoch_time_usec: Optional[int] = None
    workspace: Optional[str] = None
    exception_type: Optional[str] = None
    exception_message: Optional[str] = None
    exception_source_location: Optional[str] = None

    def __str__(self) -> str:
        return self.serialize()

    def serialize(self) -> str:
        """Returns the event as a JSON object string."""
        return json.dumps(asdict(self))

    @staticmethod
    def deserialize(data: Union[str, TorchxEvent]) -> TorchxEvent:
        """Builds an event from its JSON form (or copies an event).

        An unknown ``source`` value is dropped (the field falls back to ``UNKNOWN``),
        and so are keys that are not event fields.

        Args:
            data: a string produced by :meth:`serialize`, or an event.

        Raises:
            TypeError: ``data`` is neither a string nor a ``TorchxEvent``.
        """
        if isinstance(data, TorchxEvent):
            values: dict[str, Any] = asdict(data)
        elif isinstance(data, str):
            values = json.loads(data)
        else:
            raise TypeError(
                f"cannot deserialize a TorchxEvent from {type(data).__name__};"
                " pass a JSON string or a TorchxEvent"
            )
        known = {f.name for f in fields(TorchxEvent)}
        values = {k: v for k, v in values.items() if k in known}
        source = values.pop("source", None)
        if source in {s.value for s in SourceType}:
            values["source"] = SourceType(source)
        return TorchxEvent(**values)
