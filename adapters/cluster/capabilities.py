"""What the suite needs from the machine, checked one capability at a time.

Each check answers whether a capability works *here* (not merely whether a command is on
``PATH``), how long it took, and, when it does not work, the exact command that fixes it and
the Debian packages that provide it. Checks never install or change anything (creating and
removing a probe network namespace or probe containers aside), and each is bounded by a
timeout. ``bkconform doctor`` prints them; the tests call the same checks before they use a
capability (and, as root, install the packages a failed check names).
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import re
import shutil
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from adapters.cluster.container_engine import (
    ContainerEngine,
    ContainerEngineError,
    EnginePaths,
    engine_packages,
    find_engine,
    missing_debian_packages,
    start_service,
    stop_service,
)

DEFAULT_TIMEOUT = 30.0
SETUP_FIX = "bkconform docker setup   (as root: installs the packages, starts the API service)"
MINIMUM_JAVA = 17
#: How long past its own timeout a check may take (its cleanup) before it is abandoned.
CHECK_GRACE = 10.0
_ANSI_ESCAPE = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")


@dataclass(frozen=True)
class CheckResult:
    """The answer of one capability check."""

    name: str
    ok: bool
    detail: str
    #: The exact command that makes the capability work (empty when it works).
    fix: str = ""
    #: Debian packages that provide the capability (what the tests install, as root).
    packages: tuple[str, ...] = ()
    required: bool = True
    seconds: float = 0.0

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["packages"] = list(self.packages)
        return data


CheckFunction = Callable[[float], CheckResult]


@dataclass(frozen=True)
class Capability:
    """A capability the suite uses, and how to check it."""

    name: str
    description: str
    check: CheckFunction
    required: bool = True
    #: The check asks a container engine (so :func:`run_checks` provides one).
    needs_engine: bool = False


def run_command(argv: Sequence[str], timeout: float) -> tuple[int, str]:
    """Run ``argv``; (exit code, stdout+stderr). 127 when not found, 124 on timeout."""
    try:
        completed = subprocess.run(
            list(argv),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            timeout=timeout,
            check=False,
        )
    except FileNotFoundError:
        return 127, f"{argv[0]}: command not found"
    except subprocess.TimeoutExpired:
        return 124, f"{' '.join(argv)} did not finish within {timeout:.0f} s"
    except OSError as exc:
        return 126, f"{argv[0]}: {exc}"
    output = completed.stdout.decode("utf-8", errors="replace")
    # Maven colours its banner even when it writes to a pipe.
    return completed.returncode, _ANSI_ESCAPE.sub("", output).strip()


def _first_line(text: str) -> str:
    return text.splitlines()[0].strip() if text.strip() else ""


def _result(name: str, ok: bool, detail: str, fix: str = "", **extra: Any) -> CheckResult:
    return CheckResult(name, ok, detail, "" if ok else fix, **extra)


def _tool_check(
    name: str,
    package: str,
    probe: Sequence[str],
    what: str,
    timeout: float,
    version: Sequence[str] | None = None,
) -> CheckResult:
    """A capability that is a command from one Debian package: ``probe`` must succeed (the
    tool works, not merely exists); the detail is the first line of ``version``'s output, or
    of the probe's when ``version`` is None."""
    code, output = run_command(probe, timeout)
    if code != 0:
        return _result(
            name,
            False,
            f"{what} failed ({code}): {_first_line(output)}",
            f"apt-get install {package}",
            packages=(package,),
        )
    if version is not None:
        _, output = run_command(version, timeout)
    return _result(name, True, _first_line(output), packages=(package,))


# Java, Maven, ZooKeeper, Spark ----------------------------------------------------------


def java_version(output: str) -> int | None:
    """The major version in ``java -version`` output (``1.8`` is 8)."""
    match = re.search(r'version "(\d+)(?:\.(\d+))?', output)
    if match is None:
        return None
    major = int(match.group(1))
    if major == 1 and match.group(2) is not None:
        return int(match.group(2))
    return major


JAVA_FIX = "apt-get install openjdk-17-jre-headless   (or set JAVA_HOME to a JDK 17+)"


def check_java(timeout: float) -> CheckResult:
    from adapters.installations.errors import JavaNotFound
    from adapters.installations.java import find_java

    packages = ("openjdk-17-jre-headless",)
    try:
        java = find_java()
    except JavaNotFound as exc:
        return _result("java", False, str(exc), JAVA_FIX, packages=packages)
    code, output = run_command([java, "-version"], timeout)
    major = java_version(output)
    if code != 0 or major is None:
        return _result(
            "java", False, f"{java} -version failed ({code}): {output}", JAVA_FIX, packages=packages
        )
    detail = f"{_first_line(output)} ({java})"
    if major < MINIMUM_JAVA:
        return _result(
            "java", False, f"Java {major} < {MINIMUM_JAVA}: {detail}", JAVA_FIX, packages=packages
        )
    return _result("java", True, detail, packages=packages)


