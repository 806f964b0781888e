"""OpenLineage for ``TorchXOperator``: :class:`LineageMixin`.

With ``apache-airflow-providers-openlineage`` installed and a transport configured, the
provider's listener asks the operator for its lineage when the task starts, succeeds and
fails (``get_openlineage_facets_on_start/complete/failure``); the answer is an
``OperatorLineage``:

- inputs and outputs: the operator's ``lineage_inputs`` / ``lineage_outputs`` (dataset and
  checkpoint URIs or local paths; Jinja-rendered with the task's context, TorchX's
  ``${app_id}`` replaced by the app's id once known) and the ``Asset`` s of its ``inlets`` /
  ``outlets``, each an OpenLineage dataset named after the OpenLineage naming conventions
  (``s3://bucket/key`` -> namespace ``s3://bucket``, name ``key``; a local path -> namespace
  ``file``, name the path);
- the ``torchx`` run facet: scheduler, component, app handle, id, state and UI URL, and per
  role its image, replicas and resources (from the AppDef the launch builds, never the env);
- on failure, the ``torchx_error`` run facet: the app's state and error summary.

The listener's run of the task is the OpenLineage parent of the app: before ``execute``
(only when OpenLineage is enabled for this task) the operator's ``env`` gets the standard
``OPENLINEAGE_PARENT_ID`` and ``OPENLINEAGE_ROOT_PARENT_ID`` variables
(``namespace/job/run id``), so a trainer's own OpenLineage events (``openlineage-python``,
dbt, Spark wrappers) link back to the task. A value the task sets in ``env`` wins.

The listener runs the extraction in a forked process (default) or a thread
(``[openlineage] execute_in_thread``). The lineage URIs' Jinja, the connection and the roles
are read when the task's templates are rendered, in the task's own process; only the XCom
reads of COMPLETE/FAIL (and a FAIL's status call) happen in the listener's process. Under
``airflow dags test`` a forked process cannot reach the in-process API (its COMPLETE/FAIL
event is lost after ``[openlineage] execution_timeout``): use ``execute_in_thread``.

Nothing here imports OpenLineage at module level: the facets live in ``_lineage_facets``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Optional

from airflow.sdk import get_current_context

if TYPE_CHECKING:
    from airflow.providers.openlineage.extractors import OperatorLineage

    from torchx_airflow.version_compat import Context

__all__ = ["PARENT_ID_ENV", "ROOT_PARENT_ID_ENV", "LineageMixin", "parent_env"]

PARENT_ID_ENV = "OPENLINEAGE_PARENT_ID"
"""``{namespace}/{job name}/{run id}`` of the task's OpenLineage run."""
ROOT_PARENT_ID_ENV = "OPENLINEAGE_ROOT_PARENT_ID"
"""``{namespace}/{job name}/{run id}`` of the DAG run's (or its parent's) OpenLineage run."""
_FAILURE_XCOM_KEYS = ("app_handle", "app_id", "state", "ui_url")


def _lineage_enabled(op: Any) -> bool:
    """Whether the OpenLineage listener emits events for ``op`` (provider installed, on)."""
    try:
        from airflow.providers.openlineage import conf  # lazy: optional provider
    except ImportError:
        return False
    if conf.is_disabled():
        return False
    from airflow.providers.openlineage.utils.utils import (  # lazy: ~1.2 s; lineage on only
        is_operator_disabled,
        is_selective_lineage_enabled,
    )

    return not is_operator_disabled(op) and bool(is_selective_lineage_enabled(op))


def parent_env(op: Any, ti: Any) -> dict[str, str]:
    """The OpenLineage parent variables for the apps of task instance ``ti`` of ``op``.

    Empty when OpenLineage is off (provider missing, no transport, disabled for the
    operator or, under selective enable, for the task or DAG).

    Args:
        op: the operator.
        ti: the running task instance.
    """
    if ti is None or not _lineage_enabled(op):
        return {}
    from airflow.providers.openlineage.plugins.macros import (  # lazy: ~1.2 s; lineage on only
        lineage_parent_id,
        lineage_root_parent_id,
    )

    return {PARENT_ID_ENV: lineage_parent_id(ti), ROOT_PARENT_ID_ENV: lineage_root_parent_id(ti)}


