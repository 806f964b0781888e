"""``ComponentTestCase``: test that a component works with the CLI and runs to its end.

Component authors subclass it in their own test suites::

    from torchx.components import utils
    from torchx.components.component_test_base import ComponentTestCase


    class UtilsTest(ComponentTestCase):
        def test_echo(self) -> None:
            self.validate(utils, "echo")  # the CLI can build `--help`
            status = self.run_component(utils.echo, {"msg": "hi"}, timeout=60)
            assert status is not None and status.state == AppState.SUCCEEDED
"""

from __future__ import annotations

import contextlib
import io
import os
import shutil
import tempfile
import time
import unittest
from collections.abc import Callable
from types import ModuleType
from typing import Any, Optional

from torchx.runner import get_runner
from torchx.specs.api import AppDef, AppState, AppStatus
from torchx.specs.builders import _create_args_parser
from torchx.specs.finder import get_component

__all__ = ["ComponentTestCase"]


class ComponentTestCase(unittest.TestCase):
    """A ``unittest.TestCase`` with helpers for component definitions.

    ``self.test_dir`` is a fresh temporary directory for each test (removed afterwards).
    """

    def setUp(self) -> None:
        """Creates ``self.test_dir`` and remembers the working directory."""
        self.test_dir = tempfile.mkdtemp(prefix="torchx_component_test_")
        self.old_cwd = os.getcwd()

    def tearDown(self) -> None:
        """Removes ``self.test_dir`` and restores the working directory."""
        shutil.rmtree(self.test_dir, ignore_errors=True)
        os.chdir(self.old_cwd)

    def validate(self, module: ModuleType, function_name: str) -> None:
        """Checks that the CLI can build this component's ``--help``.

        The same as ``torchx run /abs/path/of/module.py:FUNCTION --help``: the component is
        found by file path, linted, and its argument parser is built and asked for help.

        Args:
            module: the module that defines the component.
            function_name: the component function's name.

        Raises:
            AssertionError: the module has no file, or ``--help`` did not exit with code 0.
            ComponentNotFoundException: no such function in the module.
            ComponentValidationException: the linter rejected the component.
        """
        module_path = getattr(module, "__file__", None)
        self.assertTrue(module_path, f"module {module.__name__} has no __file__")
        component = get_component(f"{os.path.abspath(str(module_path))}:{function_name}")
        parser = _create_args_parser(component.fn)
        with contextlib.redirect_stdout(io.StringIO()) as out, self.assertRaises(SystemExit) as cm:
            parser.parse_args(["--help"])
        self.assertIn(cm.exception.code, (0, None), out.getvalue())
        self.assertIn("usage:", out.getvalue())

    def run_component(
        self,
        component: Callable[..., AppDef],
        args: Optional[dict[str, Any]] = None,
        scheduler_params: Optional[dict[str, Any]] = None,
        scheduler: str = "local_cwd",
        interval: float = 0.1,
        timeout: float = 60.0,
    ) -> Optional[AppStatus]:
        """Runs ``component(**args)`` on ``scheduler`` and returns its last status.

        Blocks until the app ends or ``timeout`` seconds pass; an app still running then is
        stopped (the runner is closed) and its last, non-terminal status is returned.

        Args:
            component: the component function.
            args: its keyword arguments.
            scheduler_params: keyword arguments for the scheduler factory (e.g. ``state_dir``).
            scheduler: the scheduler to run on.
            interval: seconds between status polls at most (local schedulers wake on change).
            timeout: seconds to wait for the app to end.

        Returns:
            The app's status, or None if the scheduler no longer knows the app.
        """
        app = component(**(args or {}))
        with get_runner(name=None, component_defaults=None, **(scheduler_params or {})) as runner:
            handle = runner.run(app, scheduler)
            deadline = time.monotonic() + timeout
            status = runner.status(handle)
            while status is not None and not status.is_terminal():
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    break
                runner.wait_for_change(handle, min(interval, remaining))
                status = runner.status(handle)
            if status is not None and status.state == AppState.FAILED:
                runner.enforce_fail_fast(handle)  # stop the other replicas of a failed app
            return status
