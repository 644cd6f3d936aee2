"""The reference bookie's TCP server and lifecycle: a TEST DOUBLE, not BookKeeper.

::

    server = BookieServer(config)
    await server.start()          # listens on config.advertised_address:config.port (0 = any)
    ... BookieClient.connect("127.0.0.1", server.port) ...
    await server.stop()           # clean: flush, remove the dirty marker, unregister

Start-up order mirrors a real bookie's: replay storage, detect an unclean shutdown (the
``DIRTY`` marker) and missing cookies, run the pre-boot integrity check when configured
(reference §3), write cookies and the marker, serve, then register in ZooKeeper.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from pathlib import Path
from typing import TYPE_CHECKING

from adapters.bookkeeper import codec, v3
from adapters.bookkeeper.errors import MalformedFrame
from adapters.bookkeeper.framing import FrameDecoder, encode_frame
from adapters.refbookie import integrity
from adapters.refbookie.config import BookieConfig
from adapters.refbookie.errors import StartupError
from adapters.refbookie.integrity import MetadataSource
from adapters.refbookie.processor import Reply, RequestProcessor
from adapters.refbookie.storage import BookieStorage

if TYPE_CHECKING:
    from adapters.refbookie.zkglue import ZooKeeperSession

log = logging.getLogger(__name__)

DIRTY_FILE = "DIRTY"
COOKIE_FILE = "VERSION"
_COOKIE_HEADER = "refbookie-cookie-1"


class _BookieConnection(asyncio.Protocol):
    """One client connection: frames in, responses out (possibly out of order)."""

    def __init__(self, server: BookieServer) -> None:
        self._server = server
        self._frames = FrameDecoder(server.config.max_frame_size)
        self._requests = codec.RequestDecoder()
        self._transport: asyncio.Transport | None = None
        # Responses produced in one event-loop turn go out in one write (one syscall).
        self._outgoing: list[bytes] = []
        self._flush_scheduled = False

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self._transport = transport
        self._server.connections.add(self)

    def connection_lost(self, exc: Exception | None) -> None:
        self._server.connections.discard(self)
        self._transport = None

    def abort(self) -> None:
        if self._transport is not None:
            self._transport.abort()

    def data_received(self, data: bytes) -> None:
        processor = self._server.processor
        try:
            payloads = self._frames.feed(data)
        except MalformedFrame as exc:
            log.info("closing connection: %s", exc)
            self.abort()
            return
        for payload in payloads:
            try:
                request = self._requests.decode(payload)
            except MalformedFrame as exc:
                # Real bookies reset the connection on undecodable frames (golden
                # bad-version-undefined-enum, v2-unknown-op).
                log.info("closing connection on undecodable frame: %s", exc)
                self.abort()
                return
            try:
                if isinstance(request, v3.Request):
                    reply = processor.handle_v3(request)
                else:
                    reply = processor.handle_v2(request)
            except Exception:
                # A bug must cost one connection, never the server.
                log.exception("closing connection: request handling failed")
                self.abort()
                return
            self._send(reply)

    def _send(self, reply: Reply) -> None:
        if isinstance(reply, bytes):
            self._queue(reply)
        else:
            reply.add_done_callback(self._send_later)

    def _send_later(self, reply: asyncio.Future[bytes]) -> None:
        if not reply.cancelled():
            self._queue(reply.result())

    def _queue(self, payload: bytes) -> None:
        if self._transport is None:
            return
        self._outgoing.append(encode_frame(payload))
        if not self._flush_scheduled:
            self._flush_scheduled = True
            asyncio.get_running_loop().call_soon(self._flush)

    def _flush(self) -> None:
        self._flush_scheduled = False
        outgoing, self._outgoing = self._outgoing, []
        if self._transport is not None and outgoing:
            self._transport.write(b"".join(outgoing))


class BookieServer:
    """A reference bookie in the current event loop. ``metadata`` replaces ZooKeeper as the
    source of ledger metadata for the pre-boot check (in-process tests)."""

    def __init__(self, config: BookieConfig, *, metadata: MetadataSource | None = None) -> None:
        self.config = config
        self.journal_dir = config.journal_dirs[0]
        self.ledger_dir = config.ledger_dirs[0]
        self.storage = BookieStorage(
            self.journal_dir,
            self.ledger_dir,
            journal_write_data=config.journal_write_data,
            journal_sync_data=config.journal_sync_data,
        )
        self.processor = RequestProcessor(self.storage, self.ledger_dir, config.faulty_mode)
        self.connections: set[_BookieConnection] = set()
        self.unclean_shutdown_detected = False
        self.limbo_marked: list[int] = []
        self._metadata = metadata
        self._server: asyncio.Server | None = None
        self._flusher: asyncio.Task[None] | None = None
        self._zookeeper: ZooKeeperSession | None = None
        self._torn_down = False
        self.port = config.port

    @property
    def bookie_id(self) -> str:
        return self.config.bookie_id(self.port)

    @property
    def _data_dirs(self) -> list[Path]:
        return [*self.config.journal_dirs, *self.config.ledger_dirs]

    async def start(self) -> None:
        """Recover storage, run the integrity check if due, then listen and register."""
        config = self.config
        self.storage.load()
        self.unclean_shutdown_detected = any(
            (d / "current" / DIRTY_FILE).exists() for d in config.ledger_dirs
        )
        if self.unclean_shutdown_detected:
            log.warning("unclean shutdown detected (dirty marker present)")
        cookies_missing = self._check_local_cookies()
        zk = None
        if config.metadata_service_uri is not None:
            # Imported here: a bookie without ZooKeeper never loads kazoo.
            from adapters.refbookie.zkglue import ZooKeeperSession

            zk = await asyncio.to_thread(ZooKeeperSession.open, config)
            self._zookeeper = zk
        try:
            if zk is not None and cookies_missing:
                await asyncio.to_thread(zk.check_missing_cookie, self._cookie_bookie_id(), config)
            if self._integrity_check_due(cookies_missing):
                metadata = self._metadata
                if metadata is None and zk is not None:
                    metadata = zk.metadata_source()
                if metadata is None:
                    log.warning("integrity check due but no metadata source: skipped")
                else:
                    try:
                        snapshot = await asyncio.to_thread(lambda: tuple(metadata.ledgers()))
                    except Exception as exc:
                        raise StartupError(f"reading ledger metadata: {exc}") from exc
                    static = integrity.StaticMetadata(snapshot)
                    self.limbo_marked = integrity.run_preboot_check(
                        self.storage, static, self._cookie_bookie_id()
                    )
            try:
                integrity.apply_clear_limbo_file(self.storage, self.ledger_dir)
            except ValueError as exc:
                raise StartupError(f"bad {integrity.CLEAR_LIMBO_FILE} file: {exc}") from exc
            self.storage.start()
            await self.storage.checkpoint()
            loop = asyncio.get_running_loop()
            self._server = await loop.create_server(
                lambda: _BookieConnection(self), config.advertised_address, config.port
            )
            self.port = self._server.sockets[0].getsockname()[1]
            self._write_local_cookies()
            for directory in config.ledger_dirs:
                (directory / "current" / DIRTY_FILE).touch()
            if zk is not None:
                await asyncio.to_thread(
                    zk.register, self.bookie_id, config.advertised_address, self.port, config
                )
            self._flusher = loop.create_task(self._flush_periodically(), name="flusher")
            log.info("reference bookie %s serving on %s:%d", self.bookie_id,
                     config.advertised_address, self.port)  # fmt: skip
        except BaseException:
            await self._teardown(clean=False)
            raise

    def _cookie_bookie_id(self) -> str:
        # With bookiePort=0 the listening port changes at every start; cookies and the
        # integrity check use the configured id (host:0) so that restarts stay consistent.
        return self.config.bookie_id(self.config.port)

    def _integrity_check_due(self, cookies_missing: bool) -> bool:
        config = self.config
        if not config.data_integrity_checking:
            return False
        unclean_without_journal = self.unclean_shutdown_detected and not config.journal_write_data
        stamp = cookies_missing and config.data_integrity_stamp_missing_cookies
        return unclean_without_journal or stamp

    def _check_local_cookies(self) -> bool:
        """True if a data directory lacks its cookie; a cookie naming another bookie is fatal."""
        missing = False
        for directory in self._data_dirs:
            cookie = directory / "current" / COOKIE_FILE
            if not cookie.exists():
                missing = True
                continue
            lines = cookie.read_text().splitlines()
            if lines[:1] != [_COOKIE_HEADER] or len(lines) < 2:
                raise StartupError(f"{cookie}: not a reference bookie cookie")
            if lines[1] != f"bookieId={self._cookie_bookie_id()}":
                raise StartupError(
                    f"{cookie}: {lines[1]}, but this bookie is {self._cookie_bookie_id()}"
                )
        return missing

    def _write_local_cookies(self) -> None:
        for directory in self._data_dirs:
            cookie = directory / "current" / COOKIE_FILE
            cookie.parent.mkdir(parents=True, exist_ok=True)
            cookie.write_text(f"{_COOKIE_HEADER}\nbookieId={self._cookie_bookie_id()}\n")

    async def _flush_periodically(self) -> None:
        interval = self.config.flush_interval_ms / 1000
        while True:
            await asyncio.sleep(interval)
            try:
                await self.storage.checkpoint()
            except OSError as exc:
                log.error("periodic flush failed: %s", exc)

    def clear_limbo(self, ledger_ids: list[int] | None = None) -> list[int]:
        """Clear limbo explicitly (the reference bookie never does it by itself)."""
        return integrity.clear_limbo(self.storage, ledger_ids)

    async def stop(self) -> None:
        """Clean shutdown: flush storage, remove the dirty marker, leave ZooKeeper."""
        await self._teardown(clean=True)

    async def crash(self) -> None:
        """Simulate SIGKILL in-process: stop serving and drop everything not yet flushed.

        The journal's completed writes stay; the ledger storage buffer is lost; the dirty
        marker stays. (Cluster tests kill a real process instead.)
        """
        await self._teardown(clean=False)

    async def _teardown(self, *, clean: bool) -> None:
        if self._torn_down:
            return  # stop() after crash() must not turn the crash into a clean stop
        self._torn_down = True
        if self._flusher is not None:
            self._flusher.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._flusher
            self._flusher = None
        if self._server is not None:
            self._server.close()
            for connection in list(self.connections):
                connection.abort()
            await self._server.wait_closed()
            self._server = None
        await self.storage.close(checkpoint=clean)
        if clean:
            for directory in self.config.ledger_dirs:
                (directory / "current" / DIRTY_FILE).unlink(missing_ok=True)
        zookeeper, self._zookeeper = self._zookeeper, None
        if zookeeper is not None:
            await asyncio.to_thread(zookeeper.close)
