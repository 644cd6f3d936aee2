"""Command-line options shared by the commands: the model's constants and switches, and the
choice of target."""

from __future__ import annotations

import argparse
import dataclasses
from pathlib import Path
from typing import Any

from adapters.cluster.bookie_profiles import (
    DEFAULT_PROFILE,
    PROFILES,
    STORAGE_CHOICES,
    profile_named,
    storage_named,
)
from adapters.cluster.bookies import BookieSettings
from adapters.errors import ClusterError
from adapters.installations.bookkeeper import DEFAULT_VERSION
from adapters.installations.system import BOOKIE_KINDS, BOOKKEEPER, BookieChoice
from adapters.installations.zookeeper import DEFAULT_VERSION as ZOOKEEPER_DEFAULT
from adapters.installations.zookeeper import ZooKeeperInstall, locate_zookeeper
from adapters.refbookie.config import FAULTY_MODES
from conformance.search.runner import SearchSettings
from conformance.target_kinds import TARGET_KINDS
from conformance.targets.base import Target
from conformance.targets.spec import AgentAddress, TargetSpec
from model.bookkeeper.config import ConfigError, ModelConfig
from model.bookkeeper.readings import bookie_reading

CRASH_PHASES = ("open", "recovery", "closed")
TARGETS = TARGET_KINDS


def add_model_options(
    parser: argparse.ArgumentParser, *, bookies: int, clients: int, wq: int, aq: int
) -> None:
    """The spec's CONSTANTS and the switches, with the command's own defaults."""
    spec = parser.add_argument_group("constants (the spec's CONSTANTS)")
    spec.add_argument("--bookies", type=int, default=bookies, help=f"bookies (default {bookies})")
    spec.add_argument("--clients", type=int, default=clients, help=f"clients (default {clients})")
    spec.add_argument("--wq", type=int, default=wq, help=f"write quorum (default {wq})")
    spec.add_argument("--aq", type=int, default=aq, help=f"ack quorum (default {aq})")
    spec.add_argument(
        "--ensemble-size",
        "--ensemble",
        dest="ensemble_size",
        type=int,
        default=None,
        help="E >= WQ, striping (default: WQ)",
    )
    spec.add_argument("--send-limit", type=int, default=1, help="entries written (default 1)")
    spec.add_argument(
        "--inflight-limit", type=int, default=1, help="unacknowledged adds (default 1)"
    )
    switches = parser.add_argument_group("switches (known defects and extensions)")
    switches.add_argument(
        "--spec-bookie-lac",
        action="store_true",
        help="a bookie's LAC is the last add's, as the spec has it, not its highest entry's, as "
        "a real bookie answers a fence read (docs/model.md, lac_of_highest_entry)",
    )
    switches.add_argument(
        "--no-recovery-read-fence",
        action="store_true",
        help="recovery reads do not fence: BookKeeper < 4.14.0, Defect 1",
    )
    switches.add_argument(
        "--no-recovery-fragment-fix",
        action="store_true",
        help="recovery starts at entry 1, not at its fragment: Defect 2",
    )
    switches.add_argument(
        "--crash",
        default="",
        metavar="PHASES",
        help="let a bookie crash and lose its data while the ledger is in these states: "
        "comma-separated from open,recovery,closed",
    )
    switches.add_argument(
        "--max-crashes", type=int, default=1, help="crash budget with --crash (default 1)"
    )
    switches.add_argument(
        "--no-limbo",
        action="store_true",
        help="with --crash: a restarted bookie does not put open ledgers in limbo",
    )
    switches.add_argument(
        "--no-fence-on-unclean-shutdown",
        action="store_true",
        help="with --crash: a restarted bookie does not fence open ledgers",
    )


