"""Launcher side of prestarted supervisors: the interpreter start taken off an app's path.

A local app's latency is mostly its supervisor's interpreter start. A process that knows it is
about to launch a local app (the Airflow operator before it reads its connection, ``torchx
run`` before it loads the component) starts a *spare* supervisor first; :func:`launch
<torchx.schedulers._local._launch.launch>` hands the next app to it instead of starting one.
One spare per process at most. A spare that is not used is killed by :func:`discard`, and
exits by itself when this process dies (EOF on its channel).
"""

from __future__ import annotations

import _socket  # the C module: socket.py's enum conversions cost ~1.2 ms of a start
import _thread
import contextlib
import os
import subprocess
import sys
from collections.abc import Iterator, Mapping
from typing import Optional

import torchx
from torchx.schedulers._local._wire import allowed_env

__all__ = [
    "IMPORT_ROOT",
    "Spare",
    "blocks_open",
    "discard",
    "prestart",
    "prestarted_supervisor",
    "replenish",
    "replenish_soon",
    "settle",
    "take",
    "take_warm",
]

IMPORT_ROOT = os.path.dirname(os.path.dirname(os.path.realpath(torchx.__file__)))
"""The directory ``torchx`` is imported from (a supervisor's first argument)."""

_SPARE_MAIN = (
    "import sys; sys.path.insert(0, sys.argv.pop(1));"
    " from torchx.schedulers._local._spare_entry import main; sys.exit(main())"
)

_lock = _thread.allocate_lock()
_spare: Optional[Spare] = None
_warm: Optional[Spare] = None  # started after a launch outside a block, for the next one
_blocks = 0  # open prestarted_supervisor() blocks: no warm spare is started meanwhile
_replenishing = 0  # replenish_soon() threads not done yet


