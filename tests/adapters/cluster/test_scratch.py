"""Where a test cluster's temporary directory goes (adapters/cluster/scratch.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from adapters.cluster import scratch
from adapters.cluster.scratch import ENVIRONMENT, file_system_of, make_scratch_dir, scratch_parent

MOUNTS = (
    "/dev/vda / ext4 rw,relatime 0 0\n"
    "tmpfs /dev/shm tmpfs rw,nosuid,nodev 0 0\n"
    "proc /proc proc rw 0 0\n"
    "tmpfs /small tmpfs rw 0 0\n"
)


@pytest.fixture
def mounts(monkeypatch: pytest.MonkeyPatch) -> None:
    real = Path.read_text

    def read_text(self: Path, *args: object, **kwargs: object) -> str:
        if str(self) == "/proc/mounts":
            return MOUNTS
        return real(self, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(Path, "read_text", read_text)


def test_file_system_is_the_longest_mount_point_above_the_path(mounts: None) -> None:
    assert file_system_of(Path("/dev/shm")) == "tmpfs"
    assert file_system_of(Path("/dev/shm/x/y")) == "tmpfs"
    assert file_system_of(Path("/dev/shmother")) == "ext4"  # a prefix is not a parent
    assert file_system_of(Path("/tmp")) == "ext4"


def test_tmpfs_with_room_is_chosen(mounts: None, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("os.access", lambda *_: True)
    monkeypatch.setattr(
        "shutil.disk_usage", lambda _: type("U", (), {"free": scratch.MIN_FREE_BYTES})
    )
    assert scratch_parent({}, Path("/dev/shm")) == Path("/dev/shm")


def test_tmpfs_without_room_is_not(mounts: None, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("os.access", lambda *_: True)
    monkeypatch.setattr(
        "shutil.disk_usage",
        lambda _: type("U", (), {"free": scratch.MIN_FREE_BYTES - 1}),
    )
    assert scratch_parent({}, Path("/small")) is None


def test_a_disk_is_not_chosen(mounts: None) -> None:
    assert scratch_parent({}, Path("/")) is None


def test_the_environment_names_the_directory(tmp_path: Path) -> None:
    assert scratch_parent({ENVIRONMENT: str(tmp_path)}) == tmp_path


def test_a_named_directory_that_is_missing_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="is not a writable directory"):
        scratch_parent({ENVIRONMENT: str(tmp_path / "missing")})


def test_the_directory_is_made_where_chosen(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(ENVIRONMENT, str(tmp_path))
    made = make_scratch_dir("bkconform-test-")
    assert made.parent == tmp_path and made.is_dir() and made.name.startswith("bkconform-test-")


def test_a_cluster_with_a_bad_scratch_directory_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from adapters.cluster.errors import InvalidClusterOptions
    from adapters.cluster.local import LocalCluster

    monkeypatch.setenv(ENVIRONMENT, str(tmp_path / "missing"))
    with pytest.raises(InvalidClusterOptions, match=r"BKCONFORM_SCRATCH=.*missing"):
        LocalCluster().start()