def config_from_args(args: argparse.Namespace) -> ModelConfig:
    """The configuration the options name (ConfigError when they contradict each other)."""
    phases = {p.strip() for p in args.crash.split(",") if p.strip()}
    unknown = phases - set(CRASH_PHASES)
    if unknown:
        raise ConfigError(
            f"--crash takes phases from {','.join(CRASH_PHASES)}; "
            f"unknown: {','.join(sorted(unknown))}"
        )
    reading = bookie_reading(spec_bookie_lac=getattr(args, "spec_bookie_lac", False))
    return reading.apply(
        ModelConfig(
            bookies=args.bookies,
            clients=args.clients,
            write_quorum=args.wq,
            ack_quorum=args.aq,
            ensemble_size=args.ensemble_size,
            send_limit=args.send_limit,
            inflight_limit=args.inflight_limit,
            recovery_reads_fence=not args.no_recovery_read_fence,
            recovery_starts_at_fragment=not args.no_recovery_fragment_fix,
            max_crashes=args.max_crashes if phases else 0,
            crash_when_open="open" in phases,
            crash_in_recovery="recovery" in phases,
            crash_when_closed="closed" in phases,
            limbo_on_unclean_shutdown=bool(phases) and not args.no_limbo,
            fence_on_unclean_shutdown=bool(phases) and not args.no_fence_on_unclean_shutdown,
        )
    )


def search_overrides(base: SearchSettings, args: argparse.Namespace) -> SearchSettings:
    """``base`` with what ``--max-examples``, ``--steps``, ``--seconds``, ``--no-explore``,
    ``--races``, ``--gates``, ``--no-shrink``, ``--explorer-workers`` and ``--explorer-steps``
    change (ValueError for ``--gates`` without ``--races``)."""
    changes: dict[str, Any] = {}
    for option, name in (
        ("max_examples", "max_examples"),
        ("steps", "max_steps"),
        ("seconds", "time_budget"),
    ):
        value = getattr(args, option)
        if value is not None:
            changes[name] = value
    if args.no_explore:
        changes["explore"] = False
    if getattr(args, "races", False):
        changes["races"] = True
    if getattr(args, "gates", False):
        if not getattr(args, "races", False):
            raise ValueError("--gates holds a bookie's threads in races: it needs --races")
        changes["gates"] = True
    if getattr(args, "no_shrink", False):
        changes["shrink"] = False
    if getattr(args, "explorer_workers", None) is not None:
        changes["explorer_workers"] = args.explorer_workers
    if getattr(args, "explorer_steps", None) is not None:
        changes["explorer_steps"] = args.explorer_steps
    return dataclasses.replace(base, **changes)


def add_bookie_options(group: Any) -> None:
    """``--bookie-kind``, ``--bookkeeper VERSION|DIR`` and ``--bookkeeper-home DIR``: the
    bookies of a local or containerized cluster (:func:`bookie_choice_from_args`)."""
    group.add_argument(
        "--bookie-kind",
        choices=BOOKIE_KINDS,
        default=BOOKKEEPER,
        help="bookies of --target local and docker: bookkeeper (real BookKeeper, the default) "
        "or reference (the project's test double, not BookKeeper)",
    )
    group.add_argument(
        "--bookkeeper",
        default=None,
        metavar="VERSION|DIR",
        help=f"real BookKeeper for --target local and docker: a version (default "
        f"{DEFAULT_VERSION}, installed from Maven Central on first use, `bkconform bookkeeper "
        "install`) or a BOOKKEEPER_HOME directory; with --official-images, the "
        "apache/bookkeeper tag",
    )
    group.add_argument(
        "--bookkeeper-home",
        type=Path,
        default=None,
        help="real BookKeeper for --target local and docker: a distribution directory "
        "(default: BOOKKEEPER_HOME, else --bookkeeper's default)",
    )
    group.add_argument(
        "--reference-faulty-mode",
        choices=FAULTY_MODES,
        default="none",
        help="--target local --bookie-kind reference: a deliberately wrong behaviour of the "
        "test double, to prove that a search sees it (racy-fence-add: fence and add not "
        "atomic, for --races)",
    )


