import subprocess
import sys

import torchx.specs as specs
from torchx.specs import api

_EXPECTED_ALL = set(
    [
        "app_metadata",
        "AppDef",
        "AppDryRunInfo",
        "AppHandle",
        "AppState",
        "AppStatus",
        "BindMount",
        "CapabilityKey",
        "CfgVal",
        "DeviceMount",
        "get_type_name",
        "is_terminal",
        "macros",
        "MISSING",
        "NA",
        "NONE",
        "NULL_RESOURCE",
        "parse_app_handle",
        "ParsedAppHandle",
        "ReplicaState",
        "ReplicaStatus",
        "Resource",
        "RetryPolicy",
        "Role",
        "RoleStatus",
        "runopt",
        "runopts",
        "cases",
        "UNKNOWN",
        "UnknownAppException",
        "UnknownSchedulerException",
        "InvalidRunConfigException",
        "MalformedAppHandleException",
        "VolumeMount",
        "resource",
        "get_named_resources",
        "named_resources",
        "make_app_handle",
        "materialize_appdef",
        "parse_mounts",
        "ALL",
        "TORCHX_CONTEXT_NAME",
        "TORCHX_HOME",
        "Workspace",
    ]
)


def test_all_matches_the_reference() -> None:
    assert set(specs.__all__) == _EXPECTED_ALL
    assert len(specs.__all__) == len(_EXPECTED_ALL)


def test_reexports_are_the_api_objects() -> None:
    for name in specs.__all__:
        if hasattr(api, name):
            assert getattr(specs, name) is getattr(api, name), name
    assert specs.GiB == 1024
    assert specs.named_resources_aws.NAMED_RESOURCES
    assert specs.named_resources_generic.NAMED_RESOURCES
    assert callable(specs._NamedResourcesLibrary)


def test_star_import_and_lazy_materialize_appdef() -> None:
    code = (
        "import sys\n"
        "import torchx.specs\n"
        "assert 'docstring_parser' not in sys.modules\n"
        "assert 'torchx.specs.builders' not in sys.modules\n"
        "from torchx.specs import *\n"
        "from torchx.specs.builders import materialize_appdef as m\n"
        "assert materialize_appdef is m\n"
        "assert Role('a', 'b').name == 'a'\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_unknown_attribute() -> None:
    try:
        specs.does_not_exist  # type: ignore[attr-defined]  # noqa: B018
    except AttributeError as e:
        assert "does_not_exist" in str(e)
    else:
        raise AssertionError("expected AttributeError")
