"""A scheduler's run options (``runopts``, ``runopt``, ``CfgVal``) without the app types.

The public path for code that needs only run options and their checks (a scheduler's
``Opts``, ``torchx runopts``): importing it does not import :mod:`torchx.specs.api`. The same
names are in :mod:`torchx.specs.api` and :mod:`torchx.specs`.
"""

from __future__ import annotations

from torchx.specs._constants import NONE, cases
from torchx.specs._errors import InvalidRunConfigException
from torchx.specs._runopts import CfgVal, runopt, runopts

__all__ = ["NONE", "CfgVal", "InvalidRunConfigException", "cases", "runopt", "runopts"]