def add_client_release_option(group: Any) -> None:
    """``--client-bookkeeper VERSION|DIR[,...]``: the Java client's own release, apart from
    the bookies' (``--client java`` runs, the Java-client scenarios; ``qualify --client java``
    takes a list: a row per bookies' release and client release)."""
    group.add_argument(
        "--client-bookkeeper",
        default=None,
        metavar="VERSION|DIR",
        help="with --client java and the *-java-client scenarios: the real Java client's "
        "release (installed from Maven Central on first use) or distribution directory, apart "
        "from the bookies' (default: the bookies' release); qualify --client java takes a "
        "comma-separated list (rows: bookies' release x client release)",
    )


def add_zookeeper_option(group: Any) -> None:
    """``--zookeeper VERSION|DIR``: the ZooKeeper a local cluster runs
    (:func:`zookeeper_from_args`)."""
    group.add_argument(
        "--zookeeper",
        default=None,
        metavar="VERSION|DIR",
        help=f"the ZooKeeper of a local cluster (or of --target docker's containers, in an image "
        "built from it): a release (installed from Maven Central on "
        "first use, `bkconform zookeeper install`) or a directory (an unpacked binary "
        f"distribution, or an install); default ZOOKEEPER_HOME, else {ZOOKEEPER_DEFAULT}, "
        f"the release BookKeeper {DEFAULT_VERSION} depends on",
    )


def zookeeper_from_args(args: argparse.Namespace) -> ZooKeeperInstall:
    """The ZooKeeper ``--zookeeper`` names, else ZOOKEEPER_HOME's, else the default release
    (installed on first use). ValueError when it cannot be had."""
    try:
        return locate_zookeeper(getattr(args, "zookeeper", None), progress=True)
    except ClusterError as exc:
        raise ValueError(str(exc)) from exc


def add_restart_option(group: Any) -> None:
    """``--process-restarts``: crashes of real local bookies as process restarts."""
    group.add_argument(
        "--process-restarts",
        action="store_true",
        help="--target local with real bookies: a crash kills the bookie's JVM and starts a new "
        "one (about 1 s) instead of restarting the bookie inside its JVM (about 0.3 s, the "
        "default; docs/adapters/cluster.md says what differs); with --client java, where a "
        "crash always kills the JVM: no standby JVM booted ahead for a bookie's next restart "
        "(about 0.5 s, the default)",
    )


def add_bookie_settings_options(group: Any, *, storage_list: bool = False) -> None:
    """``--ledger-storage`` and ``--settings-profile``: the bookies' settings of a cluster the
    suite starts (:func:`target_spec_from_args`; docs/bookie-settings.md). ``storage_list``:
    the command takes a comma-separated list (``qualify``: a shard per storage)."""
    limbo = (
        "; a comma-separated list plans the shards once per storage (sorted,db: one report "
        "with a column per storage), a configuration with limbo on db only"
        if storage_list
        else "; limbo with --ledger-storage sorted is refused"
    )
    group.add_argument(
        "--ledger-storage",
        default=None,
        metavar="sorted,db" if storage_list else "|".join(STORAGE_CHOICES),
        help="the real bookies' ledgerStorageClass (--target local or docker): sorted "
        "(SortedLedgerStorage, BookKeeper's default) or db (DbLedgerStorage, Pulsar's); default: "
        "the settings profile's, and DbLedgerStorage for a configuration with limbo (data "
        "integrity checking needs it)" + limbo,
    )
    group.add_argument(
        "--settings-profile",
        choices=tuple(PROFILES),
        default=DEFAULT_PROFILE,
        help="the real bookies' settings the protocol depends on (journal grouping and "
        "syncing, flush interval, ZooKeeper session, request threads), named after who runs "
        "them: suite (the suite's test settings, the default), bookkeeper (BookKeeper "
        "4.18.0's own defaults), pulsar (Pulsar's conf/bookkeeper.conf; runs DbLedgerStorage); "
        "docs/bookie-settings.md lists each value and its source",
    )