def check_maven(timeout: float) -> CheckResult:
    return _tool_check("maven", "maven", ["mvn", "-v"], "mvn -v", timeout)


def check_zookeeper(timeout: float) -> CheckResult:
    from adapters.installations.errors import ZooKeeperNotFound
    from adapters.installations.zookeeper import locate_zookeeper

    try:
        install = locate_zookeeper()
    except ZooKeeperNotFound as exc:
        return _result(
            "zookeeper",
            False,
            str(exc),
            "bkconform zookeeper install   (Maven Central)   or   ZOOKEEPER_HOME=<unpacked "
            "apache-zookeeper-X.Y.Z-bin>",
        )
    return _result("zookeeper", True, install.describe())


def check_spark(timeout: float) -> CheckResult:
    spec = importlib.util.find_spec("pyspark")
    if spec is None:
        return _result(
            "spark", False, "pyspark is not importable", "pip install -e .   (pyspark>=3.5)"
        )
    java = check_java(timeout)
    if not java.ok:
        return _result("spark", False, f"pyspark found but no usable JVM: {java.detail}", java.fix)
    try:
        from importlib.metadata import version

        pyspark = version("pyspark")
    except Exception:
        pyspark = "?"
    return _result("spark", True, f"pyspark {pyspark}, {java.detail}")


def check_openssl(timeout: float) -> CheckResult:
    return _tool_check("openssl", "openssl", ["openssl", "version"], "openssl version", timeout)


# Network namespaces and packet filters ---------------------------------------------------


def check_network_namespaces(timeout: float) -> CheckResult:
    name = "network-namespaces"
    packages = ("iproute2",)
    if os.geteuid() != 0:
        return _result(
            name, False, "not root: creating a network namespace needs CAP_NET_ADMIN", "run as root"
        )
    if shutil.which("ip") is None:
        return _result(name, False, "no ip command", "apt-get install iproute2", packages=packages)
    probe = f"bkcdoctor{os.getpid()}"
    code, output = run_command(["ip", "netns", "add", probe], timeout)
    if code != 0:
        return _result(
            name,
            False,
            f"ip netns add failed ({code}): {output}",
            "run as root on a host (or a container with CAP_SYS_ADMIN and CAP_NET_ADMIN)",
            packages=packages,
        )
    code, output = run_command(["ip", "netns", "del", probe], timeout)
    if code != 0:
        return _result(
            name, False, f"ip netns del {probe} failed: {output}", f"ip netns del {probe}"
        )
    return _result(name, True, "ip netns add/del works (root)", packages=packages)


def check_nftables(timeout: float) -> CheckResult:
    return _tool_check(
        "nftables",
        "nftables",
        ["nft", "list", "tables"],
        "nft list tables",
        timeout,
        version=["nft", "--version"],
    )


def check_iptables(timeout: float) -> CheckResult:
    return _tool_check(
        "iptables",
        "iptables",
        ["iptables", "-w", "5", "-S", "INPUT"],
        "iptables -S",
        timeout,
        version=["iptables", "--version"],
    )


# Containers ------------------------------------------------------------------------------


def check_container_packages(timeout: float) -> CheckResult:
    wanted = engine_packages()
    missing = missing_debian_packages(wanted)
    if missing:
        return _result(
            "container-packages",
            False,
            f"not installed: {', '.join(missing)}",
            f"{SETUP_FIX}   or   apt-get install --no-install-recommends {' '.join(missing)}",
            packages=tuple(missing),
        )
    return _result("container-packages", True, f"installed: {', '.join(wanted)}")


#: An engine started only for the checks (:func:`transient_engine`), or None.
_transient: ContainerEngine | None = None


def _engine() -> ContainerEngine | None:
    return find_engine(EnginePaths.default()) or _transient


@contextlib.contextmanager
def transient_engine(log: Callable[[str], None] = lambda _line: None) -> Iterator[None]:
    """Let the engine checks run when podman is installed but its API service is not running.

    That is the normal state between runs: the test session and ``bkconform docker setup``
    start the service on demand, and the tests stop what they started. So ``doctor`` starts a
    service of its own on a private socket for the duration of the checks (the images live
    in podman's storage, not in the service) and stops it on every exit path; it installs
    nothing. Where an engine already answers, or podman is absent, nothing is started.
    """
    global _transient
    if find_engine(EnginePaths.default()) is not None or shutil.which("podman") is None:
        yield
        return
    with tempfile.TemporaryDirectory(prefix="bkconform-doctor-") as directory:
        paths = EnginePaths(Path(directory))
        try:
            engine, pid = start_service(paths)
        except ContainerEngineError as exc:
            log(f"podman is installed but its API service did not start: {exc}")
            yield
            return
        log(f"started a podman API service for the checks (pid {pid}); stopped after them")
        _transient = engine
        try:
            yield
        finally:
            _transient = None
            stop_service(paths)


