"""``TorchXHook``: builds a TorchX ``Runner`` from a ``torchx`` connection or from arguments."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, ClassVar, Optional

from airflow.sdk.log import amask_secret, mask_secret

from torchx.runner.api import Runner
from torchx_airflow._settings import TorchXSettings, secret_values
from torchx_airflow.version_compat import AirflowNotFoundException, BaseHook

__all__ = ["TorchXHook"]

SESSION_NAME = "torchx"


class TorchXHook(BaseHook):
    """Gives tasks and triggers a TorchX ``Runner`` configured by an Airflow connection.

    The connection (type ``torchx``) carries the scheduler name, its run config, scheduler
    factory parameters and the text of a ``.torchxconfig`` in its extras (see
    ``torchx_airflow._settings``). Arguments given to the hook beat the connection. A
    missing connection is an error, except for the default ``torchx_default``, which then
    means "no settings" (the ``local_cwd`` scheduler with its defaults). Reading the
    connection masks its kubeconfig and the credentials in it in the task log (Airflow masks
    extras by name only: ``kubeconfig_secret`` is masked in the UI and API as well).

    Args:
        torchx_conn_id: the connection id, or None to use only the arguments.
        scheduler: the scheduler name (beats the connection's).
        scheduler_cfg: run options (dict or ``k=v,...``), merged over the connection's.
        scheduler_params: scheduler factory keyword arguments, merged over the connection's.
        torchxconfig: ``.torchxconfig`` text (replaces the connection's).
    """

    conn_name_attr = "torchx_conn_id"
    default_conn_name = "torchx_default"
    conn_type = "torchx"
    hook_name = "TorchX"
    _UI_EXTRAS: ClassVar[dict[str, str]] = {
        "scheduler": "local_cwd",
        "scheduler_cfg": '{"log_dir": "/tmp/torchx-logs"}',
        "torchxconfig": "[component:dist.ddp]\\nj = 1x2",
    }

    def __init__(
        self,
        torchx_conn_id: Optional[str] = default_conn_name,
        *,
        scheduler: Optional[str] = None,
        scheduler_cfg: Any = None,
        scheduler_params: Optional[Mapping[str, Any]] = None,
        torchxconfig: Optional[str] = None,
    ) -> None:
        super().__init__()
        self.torchx_conn_id = torchx_conn_id
        self._args = TorchXSettings().override(
            scheduler, scheduler_cfg, scheduler_params, torchxconfig
        )
        self._settings: Optional[TorchXSettings] = None
        self._extras: Optional[Mapping[str, Any]] = None
        self._extras_read = False

    @classmethod
    def get_ui_field_behaviour(cls) -> dict[str, Any]:
        """Hides the URL fields in the connection form and shows an example of the extras."""
        return {
            "hidden_fields": ["host", "schema", "login", "password", "port"],
            "relabeling": {"extra": "TorchX settings (JSON)"},
            "placeholders": {"extra": json.dumps(cls._UI_EXTRAS)},
        }

    @property
    def settings(self) -> TorchXSettings:
        """The connection's settings with the hook's arguments on top (read once)."""
        if self._settings is None:
            self._settings = self._apply_args(self.read_extras())
        return self._settings

    def read_extras(self) -> Optional[Mapping[str, Any]]:
        """The connection's extras, read once; their secrets are masked from then on.

        Returns:
            The extras, or None without a connection (``torchx_conn_id=None``, or the
            default connection missing).
        """
        if not self._extras_read:
            self._extras, self._extras_read = self._connection_extras(), True
        return self._extras

    def with_extras(self, extras: Optional[Mapping[str, Any]]) -> TorchXHook:
        """Takes ``extras`` as the connection's extras: no second read.

        Args:
            extras: what another hook's :meth:`read_extras` read (and masked) for the same
                connection.
        """
        self._extras, self._extras_read = extras, True
        return self

    async def aget_settings(self) -> TorchXSettings:
        """Like :attr:`settings`, reading the connection without blocking the event loop."""
        if self._settings is None:
            extras = None
            if self.torchx_conn_id:
                try:
                    conn = await self.aget_connection(self.torchx_conn_id)
                    extras = conn.extra_dejson
                except AirflowNotFoundException:
                    self._check_missing()
                else:
                    for value in secret_values(extras):
                        await amask_secret(value)
            self._settings = self._apply_args(extras)
        return self._settings

    def get_conn(self) -> Runner:
        """Returns a new ``Runner`` (session ``torchx``) with the configured defaults."""
        return self.make_runner(self.settings)

    @staticmethod
    def make_runner(settings: TorchXSettings) -> Runner:
        """Returns a ``Runner`` for ``settings`` (its ``.torchxconfig``, factory parameters)."""
        return Runner(
            name=SESSION_NAME,
            scheduler_params={**settings.scheduler_params, **settings.kube},
            config=settings.config(),
        )

    def _connection_extras(self) -> Optional[Mapping[str, Any]]:
        if not self.torchx_conn_id:
            return None
        try:
            extras = self.get_connection(self.torchx_conn_id).extra_dejson
        except AirflowNotFoundException:
            self._check_missing()
            return None

        for value in secret_values(extras):
            mask_secret(value)
        return extras

    def _check_missing(self) -> None:
        if self.torchx_conn_id != self.default_conn_name:
            raise AirflowNotFoundException(
                f"connection `{self.torchx_conn_id}` does not exist: create it (type `torchx`)"
                " or pass torchx_conn_id=None to configure the task through its arguments"
            )

    def _apply_args(self, extras: Optional[Mapping[str, Any]]) -> TorchXSettings:
        base = TorchXSettings.from_extras(extras or {}, self.torchx_conn_id or "")
        args = self._args
        return base.override(
            args.scheduler,
            args.scheduler_cfg,
            args.scheduler_params,
            args.torchxconfig if args.torchxconfig else None,
        )
