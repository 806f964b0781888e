"""ComponentTestCase on every builtin component: the CLI can build its --help, and it runs."""

from __future__ import annotations

import functools
import json
import os
import sys
import unittest
from pathlib import Path

import pytest

from torchx.components import dist, utils
from torchx.components.component_test_base import ComponentTestCase
from torchx.specs import AppDef, AppState, Role


class BuiltinComponentsTest(ComponentTestCase):
    def test_validate_every_builtin(self) -> None:
        for module, names in (
            (utils, ["binary", "booth", "copy", "echo", "hydra", "python", "sh", "touch"]),
            (dist, ["ddp", "spmd"]),
        ):
            for name in names:
                with self.subTest(component=f"{module.__name__}.{name}"):
                    self.validate(module, name)

    def _run(self, component: functools.partial[AppDef] | object, **args: object) -> AppState:
        status = self.run_component(component, args, timeout=120)  # type: ignore[arg-type]
        assert status is not None
        return status.state

    def test_echo_sh_python_binary_succeed(self) -> None:
        assert self._run(utils.echo, msg="hi from ComponentTestCase") == AppState.SUCCEEDED
        assert self._run(functools.partial(utils.sh, "true")) == AppState.SUCCEEDED
        assert self._run(functools.partial(utils.python, c="print(1)")) == AppState.SUCCEEDED
        binary = functools.partial(utils.binary, "-c", "exit 0", entrypoint="sh")
        assert self._run(binary) == AppState.SUCCEEDED

    def test_failing_component_reports_failed(self) -> None:
        assert self._run(functools.partial(utils.sh, "exit", "3")) == AppState.FAILED

    def test_touch_copy_booth_do_their_work(self) -> None:
        target = os.path.join(self.test_dir, "touched")
        assert self._run(utils.touch, file=target) == AppState.SUCCEEDED
        assert os.path.isfile(target)
        src, dst = os.path.join(self.test_dir, "src"), os.path.join(self.test_dir, "dst")
        Path(src).write_text("payload")
        assert self._run(utils.copy, src=src, dst=dst) == AppState.SUCCEEDED
        assert Path(dst).read_text() == "payload"
        base = os.path.join(self.test_dir, "booth")
        state = self._run(utils.booth, x1=1.0, x2=3.0, trial_idx=4, tracker_base=base)
        assert state == AppState.SUCCEEDED
        assert json.loads(Path(base, "4.json").read_text()) == {"booth_eval": 0.0}

    def test_timeout_returns_a_running_status_and_stops_the_app(self) -> None:
        status = self.run_component(
            functools.partial(utils.sh, "sleep", "60"), timeout=0.5, interval=0.1
        )
        assert status is not None and status.state in (AppState.PENDING, AppState.RUNNING)
        # the runner was closed: the attached app is stopped, nothing keeps running
        from torchx.runner import get_runner

        with get_runner() as runner:
            apps = runner.list("local_cwd")
        assert apps and all(app.state == AppState.CANCELLED for app in apps)


class BrokenComponentTest(ComponentTestCase):
    def test_validate_rejects_an_unlintable_component(self) -> None:
        import importlib.util

        from torchx.specs.finder import ComponentValidationException

        path = Path(self.test_dir, "broken_component.py")
        path.write_text(
            "from torchx import specs\n\n"
            "def comp(x) -> specs.AppDef:\n"
            '    """A component without an argument type."""\n'
            "    return specs.AppDef(name='x')\n"
        )
        spec = importlib.util.spec_from_file_location("broken_component", path)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        with pytest.raises(ComponentValidationException, match="Missing type annotation"):
            self.validate(module, "comp")

    def test_validate_needs_a_module_file(self) -> None:
        with pytest.raises(AssertionError, match="has no __file__"):
            self.validate(sys.modules["builtins"], "len")


def test_run_component_with_an_appdef_factory(tmp_path: Path) -> None:
    def two_roles() -> AppDef:
        return AppDef(
            name="two",
            roles=[
                Role(name="a", image=str(tmp_path), entrypoint="sh", args=["-c", "true"]),
                Role(name="b", image=str(tmp_path), entrypoint="sh", args=["-c", "true"]),
            ],
        )

    case = ComponentTestCase()
    case.setUp()
    try:
        status = case.run_component(two_roles, timeout=60)
    finally:
        case.tearDown()
    assert status is not None and status.state == AppState.SUCCEEDED
    assert [r.role for r in status.roles] == ["a", "b"]


class ReadmeExampleTest(ComponentTestCase):
    """The README's ComponentTestCase example, on examples/components.py."""

    def test_greet(self) -> None:
        import importlib.util

        path = Path(__file__).resolve().parents[3] / "examples" / "components.py"
        spec = importlib.util.spec_from_file_location("components", path)
        assert spec is not None and spec.loader is not None
        components = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(components)
        self.validate(components, "greet")
        status = self.run_component(components.greet, {"name": "ci"})
        assert status is not None and status.state == AppState.SUCCEEDED


if __name__ == "__main__":
    unittest.main()