def check_podman_api(timeout: float) -> CheckResult:
    engine = _engine()
    if engine is None:
        return _result(
            "podman-api",
            False,
            "no container engine answers (DOCKER_HOST, /var/run/docker.sock, or the podman "
            f"service at {EnginePaths.default().socket})",
            SETUP_FIX,
        )
    how = " (a service started for these checks)" if engine is _transient else ""
    return _result("podman-api", True, f"{engine.docker_host} answers ({engine.cli}){how}")


def check_local_images(timeout: float) -> CheckResult:
    from adapters.cluster.container_images import image_exists, local_image_tags

    engine = _engine()
    if engine is None:
        return _result("local-images", False, "no engine answers (see podman-api)", SETUP_FIX)
    try:
        tags = local_image_tags()
        missing = [
            tag
            for tag in (tags.base, tags.zookeeper, tags.refbookie)
            if not image_exists(engine, tag)
        ]
    except (ContainerEngineError, OSError) as exc:
        return _result("local-images", False, str(exc), SETUP_FIX)
    if tags.refbookie in missing and len(missing) == 1:
        # Its tag digests the project's Python sources, so any edit makes it stale; the
        # container provider rebuilds it on first use from the cached layers (seconds).
        return _result(
            "local-images",
            True,
            f"{tags.zookeeper}; the reference-bookie image is rebuilt for the current sources "
            "on first use",
        )
    if missing:
        return _result(
            "local-images",
            False,
            f"not built for the current sources: {', '.join(missing)}",
            SETUP_FIX,
        )
    return _result("local-images", True, f"{tags.zookeeper}, {tags.refbookie}")


def probe_image(engine: ContainerEngine) -> str | None:
    """An image present in the engine to run the DNS check with (the local ones first)."""
    from adapters.cluster.container_images import ROOTFS_IMAGE, image_exists, local_image_tags

    candidates = [ROOTFS_IMAGE]
    try:
        tags = local_image_tags()
        candidates = [tags.base, tags.zookeeper, ROOTFS_IMAGE]
    except ContainerEngineError:
        pass
    for image in candidates:
        try:
            if image_exists(engine, image):
                return image
        except Exception:
            return None
    return None


def check_container_dns(timeout: float) -> CheckResult:
    from adapters.cluster.container_dns import check_container_dns as probe
    from adapters.cluster.container_dns import dns_fix

    engine = _engine()
    if engine is None:
        return _result("container-dns", False, "no engine answers (see podman-api)", SETUP_FIX)
    image = probe_image(engine)
    if image is None:
        return _result(
            "container-dns",
            False,
            "no local image to run the check with (see local-images)",
            SETUP_FIX,
        )
    try:
        address = probe(engine, image, timeout=timeout)
    except ContainerEngineError as exc:
        package, _ = dns_fix(engine)
        return _result(
            "container-dns",
            False,
            str(exc),
            f"apt-get install {package}   (or {SETUP_FIX})" if package else SETUP_FIX,
            packages=(package,) if package else (),
        )
    return _result(
        "container-dns", True, f"a container resolves another by name ({address}) on {image}"
    )


def check_debootstrap_cache(timeout: float) -> CheckResult:
    from adapters.cluster.container_images import DEBIAN_SUITE, cache_dir

    tarball = cache_dir() / f"debian-{DEBIAN_SUITE}-minbase.tar"
    if tarball.exists():
        return _result("debootstrap-cache", True, f"{tarball} ({tarball.stat().st_size >> 20} MiB)")
    return _result(
        "debootstrap-cache",
        False,
        f"{tarball} absent: the next base-image build runs debootstrap (needs deb.debian.org)",
        SETUP_FIX,
    )


def _installed_bookkeepers() -> list[str]:
    """Versions installed by ``bkconform bookkeeper install`` (none if it cannot be asked)."""
    try:
        from adapters.installations import bookkeeper as installations

        return [str(item.version) for item in installations.installed()]
    except Exception:
        return []


