"""Usage events emitted around every runner API call.

Events go to the logger ``torchx-events-{destination}``; by default (``"null"``) they are
discarded. Attach a handler to that logger to collect them, e.g.
``logging.getLogger("torchx-events-null").addHandler(my_handler)``.
"""

from __future__ import annotations

import json
import logging
import time
import traceback
from types import TracebackType
from typing import Any, Optional

from torchx.runner.events.api import SourceType, TorchxEvent
from torchx.runner.events.handlers import get_logging_handler
from torchx.util import session

__all__ = [
    "SourceType",
    "TorchxEvent",
    "get_logging_handler",
    "get_session_id_or_create_new",
    "log_event",
    "record",
]

logger: logging.Logger = logging.getLogger(__name__)

_events_loggers: dict[str, logging.Logger] = {}


def _get_or_create_logger(destination: str) -> logging.Logger:
    events_logger = _events_loggers.get(destination)
    if events_logger is None:
        events_logger = logging.getLogger(f"torchx-events-{destination}")
        events_logger.setLevel(logging.DEBUG)
        events_logger.addHandler(get_logging_handler(destination))
        events_logger.propagate = False
        _events_loggers[destination] = events_logger
    return events_logger


def record(event: TorchxEvent, destination: str = "null") -> None:
    """Logs an event to the ``torchx-events-{destination}`` logger.

    A failure to serialize the event is logged, never raised. An event nobody listens to (the
    logger has only ``NullHandler``s, the ``"null"`` default) is not serialized at all: the
    runner records several events per launch.

    Args:
        event: the event to record.
        destination: ``"null"`` (default, discarded) or ``"console"``.
    """
    events_logger = _get_or_create_logger(destination)
    if all(isinstance(h, logging.NullHandler) for h in events_logger.handlers):
        return
    try:
        serialized = event.serialize()
    except Exception:
        logger.exception("failed to serialize torchx event for api `%s`", event.api)
        return
    events_logger.info(serialized)


def get_session_id_or_create_new() -> str:
    """Returns this process's torchx session id (:mod:`torchx.util.session` keeps it).

    ``$TORCHX_INTERNAL_SESSION_ID`` wins when set (a job launched by torchx inherits its
    launcher's session); otherwise a uuid4 is created once per process.
    """
    return session.get_session_id_or_create_new()


def _source_location(tb: Optional[TracebackType]) -> Optional[str]:
    frames = traceback.extract_tb(tb)
    if not frames:
        return None
    last = frames[-1]
    return json.dumps({"filename": last.filename, "lineno": last.lineno, "name": last.name})


class log_event:
    """Context manager that times a block and records a :class:`TorchxEvent` to ``"null"``.

    The event is available (and mutable) as ``._torchx_event`` inside the block; an
    exception raised by the block is captured in the event and propagates.

    Args:
        api: the API name.
        scheduler: the scheduler backend name.
        app_id: the app id.
        app_image: the image of the first role.
        app_metadata: the AppDef metadata.
        runcfg: the run config as JSON.
        workspace: the workspace argument.
    """

    def __init__(
        self,
        api: str,
        scheduler: Optional[str] = None,
        app_id: Optional[str] = None,
        app_image: Optional[str] = None,
        app_metadata: Optional[dict[str, Any]] = None,
        runcfg: Optional[str] = None,
        workspace: Optional[str] = None,
    ) -> None:
        self._torchx_event = TorchxEvent(
            session=get_session_id_or_create_new(),
            scheduler=scheduler or "",
            api=api,
            app_id=app_id,
            app_image=app_image,
            app_metadata=app_metadata,
            runcfg=runcfg,
            workspace=workspace,
        )
        self._start_cpu_ns = 0
        self._start_wall_ns = 0

    def __enter__(self) -> log_event:
        self._start_cpu_ns = time.process_time_ns()
        self._start_wall_ns = time.perf_counter_ns()
        self._torchx_event.start_epoch_time_usec = time.time_ns() // 1000
        return self

    def __exit__(
        self,
        exc_type: Optional[type[BaseException]],
        exc_value: Optional[BaseException],
        tb: Optional[TracebackType],
    ) -> Optional[bool]:
        event = self._torchx_event
        event.cpu_time_usec = (time.process_time_ns() - self._start_cpu_ns) // 1000
        event.wall_time_usec = (time.perf_counter_ns() - self._start_wall_ns) // 1000
        if exc_type is not None:
            event.raw_exception = "".join(traceback.format_exception(exc_type, exc_value, tb))
            event.exception_type = exc_type.__name__
            event.exception_message = str(exc_value)
            event.exception_source_location = _source_location(tb)
        record(event)
        return None
