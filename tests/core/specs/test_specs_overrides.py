import asyncio
import copy
import threading
import time

import pytest

from torchx.specs.api import _OVERRIDES_LOCK_KEY, Resource, Role, _OverridesLock


def test_plain_override_replaces_attribute() -> None:
    role = Role("r", "img", overrides={"image": "other"})
    assert role.image == "other"
    assert role.name == "r"


def test_callable_override_is_resolved_once_and_written_back() -> None:
    calls: list[int] = []

    def make() -> Resource:
        calls.append(1)
        return Resource(4, 0, 1024)

    role = Role("r", "img", overrides={"resource": make})
    assert role.resource == Resource(4, 0, 1024)
    assert role.resource == Resource(4, 0, 1024)
    assert calls == [1]
    # written back as a marker that calling returns the value (TorchX's contract)
    assert role.overrides["resource"]() == Resource(4, 0, 1024)


def test_coroutine_override_is_driven_without_a_running_loop() -> None:
    async def entrypoint() -> str:
        await asyncio.sleep(0)
        return "python"

    role = Role("r", "img", overrides={"entrypoint": entrypoint()})
    assert role.entrypoint == "python"
    assert role.overrides["entrypoint"]() == "python"


def test_coroutine_override_inside_a_running_loop() -> None:
    async def value() -> list[str]:
        return ["a"]

    role = Role("r", "img", overrides={"args": value()})

    async def main() -> list[str]:
        return role.args

    assert asyncio.run(main()) == ["a"]


def test_future_owned_by_the_current_loop_raises() -> None:
    async def main() -> None:
        fut: asyncio.Future[str] = asyncio.get_running_loop().create_future()
        role = Role("r", "img", overrides={"image": fut})
        with pytest.raises(RuntimeError, match="currently running in this thread"):
            _ = role.image
        assert role.overrides["image"] is fut  # still there: the caller can await it
        fut.cancel()

    asyncio.run(main())


def test_future_owned_by_another_thread_loop() -> None:
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    try:
        fut = asyncio.run_coroutine_threadsafe(asyncio.sleep(0, result="img2"), loop)
        wrapped = asyncio.wrap_future(fut, loop=loop)
        role = Role("r", "img", overrides={"image": wrapped})
        assert role.image == "img2"
    finally:
        loop.call_soon_threadsafe(loop.stop)
        thread.join()
        loop.close()


def test_resolution_is_single_flight_and_shared_by_copies() -> None:
    calls: list[int] = []

    def slow() -> str:
        calls.append(1)
        time.sleep(0.05)
        return "resolved"

    overrides = {"image": slow}
    roles = [Role("r", "img", overrides=overrides) for _ in range(4)]
    results: list[str] = []
    threads = [threading.Thread(target=lambda r=r: results.append(r.image)) for r in roles]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results == ["resolved"] * 4
    assert calls == [1]


def test_resolution_lock_lives_in_the_dict_and_survives_deepcopy() -> None:
    role = Role("r", "img", overrides={"image": lambda: "base"})
    assert role.image == "base"
    holder = role.overrides[_OVERRIDES_LOCK_KEY]
    assert isinstance(holder, _OverridesLock)
    clone = copy.deepcopy(role)
    assert clone.image == "base"
    assert clone.overrides is role.overrides


def test_a_lock_only_dict_is_not_shared_by_copies() -> None:
    role = Role("r", "img")
    role.overrides[_OVERRIDES_LOCK_KEY] = _OverridesLock()
    clone = copy.deepcopy(role)
    assert clone.overrides is not role.overrides
    assert clone.image == "img"


def test_resolved_read_does_not_take_the_lock() -> None:
    class Refuse:
        def __enter__(self) -> None:
            raise AssertionError("lock taken")

        def __exit__(self, *exc: object) -> None:
            return None

    role = Role("r", "img", overrides={"image": lambda: "base"})
    assert role.image == "base"
    role.overrides[_OVERRIDES_LOCK_KEY].lock = Refuse()
    assert role.image == "base"


def test_a_failing_producer_stays_in_the_dict() -> None:
    def boom() -> str:
        raise RuntimeError("boom")

    role = Role("r", "img", overrides={"image": boom})
    with pytest.raises(RuntimeError):
        _ = role.image
    assert role.overrides["image"] is boom