def check_bookkeeper_home(timeout: float) -> CheckResult:
    fix = (
        "bkconform bookkeeper install   (needs Maven and Maven Central; the tests that need "
        "BookKeeper run it themselves)   or   export BOOKKEEPER_HOME=<a binary distribution>"
    )
    home = os.environ.get("BOOKKEEPER_HOME")
    if home:
        launcher = Path(home) / "bin" / "bookkeeper"
        if not os.access(launcher, os.X_OK):
            return _result("bookkeeper", False, f"BOOKKEEPER_HOME: {launcher} is missing", fix)
        return _result("bookkeeper", True, f"BOOKKEEPER_HOME={home}")
    versions = _installed_bookkeepers()
    if versions:
        return _result("bookkeeper", True, f"installed: {', '.join(versions)}")
    return _result(
        "bookkeeper",
        False,
        "BOOKKEEPER_HOME unset and no version installed: the first test that needs one "
        "installs it from Maven Central",
        fix,
    )


CAPABILITIES: tuple[Capability, ...] = (
    Capability("java", "Java 17+ (ZooKeeper, Spark, the Java client)", check_java),
    Capability("maven", "Maven (mvn -v): BookKeeper from Maven Central", check_maven),
    Capability("zookeeper", "a runnable ZooKeeper for local clusters", check_zookeeper),
    Capability("spark", "pyspark importable and a JVM (qualification)", check_spark),
    Capability("openssl", "openssl command (the agent's TLS tests)", check_openssl),
    Capability(
        "network-namespaces", "ip netns add works (partition tests; root)", check_network_namespaces
    ),
    Capability("nftables", "nft works (agent partitions, nft backend)", check_nftables),
    Capability("iptables", "iptables works (agent and container partitions)", check_iptables),
    Capability(
        "container-packages",
        "podman, runc, CNI plugins + dnsname, iptables, debootstrap (dpkg)",
        check_container_packages,
    ),
    Capability(
        "podman-api", "a container engine's Docker API answers", check_podman_api, needs_engine=True
    ),
    Capability("local-images", "the local images are built", check_local_images, needs_engine=True),
    Capability(
        "container-dns",
        "containers resolve each other by name on a network",
        check_container_dns,
        needs_engine=True,
    ),
    Capability(
        "bookkeeper",
        "a real BookKeeper (BOOKKEEPER_HOME or `bkconform bookkeeper install`)",
        check_bookkeeper_home,
        False,
    ),
    Capability(
        "debootstrap-cache",
        "the cached debootstrap tree (speeds up image rebuilds)",
        check_debootstrap_cache,
        False,
    ),
)
BY_NAME = {capability.name: capability for capability in CAPABILITIES}


def run_check(capability: Capability | str, timeout: float = DEFAULT_TIMEOUT) -> CheckResult:
    """Run one check, bounded by ``timeout`` (plus a grace for its own cleanup)."""
    cap = BY_NAME[capability] if isinstance(capability, str) else capability
    outcome: list[CheckResult] = []
    errors: list[BaseException] = []

    def target() -> None:
        try:
            outcome.append(cap.check(timeout))
        except Exception as exc:
            errors.append(exc)

    started = time.monotonic()
    # A daemon thread: a check that hangs past its own timeouts cannot hold the process.
    worker = threading.Thread(target=target, name=f"check-{cap.name}", daemon=True)
    worker.start()
    worker.join(timeout + CHECK_GRACE)
    seconds = round(time.monotonic() - started, 2)
    if outcome:
        result = outcome[0]
    elif errors:
        result = CheckResult(cap.name, False, f"the check failed: {errors[0]!r}")
    else:
        result = CheckResult(cap.name, False, f"the check did not finish within {timeout:.0f} s")
    return CheckResult(
        name=cap.name,
        ok=result.ok,
        detail=result.detail,
        fix=result.fix,
        packages=result.packages,
        required=cap.required,
        seconds=seconds,
    )


def run_checks(
    names: Sequence[str] | None = None,
    timeout: float = DEFAULT_TIMEOUT,
    *,
    on_result: Callable[[CheckResult], None] = lambda _result: None,
    log: Callable[[str], None] = lambda _line: None,
) -> list[CheckResult]:
    """Every capability's check (or the named ones), in order; ``on_result`` sees each as it
    completes. An engine is provided (:func:`transient_engine`) only if a check needs one."""
    chosen = [BY_NAME[name] for name in names] if names else list(CAPABILITIES)
    engine = (
        transient_engine(log)
        if any(capability.needs_engine for capability in chosen)
        else contextlib.nullcontext()
    )
    results = []
    with engine:
        for capability in chosen:
            results.append(run_check(capability, timeout))
            on_result(results[-1])
    return results


def all_required_ok(results: Sequence[CheckResult]) -> bool:
    return all(result.ok for result in results if result.required)
