"""deploy/kfp-launcher-rbac.yaml grants exactly the API calls the kubernetes scheduler makes.

The calls are read from the scheduler's sources (every ``*_namespaced_*`` client method and the
pod watch), mapped to the RBAC rule each needs; the manifest's Role must hold exactly those
rules. A new call in the scheduler fails this test until the manifest (and the table below) has
it; a rule nobody needs fails it too. ``test_kfp_launcher_live.py`` runs a launcher under it.
"""

import re
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[2]
MANIFEST = REPO / "deploy" / "kfp-launcher-rbac.yaml"
SOURCES = [
    *sorted((REPO / "core/torchx/schedulers/_kubernetes").glob("*.py")),
    REPO / "core/torchx/schedulers/kubernetes_scheduler.py",
]
VOLCANO = "batch.volcano.sh"
JOBSET = "jobset.x-k8s.io"
KUEUE = "kueue.x-k8s.io"

# custom objects: the module that calls them -> (api group, resource) (one kind per module)
CUSTOM_KINDS = {
    "volcano_ops.py": (VOLCANO, "jobs"),
    "jobset_ops.py": (JOBSET, "jobsets"),
    "kueue.py": (KUEUE, "workloads"),
}
CUSTOM_VERBS = {
    "create_namespaced_custom_object": ("", "create"),
    "get_namespaced_custom_object": ("", "get"),
    "list_namespaced_custom_object": ("", "list"),
    "patch_namespaced_custom_object": ("", "patch"),
    "delete_namespaced_custom_object": ("", "delete"),
    "replace_namespaced_custom_object_status": ("/status", "update"),
}

# client method -> (api group, resource, verb)
CALLS = {
    "create_namespaced_job": ("batch", "jobs", "create"),
    "read_namespaced_job": ("batch", "jobs", "get"),
    "list_namespaced_job": ("batch", "jobs", "list"),
    "patch_namespaced_job": ("batch", "jobs", "patch"),
    "delete_namespaced_job": ("batch", "jobs", "delete"),
    "create_namespaced_service": ("", "services", "create"),
    "delete_namespaced_service": ("", "services", "delete"),
    "list_namespaced_pod": ("", "pods", "list"),
    "delete_namespaced_pod": ("", "pods", "delete"),
    "read_namespaced_pod_log": ("", "pods/log", "get"),
    "list_namespaced_event": ("", "events", "list"),
}


def used_rules() -> set[tuple[str, str, str]]:
    """The rules the scheduler's sources need (a pod watch needs ``watch`` on pods)."""
    rules: set[tuple[str, str, str]] = set()
    for path in SOURCES:
        text = path.read_text()
        for method in set(re.findall(r"\.(\w+_namespaced_\w+)\b", text)):
            if method in CUSTOM_VERBS:
                assert path.name in CUSTOM_KINDS, (
                    f"{path.name} calls {method}: add the custom object's kind to CUSTOM_KINDS"
                )
                (group, resource), (sub, verb) = CUSTOM_KINDS[path.name], CUSTOM_VERBS[method]
                rules.add((group, resource + sub, verb))
                continue
            assert method in CALLS, f"{path.name} calls {method}: add its RBAC rule to CALLS"
            rules.add(CALLS[method])
        if re.search(r"Watch\(\)\.stream\(\s*(self\._)?core\.list_namespaced_pod", text):
            rules.add(("", "pods", "watch"))
    return rules


def manifest_rules() -> set[tuple[str, str, str]]:
    docs = {d["kind"]: d for d in yaml.safe_load_all(MANIFEST.read_text())}
    assert set(docs) == {"ServiceAccount", "Role", "RoleBinding"}
    binding = docs["RoleBinding"]
    assert binding["roleRef"]["name"] == docs["Role"]["metadata"]["name"]
    assert binding["subjects"][0]["name"] == docs["ServiceAccount"]["metadata"]["name"]
    return {
        (group, resource, verb)
        for rule in docs["Role"]["rules"]
        for group in rule["apiGroups"]
        for resource in rule["resources"]
        for verb in rule["verbs"]
    }


def test_the_manifest_grants_exactly_what_the_scheduler_calls() -> None:
    used, granted = used_rules(), manifest_rules()
    assert not used - granted, f"missing from {MANIFEST.name}: {sorted(used - granted)}"
    assert not granted - used, f"granted but never used: {sorted(granted - used)}"


def test_the_scan_sees_every_mode() -> None:
    """Plain (batch Jobs, pod watch), Volcano (its Jobs and their status), JobSet and Kueue
    (Workloads: reading admission, deactivating on cancel) calls are found."""
    used = used_rules()
    assert (JOBSET, "jobsets", "create") in used
    assert (KUEUE, "workloads", "patch") in used
    assert ("", "pods", "watch") in used
    assert ("batch", "jobs", "patch") in used
    assert (VOLCANO, "jobs/status", "update") in used
