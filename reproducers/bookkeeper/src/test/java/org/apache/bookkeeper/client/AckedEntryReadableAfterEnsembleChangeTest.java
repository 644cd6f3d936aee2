/*
 *
 * Licensed to the Apache Software Foundation (ASF) under one
 * or more contributor license agreements.  See the NOTICE file
 * distributed with this work for additional information
 * regarding copyright ownership.  The ASF licenses this file
 * to you under the Apache License, Version 2.0 (the
 * "License"); you may not use this file except in compliance
 * with the License.  You may obtain a copy of the License at
 *
 *   http://www.apache.org/licenses/LICENSE-2.0
 *
 * Unless required by applicable law or agreed to in writing,
 * software distributed under the License is distributed on an
 * "AS IS" BASIS, WITHOUT WARRANTIES OR CONDITIONS OF ANY
 * KIND, either express or implied.  See the License for the
 * specific language governing permissions and limitations
 * under the License.
 *
 */
package org.apache.bookkeeper.client;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertTrue;
import static org.junit.Assert.fail;
import static org.junit.Assume.assumeTrue;

import io.netty.buffer.ByteBuf;
import io.netty.util.ReferenceCountUtil;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.apache.bookkeeper.bookie.Bookie;
import org.apache.bookkeeper.bookie.BookieException;
import org.apache.bookkeeper.bookie.TestBookieImpl;
import org.apache.bookkeeper.client.BookKeeper.DigestType;
import org.apache.bookkeeper.conf.ClientConfiguration;
import org.apache.bookkeeper.conf.ServerConfiguration;
import org.apache.bookkeeper.net.BookieId;
import org.apache.bookkeeper.proto.BookkeeperInternalCallbacks.WriteCallback;
import org.apache.bookkeeper.test.BookKeeperClusterTestCase;
import org.junit.Test;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * apache/bookkeeper#3005: an entry acknowledged to the application must stay readable after an
 * ensemble change.
 *
 * <p>E=2, WQ=AQ=1, three bookies; the ensemble is b1, b2 (b3 the spare): e0 and e2 go to b1,
 * e1 and e3 to b2. Four adds are pipelined. b1 stores e0 but holds its answer; b2 acknowledges
 * e1 and fails e3 (an IOException: EIO to the client), which starts an ensemble change from e0,
 * the first entry not yet acknowledged. While the change's metadata write is held (ZooKeeper's
 * SyncThread suspended, {@code ZooKeeperCluster.sleepCluster}), b1's answer to e0 arrives: e0
 * and e1 are complete but wait for the change. When the change completes (ensemble b1, b3 from
 * e0), {@code PendingAddOp.unsetSuccessAndSendWriteRequest} of e0 calls
 * {@code sendAddSuccessCallbacks()} while e1 is still marked complete for its old write set:
 * e1's success goes to the application and e1 is never rewritten to b3, which the metadata now
 * names for it. The closed ledger cannot return e1.
 */
public class AckedEntryReadableAfterEnsembleChangeTest extends BookKeeperClusterTestCase {

    private static final Logger LOG = LoggerFactory.getLogger(AckedEntryReadableAfterEnsembleChangeTest.class);
    private static final byte[] PASSWD = "bk-3005".getBytes(StandardCharsets.UTF_8);
    private static final long WAIT_SECONDS = 30;
    /** How long ZooKeeper's writes are held: the change's metadata write is in flight meanwhile. */
    private static final int ZK_PAUSE_SECONDS = 4;
    private static final int NUM_ENTRIES = 4;

    public AckedEntryReadableAfterEnsembleChangeTest() {
        super(3, 180);
    }

