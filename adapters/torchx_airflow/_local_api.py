"""The in-process Execution API of ``dag.test()``, built for the Task SDK's own version only.

``dag.test()`` serves its task through Airflow's Execution API in the same process
(``InProcessExecutionAPI``). Airflow builds that app with every API version it still serves to
older workers (9 in Airflow 3.3.2): Cadwyn generates one copy of every route and schema per
version, about 3 s of CPU before the first task starts, on every ``dag.test()`` process.
The in-process client is the Task SDK of the same installation, and it always speaks the
newest version, so :func:`serve_newest_version_only` builds the app for that version alone
(0.4 s). The routes and schemas it serves are Airflow's own, unchanged; what it no longer
serves is what only an older worker would ask for. docs/airflow.md ("Running DAGs locally")
lists this among the ways the local harness differs from a deployment.
"""

from __future__ import annotations

import logging

__all__ = ["serve_newest_version_only"]

_log = logging.getLogger(__name__)


def serve_newest_version_only() -> bool:
    """Makes this process's in-process Execution API serve the newest API version alone.

    Call it after Airflow's configuration is set and before the first ``dag.test()``. It
    changes module state of this process only (the version bundle and the router the app is
    generated from), so it belongs in a child process that runs DAGs, never in a deployment.

    Returns:
        ``True`` if the app is trimmed; ``False`` (with a warning logged) if this Airflow's
        internals differ from 3.3's, in which case the app serves every version as usual.
    """
    try:
        import airflow.api_fastapi.execution_api.routes as routes  # lazy: reads Airflow's config
        import airflow.api_fastapi.execution_api.versions as versions  # lazy: the same
        from cadwyn import HeadVersion, Version, VersionBundle  # lazy: with Airflow's API
        from cadwyn.route_generation import _DELETED_ROUTE_TAG  # lazy: with Airflow's API
        from fastapi.routing import APIRoute  # lazy: with Airflow's API (60 ms)
    except ImportError as err:
        _log.warning("serving every Execution API version (%s)", err)
        return False
    newest = versions.bundle.versions[0].value
    versions.bundle = VersionBundle(HeadVersion(), Version(newest))
    # routes that only older versions serve must be restored by an older version's change,
    # and this bundle has none: at the newest version they do not exist
    router = routes.execution_api_router
    router.routes[:] = [
        route
        for route in router.routes
        if not (isinstance(route, APIRoute) and _DELETED_ROUTE_TAG in route.tags)
    ]
    return True
