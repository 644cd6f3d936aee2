"""A JVM with a py4j gateway: started with a deadline, called with deadlines, killed by PID.

::

    with JvmGateway(JvmOptions(classpath=jars, log_path=run_dir / "jvm.log")) as jvm:
        version = jvm.call(lambda: jvm.jvm.java.lang.System.getProperty("java.version"))
    # the JVM process is gone here (SIGKILL by PID; py4j's shutdown() alone leaves it running)

Every call runs in a worker thread and is abandoned after its deadline with
:class:`~adapters.javaclient.errors.JavaCallTimeout` (the JVM may still be running it; killing
the JVM on close unblocks the worker). Java exceptions come back as typed errors
(:mod:`.errors`). The JVM is started in its own process group with ``--die-on-broken-pipe``,
so it also dies if this Python process dies without closing it.
"""

from __future__ import annotations

import atexit
import concurrent.futures
import contextlib
import logging
import os
import signal
import subprocess
import tempfile
import threading
import time
import uuid
import weakref
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Any, TypeVar

from py4j.java_gateway import GatewayParameters, JavaGateway, find_jar_path, launch_gateway
from py4j.protocol import Py4JError, Py4JJavaError, Py4JNetworkError

from adapters.installations.java import find_java
from adapters.javaclient.errors import (
    JavaCallTimeout,
    JavaClientError,
    JavaException,
    JvmGone,
    JvmStartError,
    bk_error_for,
)

log = logging.getLogger(__name__)

T = TypeVar("T")

#: JDK 17 flags every BookKeeper client needs: 4.11's checksum code reflects into
#: java.util.zip, and without this open its callbacks fail and ``addEntry`` hangs forever.
DEFAULT_JVM_FLAGS: tuple[str, ...] = (
    "--add-opens=java.base/java.util.zip=ALL-UNNAMED",
    "--add-opens=java.base/java.nio=ALL-UNNAMED",
    "--add-opens=java.base/sun.nio.ch=ALL-UNNAMED",
    "-Xmx256m",
)
DEFAULT_START_TIMEOUT = 30.0
DEFAULT_CALL_TIMEOUT = 30.0
_KILL_WAIT = 10.0
_EXIT_GRACE = 2.0
_MARKER_PROPERTY = "bkconform.jvm"
#: Java classes whose ``getCode()`` is a ``BKException.Code`` (the api one and the legacy one).
_BK_EXCEPTION_CLASSES = frozenset(
    {"org.apache.bookkeeper.client.api.BKException", "org.apache.bookkeeper.client.BKException"}
)
_LIVE: weakref.WeakSet[JvmGateway] = weakref.WeakSet()


def py4j_jar() -> Path:
    """The py4j jar shipped in the py4j wheel (its version matches the Python side)."""
    jar = Path(find_jar_path())
    if not jar.is_file():
        raise JvmStartError(
            "the py4j jar is missing from the py4j installation (expected share/py4j/"
            "py4j<version>.jar next to the virtualenv); reinstall py4j"
        )
    return jar


@dataclass(frozen=True)
class JvmOptions:
    """How to start the JVM.

    ``classpath``: jars or class directories (the py4j jar is added). ``java``: the ``java``
    executable (default: ``$JAVA_HOME/bin/java``, else ``java`` on ``PATH``). ``log_path``:
    where the JVM's stdout and stderr go (default: a temporary file, kept and named in errors).
    """

    classpath: Sequence[Path] = ()
    java: str | None = None
    flags: Sequence[str] = DEFAULT_JVM_FLAGS
    extra_flags: Sequence[str] = ()
    system_properties: dict[str, str] = field(default_factory=dict)
    log_path: Path | None = None
    start_timeout: float = DEFAULT_START_TIMEOUT
    call_timeout: float = DEFAULT_CALL_TIMEOUT


