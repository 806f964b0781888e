"""Bad .torchxconfig files and component files: one clear line, exit 1, no traceback."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from _badinput import BadInput

Write = Callable[[str, str], Path]


def _with_config(bad: BadInput, write: Write, text: str, *args: str) -> str:
    cfg = write("cfg.ini", text)
    return bad.run(*args, env={"TORCHXCONFIG": str(cfg)})


def test_torchxconfig_env_names_a_missing_file(bad: BadInput) -> None:
    line = bad.run("run", "--dryrun", "utils.echo", env={"TORCHXCONFIG": str(bad.cwd / "nope")})
    assert "does not exist or is not a file" in line


def test_torchxconfig_env_names_a_directory(bad: BadInput) -> None:
    line = bad.run("run", "--dryrun", "utils.echo", env={"TORCHXCONFIG": str(bad.cwd)})
    assert "does not exist or is not a file" in line


def test_config_without_section_header(bad: BadInput, write: Write) -> None:
    line = _with_config(bad, write, "scheduler = local_cwd\n", "run", "--dryrun", "utils.echo")
    assert "cfg.ini, line 1: File contains no section headers" in line
    assert "under a [section] header" in line


def test_config_with_a_duplicate_section(bad: BadInput, write: Write) -> None:
    text = "[local_cwd]\nlog_dir = /tmp\n[local_cwd]\ndetach = True\n"
    line = _with_config(bad, write, text, "run", "--dryrun", "-s", "local_cwd", "utils.echo")
    assert "section 'local_cwd' already exists" in line


def test_config_run_option_of_the_wrong_type(bad: BadInput, write: Write) -> None:
    text = "[local_cwd]\ndetach = maybe\n"
    line = _with_config(bad, write, text, "run", "--dryrun", "-s", "local_cwd", "utils.echo")
    assert "`maybe` is not a valid bool literal" in line


def test_config_default_component_unknown(bad: BadInput, write: Write) -> None:
    text = "[cli:run]\ncomponent = utils.ech\n"
    line = _with_config(bad, write, text, "run", "--dryrun", "-s", "local_cwd")
    assert "`utils.echo`" in line


def test_config_component_default_of_the_wrong_type(bad: BadInput, write: Write) -> None:
    text = "[component:utils.echo]\nnum_replicas = abc\n"
    line = _with_config(bad, write, text, "run", "--dryrun", "-s", "local_cwd", "utils.echo")
    assert "default value 'abc' of `--num_replicas` is not a valid int" in line


def test_config_named_resource_incomplete(bad: BadInput, write: Write) -> None:
    text = "[named_resources]\nbig = cpu=4\n"
    args = ("run", "--dryrun", "-s", "local_cwd", "utils.sh", "-h", "big", "true")
    line = _with_config(bad, write, text, *args)
    assert "invalid named resource `big`" in line and "`memMB` is required" in line


def test_component_file_missing(bad: BadInput) -> None:
    assert "foo.py" in bad.run("run", "--dryrun", "-s", "local_cwd", "foo.py:bar")


def test_component_file_without_function(bad: BadInput, write: Write) -> None:
    write("comp.py", "x = 1\n")
    line = bad.run("run", "--dryrun", "-s", "local_cwd", "comp.py")
    assert "name it as `comp.py:FUNCTION_NAME`" in line


def test_component_function_missing(bad: BadInput, write: Write) -> None:
    write("comp.py", "x = 1\n")
    assert "bar" in bad.run("run", "--dryrun", "-s", "local_cwd", "comp.py:bar")


def test_component_file_with_a_syntax_error(bad: BadInput, write: Write) -> None:
    write("syn.py", "def f(:\n")
    line = bad.run("run", "--dryrun", "-s", "local_cwd", "syn.py:f")
    assert "syntax error in" in line and "syn.py, line 1" in line


def test_component_file_importing_a_missing_module(bad: BadInput, write: Write) -> None:
    write(
        "imp.py",
        "import nosuchmodule_xyz\nfrom torchx import specs\n\n\n"
        'def f() -> specs.AppDef:\n    """F."""\n    return specs.AppDef("x")\n',
    )
    line = bad.run("run", "--dryrun", "-s", "local_cwd", "imp.py:f")
    assert "component file imp.py: No module named 'nosuchmodule_xyz'" in line


def test_component_with_the_wrong_return_annotation(bad: BadInput, write: Write) -> None:
    write("ret.py", 'def f(n: int) -> int:\n    """F."""\n    return n\n')
    line = bad.run("run", "--dryrun", "-s", "local_cwd", "ret.py:f")
    assert "incorrect return annotation" in line


def test_component_argument_without_annotation(bad: BadInput, write: Write) -> None:
    write("ann.py", 'from torchx import specs\n\n\ndef f(n) -> specs.AppDef:\n    """F."""\n')
    assert "Missing type annotation" in bad.run("run", "--dryrun", "-s", "local_cwd", "ann.py:f")


def test_component_raising_a_value_error(bad: BadInput, write: Write) -> None:
    write(
        "raise.py",
        "from torchx import specs\n\n\ndef f(n: int) -> specs.AppDef:\n"
        '    """F.\n\n    Args:\n        n: a number\n    """\n'
        '    raise ValueError(f"n must be positive, got {n}")\n',
    )
    line = bad.run("run", "--dryrun", "-s", "local_cwd", "raise.py:f", "--n", "-1")
    assert "n must be positive, got -1" in line


def test_component_missing_a_required_argument(bad: BadInput, write: Write) -> None:
    write(
        "req.py",
        "from torchx import specs\n\n\ndef f(n: int) -> specs.AppDef:\n"
        '    """F.\n\n    Args:\n        n: a number\n    """\n    return specs.AppDef("x")\n',
    )
    line = bad.run("run", "--dryrun", "-s", "local_cwd", "req.py:f")
    assert "the following arguments are required: --n" in line


def test_component_with_zero_replicas(bad: BadInput, write: Write) -> None:
    write(
        "zero.py",
        "from torchx import specs\n\n\ndef f() -> specs.AppDef:\n"
        '    """F."""\n    role = specs.Role("r", image="i", entrypoint="e", num_replicas=0)\n'
        '    return specs.AppDef("x", roles=[role])\n',
    )
    assert "Non-positive replicas for role: r" in bad.run("run", "-s", "local_cwd", "zero.py:f")
    assert bad.apps() == []


def test_tracker_not_configured(bad: BadInput) -> None:
    assert "No trackers configured" in bad.run("tracker", "list", "jobs")


def test_tracker_unknown_name(bad: BadInput) -> None:
    line = bad.run("tracker", "list", "jobs", env={"TORCHX_TRACKERS": "nosuch"})
    assert "none of the configured trackers (nosuch) could be built" in line


def test_tracker_fsspec_without_config(bad: BadInput, write: Write) -> None:
    line = _with_config(bad, write, "[torchx:tracker]\nfsspec =\n", "tracker", "list", "jobs")
    assert "the fsspec tracker needs a config" in line
