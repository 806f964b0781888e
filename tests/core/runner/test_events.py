"""torchx.runner.events: TorchxEvent, record, log_event, session ids, handlers."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator

import pytest

from torchx.runner import events
from torchx.runner.events import (
    SourceType,
    TorchxEvent,
    get_logging_handler,
    get_session_id_or_create_new,
    log_event,
    record,
)


@pytest.fixture
def collected() -> Iterator[list[str]]:
    messages: list[str] = []

    class Collect(logging.Handler):
        def emit(self, rec: logging.LogRecord) -> None:
            messages.append(rec.getMessage())

    handler = Collect()
    logger = logging.getLogger("torchx-events-null")
    logger.addHandler(handler)
    yield messages
    logger.removeHandler(handler)


def test_event_roundtrip() -> None:
    event = TorchxEvent("sess", "local_cwd", "run", app_id="a1", runcfg='{"x": 1}')
    assert event.source == SourceType.UNKNOWN
    data = json.loads(event.serialize())
    assert data["source"] == "<unknown>"
    assert data["api"] == "run"
    assert TorchxEvent.deserialize(event.serialize()) == event
    assert TorchxEvent.deserialize(event) == event
    assert str(event) == event.serialize()


def test_deserialize_drops_unknown_source_and_rejects_other_types() -> None:
    data = json.loads(TorchxEvent("s", "k", "status", source=SourceType.EXTERNAL).serialize())
    assert TorchxEvent.deserialize(json.dumps(data)).source == SourceType.EXTERNAL
    data["source"] = "SOMETHING_NEW"
    data["future_field"] = 1
    assert TorchxEvent.deserialize(json.dumps(data)).source == SourceType.UNKNOWN
    with pytest.raises(TypeError):
        TorchxEvent.deserialize(42)  # type: ignore[arg-type]


def test_handlers() -> None:
    assert isinstance(get_logging_handler("null"), logging.NullHandler)
    assert isinstance(get_logging_handler("console"), logging.StreamHandler)
    with pytest.raises(KeyError, match="Did you mean `console`"):
        get_logging_handler("consol")


def test_record_uses_a_non_propagating_logger(collected: list[str]) -> None:
    record(TorchxEvent("s", "k", "status"))
    assert json.loads(collected[0])["api"] == "status"
    assert logging.getLogger("torchx-events-null").propagate is False


def test_record_logs_serialization_failures(
    collected: list[str], caplog: pytest.LogCaptureFixture
) -> None:
    record(TorchxEvent("s", "k", "run", app_metadata={"bad": object()}))
    assert collected == []
    assert "failed to serialize torchx event" in caplog.text


def test_log_event_times_and_records(collected: list[str]) -> None:
    with log_event("describe", "local_cwd", app_id="a", workspace="/ws") as ctx:
        ctx._torchx_event.app_image = "img"
    data = json.loads(collected[-1])
    assert data["api"] == "describe"
    assert data["scheduler"] == "local_cwd"
    assert data["app_image"] == "img"
    assert data["workspace"] == "/ws"
    assert data["wall_time_usec"] >= 0
    assert data["cpu_time_usec"] >= 0
    assert data["start_epoch_time_usec"] > 0
    assert data["exception_type"] is None
    assert data["session"] == get_session_id_or_create_new()


def test_log_event_captures_exceptions(collected: list[str]) -> None:
    def fail() -> None:
        raise RuntimeError("boom")

    with pytest.raises(RuntimeError), log_event("run"):
        fail()
    data = json.loads(collected[-1])
    assert data["exception_type"] == "RuntimeError"
    assert data["exception_message"] == "boom"
    location = json.loads(data["exception_source_location"])
    assert location["name"] == "fail"
    assert location["filename"] == __file__
    assert "RuntimeError: boom" in data["raw_exception"]


def test_session_id(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TORCHX_INTERNAL_SESSION_ID", raising=False)
    first = get_session_id_or_create_new()
    assert first == get_session_id_or_create_new()
    monkeypatch.setenv("TORCHX_INTERNAL_SESSION_ID", "inherited")
    assert get_session_id_or_create_new() == "inherited"
    assert events.__all__
