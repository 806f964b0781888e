"""Result tracking for applications (e.g. HPO trials): ``tracker[trial_idx] = {...}``.

Example::

    from torchx.runtime.tracking import FsspecResultTracker

    tracker = FsspecResultTracker("s3://bucket/experiment")
    tracker[0] = {"loss": 0.1}
    assert tracker[0]["loss"] == 0.1

The implementation lives in :mod:`torchx.runtime.tracking.api`.
"""

from torchx.runtime.tracking.api import FsspecResultTracker, KeyType, ResultTracker, ResultType

__all__ = ["FsspecResultTracker", "KeyType", "ResultTracker", "ResultType"]