class LineageMixin:
    """OpenLineage lineage of a TorchX app task (mixed into ``TorchXOperator``).

    Uses only the operator's public attributes (``component``, ``component_args``, ``app``,
    ``scheduler``, ``image``, ``resource``, ``torchx_conn_id``, ...), its ``app_handle``
    XComs and public torchx names.

    Args:
        lineage_inputs: URIs or paths the app reads (datasets, a checkpoint to resume);
            Jinja-rendered with the task's context.
        lineage_outputs: URIs or paths the app writes (checkpoints, model outputs); rendered
            the same way, TorchX's ``${app_id}`` replaced by the app's id.
        *args: the operator's positional arguments.
        **kwargs: the operator's other arguments.
    """

    def __init__(
        self,
        *args: Any,
        lineage_inputs: Optional[Sequence[str]] = None,
        lineage_outputs: Optional[Sequence[str]] = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(*args, **kwargs)
        self.lineage_inputs = [str(u) for u in lineage_inputs or ()]
        self.lineage_outputs = [str(u) for u in lineage_outputs or ()]
        self._lineage_facts: Optional[dict[str, Any]] = None

    def render_template_fields(self, context: Context, jinja_env: Any = None) -> None:
        """Renders the templated fields, then reads what the lineage needs (when it is on).

        The lineage URIs' Jinja, the connection and the AppDef's roles are read here, in the
        task's process, so the listener's forked process makes no API call for them.

        Args:
            context: the task's context.
            jinja_env: the Jinja environment.
        """
        super().render_template_fields(context, jinja_env)  # type: ignore[misc]
        if _lineage_enabled(self):
            from torchx_airflow._lineage_facets import task_facts  # lazy: OpenLineage, ~1.1 s

            self._lineage_facts = task_facts(self, context)

    def pre_execute(self, context: Context) -> None:
        """Adds the OpenLineage parent variables to ``env`` when OpenLineage is on.

        Args:
            context: the task's context.
        """
        op: Any = self
        found = parent_env(op, context.get("ti"))
        if found:
            op.env = {**found, **(op.env or {})}
        super().pre_execute(context)  # type: ignore[misc]

    def get_openlineage_facets_on_start(self) -> OperatorLineage:
        """Lineage at start: datasets known before launch, the ``torchx`` run facet."""
        from torchx_airflow._lineage_facets import operator_lineage  # lazy: OpenLineage, ~1.1 s

        try:
            context: Any = get_current_context()
        except Exception:  # outside a task run (e.g. a unit test): nothing to render with
            context = None
        return operator_lineage(self, context, {}, known=self._lineage_facts)

    def get_openlineage_facets_on_complete(self, task_instance: Any) -> OperatorLineage:
        """Lineage of a succeeded task: the app from its ``return_value`` XCom.

        Args:
            task_instance: the task instance.
        """
        from torchx_airflow._lineage_facets import operator_lineage  # lazy: OpenLineage, ~1.1 s

        xcom = _pull(task_instance, "return_value")
        context = _context_of(task_instance) if self._lineage_facts is None else None
        return operator_lineage(self, context, xcom or {}, known=self._lineage_facts)

    def get_openlineage_facets_on_failure(self, task_instance: Any) -> OperatorLineage:
        """Lineage of a failed task: the app from its XComs, and the ``torchx_error`` facet.

        Args:
            task_instance: the task instance.
        """
        from torchx_airflow._lineage_facets import operator_lineage  # lazy: OpenLineage, ~1.1 s

        xcom = {key: _pull(task_instance, key) for key in _FAILURE_XCOM_KEYS}
        context = _context_of(task_instance) if self._lineage_facts is None else None
        known = self._lineage_facts
        return operator_lineage(self, context, xcom, failed=True, known=known)


# ``partial()`` / ``expand()`` accept the arguments an ``__init__`` of the operator's MRO
# declares in this attribute (Airflow's BaseOperatorMeta sets it on the ``__init__`` s it wraps;
# a plain mixin's is not wrapped)
LineageMixin.__init__._BaseOperatorMeta__param_names = frozenset(  # type: ignore[attr-defined]
    {"lineage_inputs", "lineage_outputs"}
)


def _pull(ti: Any, key: str) -> Any:
    """XCom ``key`` of this task instance (None when absent or unreadable)."""
    try:
        return ti.xcom_pull(task_ids=ti.task_id, key=key, map_indexes=ti.map_index)
    except Exception:
        return None


def _context_of(ti: Any) -> Any:
    try:
        return ti.get_template_context()
    except Exception:
        return None