def storages_from_text(text: str | None) -> tuple[str, ...]:
    """``sorted,db`` -> ("sorted", "db"); ValueError for an unknown or repeated one."""
    names = tuple(part.strip() for part in (text or "").split(",") if part.strip())
    unknown = [name for name in names if name not in STORAGE_CHOICES]
    if unknown:
        raise ValueError(
            f"--ledger-storage {text}: {', '.join(unknown)} is no storage; "
            f"one of {', '.join(STORAGE_CHOICES)}"
        )
    if len(set(names)) != len(names):
        raise ValueError(f"--ledger-storage {text} names a storage twice")
    return names


def bookie_settings_from_args(args: argparse.Namespace) -> BookieSettings:
    """The bookies' settings of a cluster the Java-client runs start (no limbo there):
    ``--ledger-storage`` (one; None: the profile's) and ``--settings-profile``; the bookies
    hosted with a standby JVM for their restarts unless ``--process-restarts``
    (:meth:`BookieSettings.with_standby_restarts`). ValueError for a list or an unknown name."""
    storages = storages_from_text(getattr(args, "ledger_storage", None))
    if len(storages) > 1:
        raise ValueError(
            f"--ledger-storage {args.ledger_storage}: one storage per run (a list is "
            "`bkconform qualify`'s)"
        )
    profile = profile_named(getattr(args, "settings_profile", None) or DEFAULT_PROFILE)
    storage = storage_named(storages[0]) if storages else profile.ledger_storage
    settings = BookieSettings(ledger_storage=storage, profile=profile)
    if getattr(args, "process_restarts", False):
        return settings
    return settings.with_standby_restarts()


def add_target_options(
    parser: argparse.ArgumentParser, *, default: str = "model", storage_list: bool = False
) -> None:
    group = parser.add_argument_group("target")
    group.add_argument(
        "--target",
        choices=TARGETS,
        default=default,
        help="model: in process (fast); local: real ZooKeeper + real BookKeeper bookies "
        "started here (the default version, installed from Maven Central on first use; see "
        "--bookkeeper, --bookie-kind); docker: the same bookies and ZooKeeper in containers "
        "(images built here on first use, or --official-images); external: a running "
        f"cluster at --zk (default {default})",
    )
    add_bookie_options(group)
    add_client_release_option(group)
    add_zookeeper_option(group)
    add_restart_option(group)
    add_bookie_settings_options(group, storage_list=storage_list)
    group.add_argument(
        "--official-images",
        action="store_true",
        help="--target docker with apache/bookkeeper and zookeeper from a registry",
    )
    group.add_argument(
        "--zk", default=None, metavar="HOST:PORT[,...]", help="ZooKeeper of --target external"
    )
    group.add_argument(
        "--ledgers-root", default="/ledgers", help="ledgers root of --target external"
    )
    group.add_argument(
        "--allow-remote",
        action="store_true",
        help="let --target external reach ZooKeeper on other machines (it writes ledgers)",
    )
    agents = parser.add_argument_group("fault agents (--target external with crashes)")
    agents.add_argument(
        "--agent",
        action="append",
        default=[],
        metavar="BOOKIE_ID=HOST:PORT",
        help="the fault agent next to a bookie (its id as registered in ZooKeeper); repeat",
    )
    agents.add_argument("--agent-token-file", type=Path, help="the agents' shared token")
    agents.add_argument("--agent-ca", type=Path, help="CA of the agents' TLS certificates")
    agents.add_argument("--agent-cert", type=Path, help="our client certificate (mutual TLS)")
    agents.add_argument("--agent-key", type=Path, help="our client key (mutual TLS)")
    agents.add_argument(
        "--i-understand-this-destroys-data",
        dest="destroy_data",
        action="store_true",
        help="allow crash faults on --target external: they wipe bookies' data",
    )