class JvmGateway:
    """One JVM process and the py4j gateway to it; see the module docstring."""

    def __init__(self, options: JvmOptions | None = None) -> None:
        self.options = options or JvmOptions()
        self._marker = uuid.uuid4().hex
        self._process: subprocess.Popen[bytes] | None = None
        self._gateway: JavaGateway | None = None
        self._closed = False
        self._lock = threading.Lock()
        self.log_path: Path | None = None

    # -- lifecycle --------------------------------------------------------------------------

    @property
    def pid(self) -> int | None:
        return None if self._process is None else self._process.pid

    def is_alive(self) -> bool:
        return self._process is not None and self._process.poll() is None

    @property
    def jvm(self) -> Any:
        """py4j's ``JVMView`` (``jvm.java.lang.System`` ...); use it inside :meth:`call`."""
        if self._gateway is None or self._closed:
            raise JvmGone("the JVM gateway is not running (start it, or it was closed)")
        return self._gateway.jvm

    @property
    def gateway(self) -> JavaGateway:
        if self._gateway is None or self._closed:
            raise JvmGone("the JVM gateway is not running (start it, or it was closed)")
        return self._gateway

    def __enter__(self) -> JvmGateway:
        if self._process is None:
            self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()

    def start(self) -> JvmGateway:
        """Launch the JVM and connect, within ``start_timeout``; JvmStartError otherwise."""
        if self._process is not None or self._closed:
            raise JvmStartError("a JvmGateway starts once; create a new one")
        opts = self.options
        java = opts.java or find_java()
        classpath = os.pathsep.join(str(Path(entry)) for entry in opts.classpath)
        properties = {**opts.system_properties, _MARKER_PROPERTY: self._marker}
        javaopts = [
            *opts.flags,
            *opts.extra_flags,
            *(f"-D{key}={value}" for key, value in properties.items()),
        ]
        if opts.log_path is None:
            handle, name = tempfile.mkstemp(prefix="bkconform-jvm-", suffix=".log")
            os.close(handle)
            self.log_path = Path(name)
        else:
            self.log_path = opts.log_path
            self.log_path.parent.mkdir(parents=True, exist_ok=True)
        jar = py4j_jar()
        _LIVE.add(self)
        stdout = self.log_path.open("a")
        stderr = self.log_path.open("a")
        launched: concurrent.futures.Future[tuple[int, subprocess.Popen[bytes]]]
        launched = concurrent.futures.Future()

        def launch() -> None:
            try:
                result = launch_gateway(
                    jarpath=str(jar), classpath=classpath, javaopts=javaopts,
                    java_path=java, die_on_exit=True, redirect_stdout=stdout,
                    redirect_stderr=stderr, create_new_process_group=True, return_proc=True,
                )  # fmt: skip
                launched.set_result(result)
            except BaseException as exc:
                launched.set_exception(exc)

        threading.Thread(target=launch, name="jvm-launch", daemon=True).start()
        try:
            done, _ = concurrent.futures.wait([launched], opts.start_timeout)
            if not done:
                self._kill_by_marker()
                stdout.close()
                raise JvmStartError(
                    f"the JVM printed no gateway port within {opts.start_timeout}s; "
                    f"log {self.log_path}:\n{self.log_tail()}"
                )
            try:
                port, process = launched.result()
            except (ValueError, OSError, Py4JError) as exc:
                self._kill_by_marker()
                stdout.close()
                raise JvmStartError(
                    f"the JVM did not start ({exc!r}); command: {java} ... py4j.GatewayServer; "
                    f"log {self.log_path}:\n{self.log_tail()}"
                ) from exc
        finally:
            stderr.close()  # the child has its own copy of the descriptor
        self._process = process
        try:
            self._gateway = JavaGateway(
                gateway_parameters=GatewayParameters(port=port, auto_convert=True)
            )
            self.call(
                lambda: self.jvm.java.lang.System.getProperty("java.version"),
                timeout=opts.start_timeout,
                what="gateway ping",
            )
        except BaseException:
            self.close()
            raise
        log.debug("JVM %d started with gateway port %d", process.pid, port)
        return self

    def close(self) -> None:
        """Close the gateway and SIGKILL the JVM (its whole process group); idempotent."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
        gateway, self._gateway = self._gateway, None
        if gateway is not None:
            with contextlib.suppress(Exception):
                gateway.close(keep_callback_server=False, close_callback_server_connections=True)
        process = self._process
        if process is not None:
            self._kill(process)
        _LIVE.discard(self)

    def _kill(self, process: subprocess.Popen[bytes]) -> None:
        if process.poll() is None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(process.pid, signal.SIGKILL)
            with contextlib.suppress(ProcessLookupError):
                process.kill()
        try:
            process.wait(_KILL_WAIT)
        except subprocess.TimeoutExpired:
            log.error("JVM %d survived SIGKILL for %ss", process.pid, _KILL_WAIT)
        for stream in (process.stdin, process.stdout, process.stderr):
            if stream is not None:
                with contextlib.suppress(OSError):
                    stream.close()

    def _kill_by_marker(self) -> None:
        """Kill a JVM whose launch never returned its handle (found by its -D marker)."""
        needle = f"-D{_MARKER_PROPERTY}={self._marker}".encode()
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit():
                continue
            try:
                cmdline = (entry / "cmdline").read_bytes()
            except OSError:
                continue
            if needle in cmdline.split(b"\0"):
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(int(entry.name), signal.SIGKILL)
                # Reap it if it is our child, so that no zombie is left behind.
                deadline = time.monotonic() + _KILL_WAIT
                while time.monotonic() < deadline:
                    try:
                        reaped, _ = os.waitpid(int(entry.name), os.WNOHANG)
                    except ChildProcessError:
                        break
                    if reaped:
                        break
                    time.sleep(0.02)

    def log_tail(self, lines: int = 30) -> str:
        if self.log_path is None or not self.log_path.exists():
            return "(no JVM log)"
        text = self.log_path.read_text(errors="replace").splitlines()
        return "\n".join(text[-lines:]) or "(JVM log is empty)"

    # -- calls ------------------------------------------------------------------------------

    def call(
        self, function: Callable[[], T], *, timeout: float | None = None, what: str = "JVM call"
    ) -> T:
        """Run ``function`` (which uses :attr:`jvm`) with a deadline; typed errors.

        :raises JavaCallTimeout: no result within ``timeout`` (default ``call_timeout``).
        :raises BKError: a BookKeeper exception (the subclass for its code).
        :raises JavaException: any other Java exception.
        :raises JvmGone: the JVM is closed or died.
        """
        if self._closed or self._process is None:
            raise JvmGone(f"{what}: the JVM gateway is closed")
        limit = self.options.call_timeout if timeout is None else timeout
        result: concurrent.futures.Future[T] = concurrent.futures.Future()

        def run() -> None:
            try:
                result.set_result(function())
            except Py4JJavaError as exc:
                try:
                    result.set_exception(self._translate(exc))
                except BaseException as translation_error:
                    result.set_exception(translation_error)
            except BaseException as exc:
                result.set_exception(exc)

        threading.Thread(target=run, name=f"jvm-call {what}", daemon=True).start()
        done, _ = concurrent.futures.wait([result], limit)
        if not done:
            raise JavaCallTimeout(f"{what} did not return within {limit}s (pid {self.pid})")
        try:
            return result.result()
        except (Py4JNetworkError, Py4JError) as exc:
            # A JVM that just died drops its connections a moment before it can be reaped;
            # py4j reports that as a plain Py4JError ("An error occurred while calling ...").
            if _may_be_death(exc) and self._process is not None:
                with contextlib.suppress(subprocess.TimeoutExpired):
                    self._process.wait(_EXIT_GRACE)
            if not self.is_alive():
                code = None if self._process is None else self._process.returncode
                raise JvmGone(f"{what}: the JVM exited (code {code}); log {self.log_path}") from exc
            raise JavaClientError(f"{what}: py4j error: {exc}") from exc

    def _translate(self, error: Py4JJavaError) -> JavaException:
        """A typed error for a Java exception: BKError by code, else JavaException.

        The exception and its causes are searched for a BKException (clients wrap them, e.g. in
        ExecutionException).
        """
        stack = str(error)
        throwable: Any = error.java_exception
        outermost: JavaException | None = None
        for _depth in range(8):
            if throwable is None:
                break
            java_class = str(throwable.getClass().getName())
            message = throwable.getMessage()
            message = "" if message is None else str(message)
            if self._is_bk_exception(throwable):
                return bk_error_for(int(throwable.getCode()), java_class, message, stack=stack)
            if outermost is None:
                outermost = JavaException(java_class, message, stack=stack)
            throwable = throwable.getCause()
        assert outermost is not None
        return outermost

    @staticmethod
    def _is_bk_exception(throwable: Any) -> bool:
        cls = throwable.getClass()
        while cls is not None:
            if str(cls.getName()) in _BK_EXCEPTION_CLASSES:
                return True
            cls = cls.getSuperclass()
        return False


def _may_be_death(error: BaseException) -> bool:
    """False for py4j errors that certainly come from a live JVM (an unknown member)."""
    return "does not exist in the JVM" not in str(error)


@atexit.register
def _kill_leftovers() -> None:
    for gateway in list(_LIVE):
        with contextlib.suppress(Exception):
            gateway.close()


__all__ = [
    "DEFAULT_CALL_TIMEOUT",
    "DEFAULT_JVM_FLAGS",
    "DEFAULT_START_TIMEOUT",
    "JvmGateway",
    "JvmOptions",
    "py4j_jar",
]