class Spare:
    """A started supervisor process waiting for its app.

    Args:
        import_root: the directory ``torchx`` is imported from.
        environ: the environment it starts with (None: this process's); an app whose
            supervisor needs another one is declined (:meth:`assign`).
    """

    def __init__(self, import_root: str, environ: Optional[Mapping[str, str]] = None) -> None:
        ours, theirs = _socket.socketpair(_socket.AF_UNIX, _socket.SOCK_SEQPACKET)
        try:
            cmd = [sys.executable, "-I", "-S", "-c", _SPARE_MAIN, import_root]
            self.process = subprocess.Popen(
                [*cmd, "--channel-fd", str(theirs.fileno())],
                env=None if environ is None else dict(environ),
                pass_fds=[theirs.fileno()],
                start_new_session=True,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
        except BaseException:
            ours.close()
            raise
        finally:
            theirs.close()
        self._channel = ours
        self._owner = os.getpid()  # a forked child must not hand its apps to our spare
        # the replicas inherit the supervisor's environment: a spare started before a change
        # of os.environ would hand them the old one
        self._environ = dict(os.environ if environ is None else environ)
        # reaps the spare once it exits (no zombie), as for a supervisor started per app
        _thread.start_new_thread(self.process.wait, ())

    def assign(
        self,
        app_dir: str,
        control_fd: int,
        launcher_fd: Optional[int],
        environ: Optional[Mapping[str, str]] = None,
    ) -> bool:
        """Hands an app to the spare; False if it cannot take it (start a supervisor instead).

        Args:
            app_dir: the app's state dir, with its request written.
            control_fd: the app's listening control socket (duplicated into the spare).
            launcher_fd: the lifeline's read end when the app is attached, else None.
            environ: the environment the app's supervisor must have (None: ``os.environ``);
                the spare declines unless it started with exactly that one.
        """
        if (os.environ if environ is None else environ) != self._environ:
            return False
        flag = b"D" if launcher_fd is None else b"L"
        fds = [control_fd] if launcher_fd is None else [control_fd, launcher_fd]
        try:
            rights = b"".join(fd.to_bytes(4, sys.byteorder) for fd in fds)  # C ints
            self._channel.sendmsg(
                [flag + os.fsencode(app_dir)],
                [(_socket.SOL_SOCKET, _socket.SCM_RIGHTS, rights)],
            )
        except OSError:  # it died, or the message cannot be sent
            return False
        self._channel.close()
        return True

    def discard(self) -> None:
        """Stops an unused spare (it has no app: killing it loses nothing).

        Never blocks for ever: run from a finalizer (a block closed by the garbage collector)
        inside this ``Popen``'s own ``wait``, a plain ``wait()`` would wait for a lock its
        caller holds. Bounded, it leaves at worst a zombie for ``subprocess`` to reap later.
        """
        self._channel.close()
        self.process.kill()
        try:
            self.process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            pass


def prestart(import_root: str, environ: Optional[Mapping[str, str]] = None) -> None:
    """Starts this process's spare supervisor (with ``environ``), unless one is waiting."""
    global _spare
    with _lock:
        if _spare is None:
            _spare = Spare(import_root, environ)


def take() -> Optional[Spare]:
    """Returns the waiting spare, which the caller now owns, or None.

    In a process forked after the spare started, the spare is its parent's: the child drops
    its copy of the channel and gets None.
    """
    global _spare
    with _lock:
        spare, _spare = _spare, None
    if spare is not None and spare._owner != os.getpid():
        spare._channel.close()
        return None
    return spare


def discard() -> None:
    """Stops the waiting spare, if any."""
    spare = take()
    if spare is not None:
        spare.discard()


def replenish(import_root: str) -> None:
    """Starts this process's *warm* spare (for its next launch), unless one is waiting.

    A process that launched a local app outside a ``prestarted_supervisor()`` block (a
    program using the API, a pipeline) keeps one spare waiting for its next launch: an idle
    interpreter, which exits when this process does (EOF on its channel).
    """
    global _warm
    with _lock:
        if _warm is not None and _warm._owner == os.getpid():
            return
        _warm = None
    spare = Spare(import_root)
    with _lock:
        kept = _warm is None
        if kept:
            _warm = spare
    if not kept:  # another thread was quicker
        spare.discard()
    elif not _at_exit:
        _register_at_exit()


def replenish_soon(import_root: str) -> None:
    """:func:`replenish` in a new thread (the fork stays off the caller's path)."""
    global _replenishing
    with _lock:
        _replenishing += 1
    try:
        _thread.start_new_thread(_replenish_then_count, (import_root,))
    except BaseException:
        _count_replenished()
        raise


def _replenish_then_count(import_root: str) -> None:
    try:
        replenish(import_root)
    finally:
        _count_replenished()


def _count_replenished() -> None:
    global _replenishing
    with _lock:
        _replenishing -= 1


def settle(timeout: float) -> bool:
    """Waits until no :func:`replenish_soon` thread is running; False if ``timeout`` passed."""
    import time  # lazy: only tests wait for the thread

    deadline = time.monotonic() + timeout
    while _replenishing and time.monotonic() < deadline:
        time.sleep(0.01)
    return not _replenishing


_at_exit = False


def _register_at_exit() -> None:
    global _at_exit
    import atexit  # lazy: a warm spare only (builtin, ~0.02 ms)

    _at_exit = True
    atexit.register(_close_warm)


def _close_warm() -> None:
    """At exit: closes the warm spare's channel (EOF: it exits with nothing done)."""
    spare = take_warm()
    if spare is not None:
        spare._channel.close()


def take_warm() -> Optional[Spare]:
    """Returns the warm spare, which the caller now owns, or None (see :func:`take`)."""
    global _warm
    with _lock:
        spare, _warm = _warm, None
    if spare is not None and spare._owner != os.getpid():
        spare._channel.close()
        return None
    return spare


@contextlib.contextmanager
def prestarted_supervisor(
    enabled: bool = True,
    env_allow: Optional[list[str]] = None,
    env_drop: Optional[list[str]] = None,
) -> Iterator[None]:
    """Starts a supervisor now for the next ``local_cwd`` app this process launches.

    An app's start latency is mostly its supervisor's interpreter start. Wrap the work that
    precedes a launch (reading settings, loading the component, the dry run) in this block
    and that start happens meanwhile: the first app scheduled inside the block is handed to
    the waiting supervisor. One that is not used (the launch went elsewhere or failed) is
    stopped when the block exits. A change of ``os.environ`` inside the block makes the
    launch start a fresh supervisor, as the replicas inherit the supervisor's environment;
    so does an ``env_allow``/``env_drop`` run option other than the block's (the spare starts
    with the environment they leave, and holds nothing else: the Airflow operator passes
    the ones it will launch with). Outside
    such blocks a process that launched an app keeps a spare for its next one (a *warm*
    spare, :func:`replenish`); inside them it does not (a ``torchx run`` exits after its
    app).

    Args:
        enabled: False makes the block do nothing (e.g. when the app will not be local).
        env_allow: the ``env_allow`` run option the app will be launched with (None: none).
        env_drop: its ``env_drop`` run option.
    """
    global _blocks
    if enabled:
        prestart(IMPORT_ROOT, allowed_env(dict(os.environ), env_allow, env_drop))
        _blocks += 1
    try:
        yield
    finally:
        if enabled:
            _blocks -= 1
            discard()


def blocks_open() -> bool:
    """Whether a :func:`prestarted_supervisor` block is open (then no warm spare is started)."""
    return _blocks > 0
