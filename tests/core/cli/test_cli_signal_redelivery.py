"""A signal whose exception a finalizer swallowed is delivered again (``torchx.cli._signals``).

When the handler runs inside ``__del__`` (or a generator closed by the collector, as urllib3
closes a Kubernetes watch's connection), Python prints "Exception ignored in" and goes on: a
``torchx run --wait`` used to keep waiting after such a Ctrl-C. A real process with the CLI's
handlers receives the signal inside a finalizer; the signal must come back until the command
catches it, and stop coming once it did.
"""

from __future__ import annotations

import signal
from pathlib import Path

import pytest
from _support import SLOW_FINALIZER, signal_in_finalizer

SCRIPT = """\
import sys, time
from torchx.cli._signals import (
    acknowledge, exit_code_for, install_signal_handlers, signal_exception_types,
)

install_signal_handlers()


{slow}

try:
    Slow()
    print("waiting", flush=True)
    while True:
        time.sleep(0.05)
except signal_exception_types() as e:
    acknowledge()
    print("caught", flush=True)
    time.sleep(3)  # a cancel that takes a while: no second exception may land in it
    print("cancelled", flush=True)
    sys.exit(exit_code_for(e))
""".replace("{slow}", SLOW_FINALIZER)


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=lambda s: s.name)
def test_a_signal_lost_in_a_finalizer_comes_back_until_caught(
    sig: signal.Signals, tmp_path: Path
) -> None:
    script = tmp_path / "wait.py"
    script.write_text(SCRIPT)
    returncode, out, err = signal_in_finalizer(script, sig)
    assert "Exception ignored in" in err  # the first delivery was lost
    assert out == "waiting\ncaught\ncancelled\n", err
    assert returncode == 128 + sig, err


def test_a_redelivery_that_crosses_the_acknowledgement_is_ignored() -> None:
    from torchx.util.signals import Redelivery

    redelivery = Redelivery(interval=3600)
    assert redelivery.received(signal.SIGINT)  # the first delivery: the handler raises
    assert redelivery.pending == signal.SIGINT
    redelivery._resent = True  # the re-delivery thread sent it again ...
    redelivery.acknowledge()  # ... just before the command caught the first one
    assert not redelivery.received(signal.SIGINT)  # ignored: the signal is handled
    assert redelivery.received(signal.SIGINT)  # a new signal from the user raises again
    redelivery.acknowledge()