    @Test
    public void testAckedEntryReadableAfterEnsembleChange() throws Exception {
        ClientConfiguration writerConf = newClientConfiguration();
        writerConf.setAddEntryTimeout((int) WAIT_SECONDS); // no timeout plays a part
        try (BookKeeper writerClient = new BookKeeper(writerConf)) {
            LedgerHandle writer = writerClient.createLedger(2, 1, 1, DigestType.CRC32, PASSWD);
            List<BookieId> ensemble = writer.getLedgerMetadata().getAllEnsembles().get(0L);
            BookieId b1 = ensemble.get(0);
            BookieId b2 = ensemble.get(1);
            LOG.info("ledger {}: b1={}, b2={}", writer.getId(), b1, b2);

            // b1 again (its data and identity): it stores e0 but holds its answer until released.
            CountDownLatch releaseE0 = new CountDownLatch(1);
            ServerConfiguration b1Conf = killBookie(b1);
            Bookie b1Bookie = new TestBookieImpl(b1Conf) {
                @Override
                public void addEntry(ByteBuf entry, boolean ackBeforeSync, WriteCallback cb, Object ctx,
                                     byte[] masterKey) throws IOException, BookieException, InterruptedException {
                    long entryId = entry.getLong(entry.readerIndex() + 8);
                    if (entryId != 0) {
                        super.addEntry(entry, ackBeforeSync, cb, ctx, masterKey);
                        return;
                    }
                    WriteCallback held = (rc, ledgerId, id, addr, c) -> CompletableFuture.runAsync(() -> {
                        try {
                            releaseE0.await(WAIT_SECONDS, TimeUnit.SECONDS);
                        } catch (InterruptedException e) {
                            Thread.currentThread().interrupt();
                        }
                        cb.writeComplete(rc, ledgerId, id, addr, c);
                    });
                    super.addEntry(entry, ackBeforeSync, held, ctx, masterKey);
                }
            };
            startAndAddBookie(b1Conf, b1Bookie);
            // b2 again: it acknowledges e1 and fails e3.
            CountDownLatch e3Failed = new CountDownLatch(1);
            ServerConfiguration b2Conf = killBookie(b2);
            Bookie b2Bookie = new TestBookieImpl(b2Conf) {
                @Override
                public void addEntry(ByteBuf entry, boolean ackBeforeSync, WriteCallback cb, Object ctx,
                                     byte[] masterKey) throws IOException, BookieException, InterruptedException {
                    long entryId = entry.getLong(entry.readerIndex() + 8);
                    if (entryId == 3) {
                        ReferenceCountUtil.release(entry);
                        e3Failed.countDown();
                        throw new IOException("injected: b2 fails e3");
                    }
                    super.addEntry(entry, ackBeforeSync, cb, ctx, masterKey);
                }
            };
            startAndAddBookie(b2Conf, b2Bookie);
            awaitKnownToClient(writerClient, b1);
            awaitKnownToClient(writerClient, b2);

            // Hold ZooKeeper's writes: the ensemble change's metadata write will wait.
            CountDownLatch zkSuspended = new CountDownLatch(1);
            zkUtil.sleepCluster(ZK_PAUSE_SECONDS, TimeUnit.SECONDS, zkSuspended);
            assertTrue("ZooKeeper was not suspended", zkSuspended.await(WAIT_SECONDS, TimeUnit.SECONDS));
            long pauseEnds = System.nanoTime() + TimeUnit.SECONDS.toNanos(ZK_PAUSE_SECONDS);

            List<CompletableFuture<Long>> acks = new ArrayList<>();
            for (int i = 0; i < NUM_ENTRIES; i++) {
                CompletableFuture<Long> ack = new CompletableFuture<>();
                acks.add(ack);
                writer.asyncAddEntry(entry(i), (rc, lh, entryId, ctx) -> {
                    if (rc == BKException.Code.OK) {
                        ack.complete(entryId);
                    } else {
                        ack.completeExceptionally(BKException.create(rc));
                    }
                }, null);
            }

            // b2 fails e3: the client starts an ensemble change, whose metadata write waits.
            boolean changeInFlight = false;
            try {
                assertTrue("b2 never received e3", e3Failed.await(WAIT_SECONDS, TimeUnit.SECONDS));
                while (!changingEnsemble(writer) && System.nanoTime() < pauseEnds) {
                    Thread.sleep(1);
                }
                // e0's answer arrives during the change.
                changeInFlight = changingEnsemble(writer) && System.nanoTime() < pauseEnds
                    && writer.getLedgerMetadata().getAllEnsembles().get(0L).equals(ensemble);
            } finally {
                releaseE0.countDown();
            }

            for (int i = 0; i < NUM_ENTRIES; i++) {
                assertEquals(i, acks.get(i).get(WAIT_SECONDS, TimeUnit.SECONDS).longValue());
            }
            // The schedule of #3005: e0 answered while the change's metadata write was in flight,
            // and the change was made from e0.
            assumeTrue("e0's answer was released after the ensemble change completed: schedule not reached",
                changeInFlight);
            List<BookieId> fromE0 = writer.getLedgerMetadata().getAllEnsembles().get(0L);
            assumeTrue("the ensemble change was not made from e0: " + writer.getLedgerMetadata().getAllEnsembles(),
                !fromE0.contains(b2));
            writer.close();
            LOG.info("ensembles {}", writer.getLedgerMetadata().getAllEnsembles());

            // Every acknowledged entry must be readable from the closed ledger.
            List<String> unreadable = new ArrayList<>();
            try (BookKeeper reader = new BookKeeper(newClientConfiguration())) {
                LedgerHandle readHandle = reader.openLedgerNoRecovery(writer.getId(), DigestType.CRC32, PASSWD);
                assertEquals(NUM_ENTRIES - 1, readHandle.getLastAddConfirmed());
                for (int i = 0; i < NUM_ENTRIES; i++) {
                    try {
                        LedgerEntry read = readHandle.readEntries(i, i).nextElement();
                        assertTrue(Arrays.equals(entry(i), read.getEntry()));
                    } catch (BKException e) {
                        unreadable.add("e" + i + ": " + e.getClass().getSimpleName());
                    }
                }
            }
            if (!unreadable.isEmpty()) {
                fail("entries acknowledged to the application cannot be read from the closed ledger: "
                    + unreadable + "; the ensemble change was made from e0 (ensembles "
                    + writer.getLedgerMetadata().getAllEnsembles() + ", b2 = " + b2 + " replaced), e0's"
                    + " answer arrived while its metadata write was in flight, and e1, acknowledged by b2"
                    + " for its old write set, was reported to the application and never rewritten to"
                    + " its new write set");
            }
        }
    }

    private static boolean changingEnsemble(LedgerHandle lh) {
        synchronized (lh.metadataLock) {
            return lh.changingEnsemble;
        }
    }

    /**
     * Waits until {@code client} lists {@code bookie} as writable and resolves its address: a
     * restarted bookie registers again, and a client learns it asynchronously.
     */
    private static void awaitKnownToClient(BookKeeper client, BookieId bookie) throws Exception {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(WAIT_SECONDS);
        while (true) {
            try {
                if (client.getBookieWatcher().getBookies().contains(bookie)) {
                    client.getBookieAddressResolver().resolve(bookie);
                    return;
                }
            } catch (BKException | RuntimeException e) {
                // not yet
            }
            assertTrue("the client does not know bookie " + bookie, System.nanoTime() < deadline);
            Thread.sleep(10);
        }
    }

    private static byte[] entry(int i) {
        return ("entry-" + i).getBytes(StandardCharsets.UTF_8);
    }
}
