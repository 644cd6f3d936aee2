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
import static org.junit.Assert.assertFalse;
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
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
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
 * An add that waits on the client's add throttle ({@code throttleValue}) while an ensemble change
 * completes must not be sent to the bookie the change replaced.
 *
 * <p>{@code LedgerHandle.asyncAddEntry} builds the {@code PendingAddOp} with
 * {@code getCurrentEnsemble()}, then {@code doAsyncAddEntry} blocks in
 * {@code throttler.acquire()} before the op gets its entry id and joins {@code pendingAddOps}.
 * An ensemble change that completes meanwhile moves only the ops already in
 * {@code pendingAddOps} to the new ensemble; the throttled op keeps the old one, is written to
 * the replaced bookie, is acknowledged by it, and the ledger's metadata names for that entry a
 * bookie that never received it.
 *
 * <p>E=2, WQ=AQ=1, three bookies; the ensemble is b1, b2 (b3 the spare): e0 and e2 go to b1,
 * e1 and e3 to b2. The client's throttle is 1 add a second. b2 holds its answer to e1 and then
 * fails it (an IOException: EIO to the client), which starts an ensemble change replacing b2 by
 * b3 from e1; b2 answers every other add normally. The hold is released only once the
 * application's call for e3 has taken the ensemble and waits on the throttle, so the change
 * completes during that wait.
 */
public class ThrottledAddAcrossEnsembleChangeTest extends BookKeeperClusterTestCase {

    private static final Logger LOG = LoggerFactory.getLogger(ThrottledAddAcrossEnsembleChangeTest.class);
    private static final byte[] PASSWD = "throttle".getBytes(StandardCharsets.UTF_8);
    private static final long WAIT_SECONDS = 30;
    private static final int NUM_ENTRIES = 4;

    public ThrottledAddAcrossEnsembleChangeTest() {
        super(3, 180);
    }

