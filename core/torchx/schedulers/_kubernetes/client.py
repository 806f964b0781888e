"""Loading the cluster configuration, and turning an unreachable API server into one clear error."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, Optional

__all__ = ["ClusterUnreachable", "api_server_errors", "load_api_client"]


class ClusterUnreachable(ConnectionError):
    """The Kubernetes API server cannot be reached, or no cluster is configured."""


def load_api_client(
    kubeconfig: Optional[str] = None,
    context: Optional[str] = None,
    in_cluster: Optional[bool] = None,
    kubeconfig_text: Optional[str] = None,
) -> Any:
    """An ``ApiClient`` from the in-cluster service account, else the kubeconfig.

    With no argument: in-cluster, else ``$KUBECONFIG`` (or ``~/.kube/config``). The arguments
    (the scheduler factory's ``kubeconfig``, ``kube_context``, ``in_cluster`` and
    ``kubeconfig_text``) choose instead: ``in_cluster=True`` only the service account;
    ``kubeconfig_text`` (YAML or JSON) or ``kubeconfig`` (a path) with ``context``.

    Returns:
        The configured client.

    Raises:
        ClusterUnreachable: no configuration exists (says how to point at a cluster).
    """
    from kubernetes import client, config  # lazy: ~300 ms; runopts kubernetes skips it

    configuration = client.Configuration()
    if in_cluster or kubeconfig or kubeconfig_text:
        try:
            if in_cluster:
                config.load_incluster_config(client_configuration=configuration)
            elif kubeconfig_text:
                import yaml  # lazy: yaml ~17 ms, an inline kubeconfig only

                loaded = yaml.safe_load(kubeconfig_text)
                config.load_kube_config_from_dict(
                    loaded, context=context, client_configuration=configuration
                )
            else:
                config.load_kube_config(
                    config_file=kubeconfig, context=context, client_configuration=configuration
                )
        except (config.ConfigException, OSError, ValueError) as e:
            raise ClusterUnreachable(
                f"the given Kubernetes configuration does not load: {e}"
            ) from e
        return client.ApiClient(configuration)
    try:
        config.load_incluster_config(client_configuration=configuration)
    except config.ConfigException:
        try:
            # KUBECONFIG as it is now (the client's default is read once, at its import)
            kubeconfig = os.environ.get("KUBECONFIG") or None
            config.load_kube_config(config_file=kubeconfig, client_configuration=configuration)
        except (config.ConfigException, OSError) as e:
            raise ClusterUnreachable(
                f"no Kubernetes cluster configured ({e}); set KUBECONFIG to a kubeconfig file,"
                " or for an offline --dryrun pass -cfg validate_spec=False"
            ) from e
    return client.ApiClient(configuration)


@contextmanager
def api_server_errors(api_client: Any, doing: str) -> Iterator[None]:
    """Re-raise connection failures to the API server as one clear ``ClusterUnreachable``.

    Args:
        api_client: the client in use (its host goes into the message).
        doing: what was being done, e.g. ``"validating the job spec"``.

    Raises:
        ClusterUnreachable: the server could not be reached.
    """
    from urllib3.exceptions import HTTPError  # lazy: urllib3 ~70 ms; runopts kubernetes skips it

    try:
        yield
    except HTTPError as e:
        host = getattr(getattr(api_client, "configuration", None), "host", "?")
        reason = getattr(e, "reason", None) or e
        raise ClusterUnreachable(
            f"cannot reach the Kubernetes API server at {host} while {doing}: {reason};"
            " check that the cluster is up and KUBECONFIG points at it"
        ) from e
