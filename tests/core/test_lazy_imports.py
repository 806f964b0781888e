import importlib.util
import subprocess
import sys

import pytest

_HEAVY = ("kubernetes", "docker", "airflow", "kfp", "pydantic", "yaml", "docstring_parser")


def _imported_heavy_modules(code: str) -> list[str]:
    probe = (
        f"{code}\n"
        "import sys\n"
        f"heavy = {_HEAVY!r}\n"
        "print(','.join(sorted({m.split('.')[0] for m in sys.modules} & set(heavy))))\n"
    )
    out = subprocess.run([sys.executable, "-c", probe], check=True, capture_output=True, text=True)
    return [m for m in out.stdout.strip().split(",") if m]


def test_import_torchx_specs_is_lazy() -> None:
    assert _imported_heavy_modules("import torchx.specs") == []


def test_import_torchx_specs_api_is_lazy() -> None:
    assert _imported_heavy_modules("import torchx.specs.api, torchx.settings") == []


def test_torchx_help_is_lazy() -> None:
    try:
        found = importlib.util.find_spec("torchx.cli.main") is not None
    except ImportError:
        found = False
    if not found:
        pytest.skip("torchx.cli.main does not exist yet")
    out = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "torchx.cli.main", "--help"],
        capture_output=True,
        text=True,
    )
    if out.returncode != 0 and "usage" not in out.stdout:
        pytest.skip(f"torchx.cli.main is not runnable yet: {out.stderr.strip().splitlines()[-1:]}")
    imported = {
        line.split("|")[-1].strip().split(".")[0]
        for line in out.stderr.splitlines()
        if line.startswith("import time:")
    }
    assert imported & set(_HEAVY) == set()