    @Test
    public void testThrottledAddIsNotSentToTheReplacedBookie() throws Exception {
        ClientConfiguration writerConf = newClientConfiguration();
        writerConf.setThrottleValue(1); // one add a second: each add after the first waits ~1 s
        writerConf.setAddEntryTimeout((int) WAIT_SECONDS); // no timeout plays a part
        try (BookKeeper writerClient = new BookKeeper(writerConf)) {
            LedgerHandle writer = writerClient.createLedger(2, 1, 1, DigestType.CRC32, PASSWD);
            List<BookieId> ensemble = writer.getLedgerMetadata().getAllEnsembles().get(0L);
            BookieId b1 = ensemble.get(0);
            BookieId b2 = ensemble.get(1);
            LOG.info("ledger {}: b1={}, b2={}", writer.getId(), b1, b2);

            // b2 again, with its data and identity, as a bookie that holds e1 until released and
            // then fails it; it records the entries it stores.
            CountDownLatch releaseE1 = new CountDownLatch(1);
            Set<Long> storedOnB2 = ConcurrentHashMap.newKeySet();
            ServerConfiguration b2Conf = killBookie(b2);
            Bookie b2Bookie = new TestBookieImpl(b2Conf) {
                @Override
                public void addEntry(ByteBuf entry, boolean ackBeforeSync, WriteCallback cb, Object ctx,
                                     byte[] masterKey) throws IOException, BookieException, InterruptedException {
                    long entryId = entry.getLong(entry.readerIndex() + 8);
                    if (entryId == 1) {
                        ReferenceCountUtil.release(entry);
                        releaseE1.await(WAIT_SECONDS, TimeUnit.SECONDS);
                        throw new IOException("injected: b2 fails e1");
                    }
                    storedOnB2.add(entryId);
                    super.addEntry(entry, ackBeforeSync, cb, ctx, masterKey);
                }
            };
            startAndAddBookie(b2Conf, b2Bookie);
            awaitKnownToClient(writerClient, b2);

            // The application: four adds from one thread, each call returning once its throttle
            // wait is over.
            List<CompletableFuture<Long>> acks = new ArrayList<>();
            for (int i = 0; i < NUM_ENTRIES; i++) {
                acks.add(new CompletableFuture<>());
            }
            CountDownLatch callingE3 = new CountDownLatch(1);
            CountDownLatch e3CallReturned = new CountDownLatch(1);
            AtomicReference<Throwable> appError = new AtomicReference<>();
            Thread app = new Thread(() -> {
                try {
                    for (int i = 0; i < NUM_ENTRIES; i++) {
                        if (i == 3) {
                            callingE3.countDown();
                        }
                        CompletableFuture<Long> ack = acks.get(i);
                        writer.asyncAddEntry(entry(i), (rc, lh, entryId, ctx) -> {
                            if (rc == BKException.Code.OK) {
                                ack.complete(entryId);
                            } else {
                                ack.completeExceptionally(BKException.create(rc));
                            }
                        }, null);
                    }
                    e3CallReturned.countDown();
                } catch (Throwable t) {
                    appError.set(t);
                }
            }, "application");
            app.start();

            // Wait until the call for e3 has taken the ensemble and waits on the throttle.
            boolean e3WaitsOnThrottle = false;
            boolean changeDuringThrottleWait = false;
            try {
                assertTrue("the application did not call asyncAddEntry for e3",
                    callingE3.await(WAIT_SECONDS, TimeUnit.SECONDS));
                long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(WAIT_SECONDS);
                while (e3CallReturned.getCount() == 1 && System.nanoTime() < deadline) {
                    if (waitsOnThrottle(app)) {
                        e3WaitsOnThrottle = true;
                        break;
                    }
                    Thread.sleep(1);
                }
                if (e3WaitsOnThrottle) {
                    // Now b2 fails e1: the ensemble change replaces b2 by b3, and completes.
                    releaseE1.countDown();
                    while (writer.getLedgerMetadata().getAllEnsembles().size() < 2) {
                        assertTrue("the ensemble change did not complete", System.nanoTime() < deadline);
                        Thread.sleep(1);
                    }
                    changeDuringThrottleWait = e3CallReturned.getCount() == 1;
                }
            } finally {
                releaseE1.countDown();
            }
            // The window, part one: the call for e3 was seen waiting on the throttle.
            assumeTrue("the call for e3 was not seen waiting on the throttle: schedule not reached",
                e3WaitsOnThrottle);
            app.join(TimeUnit.SECONDS.toMillis(WAIT_SECONDS));
            assertFalse("the application thread is stuck", app.isAlive());
            assertEquals(null, appError.get());
            for (int i = 0; i < NUM_ENTRIES; i++) {
                assertEquals(i, acks.get(i).get(WAIT_SECONDS, TimeUnit.SECONDS).longValue());
            }
            // The window, part two: the change completed while the call for e3 waited on the throttle.
            assumeTrue("the ensemble change completed after e3's throttle wait: schedule not reached",
                changeDuringThrottleWait);

            List<BookieId> e3WriteSet = writer.getLedgerMetadata().getEnsembleAt(3);
            String e3Bookie = e3WriteSet.get(1).equals(b2) ? "b2" : e3WriteSet.get(1).equals(b1) ? "b1" : "b3";
            writer.close();
            LOG.info("ensembles {}; entries stored on b2 {}", writer.getLedgerMetadata().getAllEnsembles(),
                storedOnB2);

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
            if (!unreadable.isEmpty() || storedOnB2.contains(3L)) {
                fail("the add of e3 took the ensemble (b1, b2) before its throttle wait and was sent to"
                    + " b2 after the ensemble change replaced b2 by b3 from e1 (e3 stored on b2: "
                    + storedOnB2.contains(3L) + "); it was acknowledged, the ledger's metadata gives e3"
                    + " to " + e3Bookie + " (ensembles " + writer.getLedgerMetadata().getAllEnsembles()
                    + "), and the acknowledged entries " + unreadable
                    + " cannot be read");
            }
        }
    }

    /** Whether {@code thread} sleeps in Guava's RateLimiter (LedgerHandle's add throttle). */
    private static boolean waitsOnThrottle(Thread thread) {
        if (thread.getState() != Thread.State.TIMED_WAITING) {
            return false;
        }
        for (StackTraceElement frame : thread.getStackTrace()) {
            if (frame.getClassName().startsWith("com.google.common.util.concurrent.RateLimiter")) {
                return true;
            }
        }
        return false;
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
