"""TorchX's public surface: every module path and name of TorchX (2026-08) imports from torchx.

The lists are data (from ../shared/docs/torchx-public-names.md: 75 modules, 458 names), so the
surface cannot shrink unnoticed.
"""

from __future__ import annotations

import importlib

import pytest

# module path -> space-separated public names ("" = the module itself only)
SURFACE: dict[str, str] = {
    "torchx": "",
    "torchx.apps": "",
    "torchx.apps.utils": "",
    "torchx.apps.utils.booth_main": "main parse_args",
    "torchx.apps.utils.copy_main": "main parse_args",
    "torchx.cli": "",
    "torchx.cli.argparse_util": "ArgOnceAction torchxconfig torchxconfig_list torchxconfig_run",
    "torchx.cli.cmd_base": "AppHandleSubCommand SubCommand",
    "torchx.cli.cmd_cancel": "CmdCancel",
    "torchx.cli.cmd_configure": "CmdConfigure",
    "torchx.cli.cmd_delete": "CmdDelete",
    "torchx.cli.cmd_describe": "CmdDescribe",
    "torchx.cli.cmd_list": "CmdList HANDLE_HEADER NAME_HEADER STATUS_HEADER",
    "torchx.cli.cmd_log": "CmdLog ID_FORMAT get_logs print_log_lines validate",
    "torchx.cli.cmd_run": (
        "CmdBuiltins CmdRun LOCAL_SCHEDULER_WARNING_MSG MISSING_COMPONENT_ERROR_MSG "
        "TorchXRunArgs torchx_run_args_from_argparse torchx_run_args_from_json"
    ),
    "torchx.cli.cmd_runopts": "CmdRunopts",
    "torchx.cli.cmd_status": "CmdStatus parse_list_arg",
    "torchx.cli.cmd_tracker": "CmdTracker SubCommand TrackerBase build_trackers get_configured_trackers",
    "torchx.cli.main": (
        "create_parser get_default_sub_cmds get_sub_cmds main run_main sub_parser_description"
    ),
    "torchx.components": "",
    "torchx.components.component_test_base": "ComponentTestCase",
    "torchx.components.dist": "ddp get_role_name parse_nnodes spmd",
    "torchx.components.structured_arg": "StructuredJArgument StructuredNameArgument",
    "torchx.components.utils": "binary booth copy echo hydra python sh touch",
    "torchx.deprecations": "deprecated deprecated_module",
    "torchx.plugins": (
        "EIGHTH HALF PluginRegistry PluginType QUARTER RegistrationError SIXTEENTH WHOLE "
        "halve_mem_down_to powers_of_two_gpus register registry resource_tags"
    ),
    "torchx.runner": "Runner get_runner",
    "torchx.runner.api": "NONE Runner get_configured_trackers get_runner",
    "torchx.runner.config": (
        "CONFIG_FILE CONFIG_PREFIX_DELIM DEFAULT_CONFIG_DIRS apply dump find_configs "
        "get_config get_configs load load_sections"
    ),
    "torchx.runner.events": "log_event record",
    "torchx.runner.events.api": "SourceType TorchxEvent",
    "torchx.runner.events.handlers": "get_logging_handler",
    "torchx.runtime": "",
    "torchx.runtime.tracking": "",
    "torchx.runtime.tracking.api": "FsspecResultTracker KeyType ResultTracker ResultType",
    "torchx.schedulers": (
        "DEFAULT_SCHEDULER_MODULES Scheduler SchedulerFactory get_default_scheduler_name "
        "get_scheduler_factories plugins"
    ),
    "torchx.schedulers.api": (
        "DAYS_IN_2_WEEKS DescribeAppResponse ListAppResponse Scheduler Stream "
        "StructuredOpts filter_regex split_lines split_lines_iterator"
    ),
    "torchx.schedulers.devices": (
        "DEVICES efa_to_devicemounts get_device_mounts neuron_to_devicemounts to_devicemounts"
    ),
    "torchx.schedulers.docker_scheduler": (
        "CONTAINER_STATE DockerContainer DockerJob DockerScheduler LABEL_APP_ID "
        "LABEL_REPLICA_ID LABEL_ROLE_NAME LABEL_VERSION NETWORK Opts create_scheduler "
        "ensure_network has_docker"
    ),
    "torchx.schedulers.ids": "END_CANDIDATES START_CANDIDATES make_unique random_id random_uint64",
    "torchx.schedulers.local_scheduler": (
        "AppId AppName COMBINED_LOG CWDImageProvider ENV_CUDA_VISIBLE_DEVICES "
        "ImageProvider LocalDirectoryImageProvider LocalScheduler LogIterator NA Opts "
        "PopenProtocol PopenRequest ReplicaParam RoleName STDERR_LOG STDOUT_LOG "
        "SignalException create_scheduler"
    ),
    "torchx.schedulers.streams": "Tee",
    "torchx.settings": (
        "ENV_TORCHXCONFIG ENV_TORCHX_IMAGE ENV_TORCHX_INTERNAL_SESSION_ID "
        "ENV_TORCHX_JOB_ID ENV_TORCHX_PARENT_RUN_ID ENV_TORCHX_TRACKERS"
    ),
    "torchx.specs": (
        "ALL AppDef AppDryRunInfo AppHandle AppState AppStatus BindMount CapabilityKey "
        "CfgVal DeviceMount GiB InvalidRunConfigException MISSING "
        "MalformedAppHandleException NA NONE NULL_RESOURCE ParsedAppHandle ReplicaState "
        "ReplicaStatus Resource ResourceFactory RetryPolicy Role RoleStatus "
        "TORCHX_CONTEXT_NAME TORCHX_HOME UNKNOWN UnknownAppException "
        "UnknownSchedulerException VolumeMount Workspace app_metadata cases "
        "get_named_resources get_type_name import_attr is_terminal macros make_app_handle "
        "materialize_appdef named_resources parse_app_handle parse_mounts plugins "
        "resource runopt runopts"
    ),
    "torchx.specs.api": (
        "ALL AppDef AppDryRunInfo AppHandle AppState AppStatus AppStatusError BindMount "
        "CfgVal DeviceMount InvalidRunConfigException MISSING MalformedAppHandleException "
        "MountType NONE NULL_RESOURCE ParsedAppHandle RESET ReplicaState ReplicaStatus "
        "Resource RetryPolicy Role RoleStatus TORCHX_HOME UNKNOWN UnknownAppException "
        "UnknownSchedulerException VolumeMount Workspace YELLOW_BOLD cases get_type_name "
        "is_started is_terminal macros parse_app_handle runopt runopts"
    ),
    "torchx.specs.builders": (
        "ComponentArgs component_args_from_str make_app_handle materialize_appdef "
        "parse_args parse_mounts"
    ),
    "torchx.specs.capabilities": "CapabilityKey",
    "torchx.specs.file_linter": (
        "ArgTypeValidator ComponentFnVisitor ComponentFunctionValidator LinterMessage "
        "ReturnTypeValidator TorchXArgumentHelpFormatter get_fn_docstring "
        "get_generic_type get_optional_type is_primitive validate"
    ),
    "torchx.specs.finder": (
        "ComponentNotFoundException ComponentValidationException ComponentsFinder "
        "CustomComponentsFinder ModuleComponentsFinder get_builtin_source get_component "
        "get_components is_namespace_package is_package module_relname"
    ),
    "torchx.specs.metadata_keys": "NA TORCHX_CONTEXT_NAME app_metadata",
    "torchx.specs.named_resources_aws": (
        "EFA_DEVICE GiB K8S_ITYPE MEM_TAX NAMED_RESOURCES NEURON_DEVICE aws_c5_18xlarge "
        "aws_g4dn_12xlarge aws_g4dn_16xlarge aws_g4dn_2xlarge aws_g4dn_4xlarge "
        "aws_g4dn_8xlarge aws_g4dn_metal aws_g4dn_xlarge aws_g5_12xlarge aws_g5_16xlarge "
        "aws_g5_24xlarge aws_g5_2xlarge aws_g5_48xlarge aws_g5_4xlarge aws_g5_8xlarge "
        "aws_g5_xlarge aws_g6e_12xlarge aws_g6e_16xlarge aws_g6e_24xlarge aws_g6e_2xlarge "
        "aws_g6e_48xlarge aws_g6e_4xlarge aws_g6e_8xlarge aws_g6e_xlarge "
        "aws_inf2_24xlarge aws_inf2_48xlarge aws_inf2_8xlarge aws_inf2_xlarge "
        "aws_m5_12xlarge aws_m5_16xlarge aws_m5_24xlarge aws_m5_2xlarge aws_m5_4xlarge "
        "aws_m5_8xlarge aws_m5_large aws_m5_metal aws_m5_xlarge aws_m5d_12xlarge "
        "aws_m5d_16xlarge aws_m5d_24xlarge aws_m5d_2xlarge aws_m5d_4xlarge "
        "aws_m5d_8xlarge aws_m5d_large aws_m5d_metal aws_m5d_xlarge aws_p3_16xlarge "
        "aws_p3_2xlarge aws_p3_8xlarge aws_p3dn_24xlarge aws_p4d_24xlarge "
        "aws_p4de_24xlarge aws_p5_48xlarge aws_p5e_48xlarge aws_p5en_48xlarge "
        "aws_p6_b200_48xlarge aws_p6_b300_48xlarge aws_p6e_gb200_36xlarge aws_t3_medium "
        "aws_trn1_2xlarge aws_trn1_32xlarge instance_type_from_resource"
    ),
    "torchx.specs.named_resources_generic": "GiB NAMED_RESOURCES",
    "torchx.specs.overlays": "DEL JOIN OverlaySpec PUT apply_overlay get_overlay set_overlay validate_overlay",
    "torchx.tracker": "AppRun app_run_from_env",
    "torchx.tracker.api": (
        "AppRun AppRunTrackableSource Lineage TrackerArtifact TrackerBase TrackerSource "
        "build_trackers tracker_config_env_var_name trackers_from_environ"
    ),
    "torchx.tracker.backend": "",
    "torchx.tracker.backend.fsspec": "FsspecTracker create generate_filename",
    "torchx.util": "",
    "torchx.util.colors": "",
    "torchx.util.cuda": "has_cuda_devices",
    "torchx.util.datetime": "get_past_epoch_time",
    "torchx.util.entrypoints": "load load_group",
    "torchx.util.io": "COMPONENTS_DIR get_abspath read_conf_file",
    "torchx.util.log_tee_helpers": "tee_logs",
    "torchx.util.modules": "import_attr load_module",
    "torchx.util.session": (
        "CURRENT_SESSION_ID TORCHX_INTERNAL_SESSION_ID get_session_id_or_create_new "
        "get_torchx_session_id"
    ),
    "torchx.util.strings": "normalize_str",
    "torchx.util.types": (
        "decode decode_from_string decode_optional get_argparse_param_type is_bool "
        "is_primitive none_throws to_dict to_list"
    ),
    "torchx.version": "TORCHX_IMAGE",
    "torchx.workspace": "WorkspaceMixin walk_workspace",
    "torchx.workspace.api": "PkgInfo TORCHX_IGNORE WorkspaceBuilder WorkspaceMixin walk_workspace",
    "torchx.workspace.docker_workspace": (
        "AppDef CfgVal DEFAULT_DOCKERFILE DockerWorkspaceMixin Role TORCHX_DOCKERFILE "
        "WorkspaceMixin print_push_events runopts walk_workspace"
    ),
    "torchx.workspace.dir_workspace": "CfgVal DirWorkspaceMixin Role TmpDirWorkspaceMixin WorkspaceMixin walk_workspace",
    "torchx.schedulers.kubernetes_scheduler": (
        "ANNOTATION_ISTIO_SIDECAR JOB_STATE KubernetesJob KubernetesOpts "
        "KubernetesScheduler LABEL_APP_NAME LABEL_INSTANCE_TYPE LABEL_KUBE_APP_NAME "
        "LABEL_ORGANIZATION LABEL_REPLICA_ID LABEL_ROLE_INDEX LABEL_ROLE_NAME "
        "LABEL_UNIQUE_NAME LABEL_VERSION Opts PLACEHOLDER_FIELD_PATH RESERVED_MEMMB "
        "RESERVED_MILLICPU RETRY_POLICIES TASK_STATE app_to_resource create_scheduler "
        "pod_labels prefix_container_name role_to_pod sanitize_for_serialization"
    ),
    "torchx.schedulers.slurm_scheduler": (
        "SLURM_JOB_DIRS SLURM_STATES SlurmBatchRequest SlurmOpts SlurmReplicaRequest "
        "SlurmScheduler appstate_from_slurm_state create_scheduler get_appstate_from_job "
        "version"
    ),
}