def target_spec_from_args(args: argparse.Namespace) -> TargetSpec:
    """The target the options describe (ValueError for options that do not fit together).
    Commands without some of the target options get the spec's defaults for them."""

    def given(option: str, default: Any = None) -> Any:
        return getattr(args, option, default)

    home = given("bookkeeper_home")
    storages = storages_from_text(given("ledger_storage"))
    if len(storages) > 1:
        raise ValueError(
            f"--ledger-storage {given('ledger_storage')}: one storage per run (a list is "
            "`bkconform qualify`'s: a shard per storage)"
        )
    return TargetSpec(
        kind=given("target", "model"),
        bookie_kind=given("bookie_kind", BOOKKEEPER),
        bookkeeper=given("bookkeeper"),
        bookkeeper_home=str(home) if home is not None else None,
        in_jvm_restarts=not given("process_restarts", False),
        official_images=given("official_images", False),
        zookeeper=given("zk"),
        zookeeper_release=given("zookeeper"),
        ledgers_root=given("ledgers_root", "/ledgers"),
        allow_remote=given("allow_remote", False),
        agents=tuple(AgentAddress.parse(item) for item in given("agent", None) or ()),
        agent_token_file=_path(given("agent_token_file")),
        agent_ca=_path(given("agent_ca")),
        agent_cert=_path(given("agent_cert")),
        agent_key=_path(given("agent_key")),
        destroy_data=given("destroy_data", False),
        keep_ledgers=given("keep_ledgers", False),
        reference_faulty_mode=given("reference_faulty_mode", "none"),
        ledger_storage=storages[0] if storages else None,
        settings_profile=given("settings_profile", DEFAULT_PROFILE),
        gates=given("gates", False),
    )


def _path(value: Path | str | None) -> str | None:
    return None if value is None else str(value)


def bookie_choice_from_args(args: argparse.Namespace) -> BookieChoice:
    """The bookies ``--bookie-kind``, ``--bookkeeper`` and ``--bookkeeper-home`` name (the
    default: real BookKeeper, ``BOOKKEEPER_HOME`` or the default version, installed on first
    use). ValueError for options that contradict each other, a version that cannot be
    installed, or a directory that is no distribution."""
    # The bookies of a cluster started here (``cluster up``, the Java client's scenarios):
    # read as a local target's, which may also name a ZooKeeper release (``--zookeeper``).
    # Their storage and settings profile are no part of the choice (a list of storages is
    # qualify's; the Java-client runs read them with bookie_settings_from_args).
    local = argparse.Namespace(
        **{
            **vars(args),
            "target": "local",
            "official_images": False,
            "ledger_storage": None,
            "settings_profile": DEFAULT_PROFILE,
        }
    )
    return target_spec_from_args(local).bookie_choice()


def add_keep_ledgers_option(group: Any) -> None:
    """``--keep-ledgers``: the external target leaves the ledgers it created
    (:func:`target_from_args`)."""
    group.add_argument(
        "--keep-ledgers",
        action="store_true",
        help="--target external: leave every ledger the run created on the cluster (by default "
        "they are deleted when the run ends, but a finding's, and the console and the run "
        "directory name those kept; `bkconform cluster clean --include-kept` deletes them)",
    )


def settings_record_from_args(args: argparse.Namespace, cfg: ModelConfig) -> dict[str, str]:
    """What a run's ``results.json`` ``target`` records of its bookies' settings (ledger
    storage, settings profile; ``{}`` where the suite does not configure the bookies).
    ValueError as :meth:`TargetSpec.settings_record`."""
    if getattr(args, "target", "model") not in ("local", "docker"):
        return {}
    return target_spec_from_args(args).settings_record(cfg)


def stored_config_from_args(args: argparse.Namespace, cfg: ModelConfig) -> ModelConfig:
    """``cfg`` as the options' target's bookies store an entry sent again
    (:meth:`TargetSpec.as_stored`: SortedLedgerStorage keeps the first copy). ValueError as
    :meth:`TargetSpec.storage_for`."""
    return target_spec_from_args(args).as_stored(cfg)


def target_from_args(args: argparse.Namespace, config: ModelConfig | None = None) -> Target:
    """A fresh, unopened target (ValueError for options that do not fit together, or, with
    ``config``, for a configuration the bookies' storage cannot run)."""
    return target_spec_from_args(args).build(config)