def _available(module: str) -> bool:
    try:
        importlib.import_module(module)
    except ModuleNotFoundError as e:
        if e.name != module:
            raise
        return False
    return True


def test_the_list_is_complete() -> None:
    modules = SURFACE
    assert len(modules) == 75
    assert sum(len(names.split()) for names in modules.values()) == 458


@pytest.mark.parametrize("module", sorted(SURFACE))
def test_module_has_every_public_name(module: str) -> None:
    mod = importlib.import_module(module)
    missing = [name for name in SURFACE[module].split() if not hasattr(mod, name)]
    assert missing == [], f"{module} lacks {missing}"


def test_builtin_schedulers_are_registered() -> None:
    from torchx.schedulers import get_scheduler_factories

    factories = get_scheduler_factories()
    assert "local_cwd" in factories
    for name, module in (
        ("local_docker", "torchx.schedulers.docker_scheduler"),
        ("kubernetes", "torchx.schedulers.kubernetes_scheduler"),
        ("slurm", "torchx.schedulers.slurm_scheduler"),
    ):
        assert (name in factories) == _available(module), name


def test_late_bound_module_references() -> None:
    import torchx.plugins
    import torchx.schedulers
    import torchx.specs

    assert torchx.specs.plugins is torchx.plugins
    assert torchx.schedulers.plugins is torchx.plugins
    assert "plugins" not in torchx.specs.__all__
