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
import static org.junit.Assert.assertNotNull;
import static org.junit.Assert.assertTrue;
import static org.junit.Assert.fail;

import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.apache.bookkeeper.bookie.SortedLedgerStorage;
import org.apache.bookkeeper.bookie.storage.ldb.DbLedgerStorage;
import org.apache.bookkeeper.client.BookKeeper.DigestType;
import org.apache.bookkeeper.client.api.ReadHandle;
import org.apache.bookkeeper.conf.ClientConfiguration;
import org.apache.bookkeeper.conf.ServerConfiguration;
import org.apache.bookkeeper.net.BookieId;
import org.apache.bookkeeper.test.BookKeeperClusterTestCase;
import org.junit.Test;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A recovery fences a ledger on a bookie of its ensemble that holds no entry of it: the bookie
 * answers the fencing read NoSuchEntry, which {@code ReadLastConfirmedOp} counts towards the
 * fencing coverage, and fences the ledger. That fence must survive a restart of the bookie with
 * its data: otherwise the old writer's next add is accepted by that bookie and can be
 * acknowledged beyond the end the recovery gave the ledger.
 *
 * <p>The bookie journals the fence ({@code METAENTRY_ID_FENCE_KEY}) but not the ledger's master
 * key, which only an add journals ({@code METAENTRY_ID_LEDGER_KEY}); the journal replay of the
 * fence entry needs the key, finds it neither among the replayed keys nor in the ledger storage
 * (which never persisted the ledger: SortedLedgerStorage writes its index header only when it
 * flushes the ledger's index pages, DbLedgerStorage's checkpoint returns early on an empty write
 * cache), takes the ledger for a deleted one and skips the fence.
 *
 * <p>The bookie is restarted by {@link #restartBookie(BookieId)}, a clean shutdown: a stronger
 * case than a crash, which loses the fence on every release and storage.
 */
public class FenceWithoutEntriesSurvivesRestartTest extends BookKeeperClusterTestCase {

    private static final Logger LOG = LoggerFactory.getLogger(FenceWithoutEntriesSurvivesRestartTest.class);
    private static final byte[] PASSWD = "fence".getBytes(StandardCharsets.UTF_8);
    private static final long WAIT_SECONDS = 30;

    public FenceWithoutEntriesSurvivesRestartTest() {
        // The bookies are started by each test, after it has chosen the ledger storage.
        super(0, 180);
    }

    @Test
    public void testFenceWithoutEntriesSurvivesRestartSortedLedgerStorage() throws Exception {
        fenceWithoutEntriesSurvivesRestart(SortedLedgerStorage.class.getName());
    }

    @Test
    public void testFenceWithoutEntriesSurvivesRestartDbLedgerStorage() throws Exception {
        fenceWithoutEntriesSurvivesRestart(DbLedgerStorage.class.getName());
    }

    /**
     * The control: the same schedule without b3's restart. b3 refuses the old writer's add (the
     * fence held in memory); this passes on the releases, and a fix must keep it.
     */
    @Test
    public void testFenceWithoutEntriesHoldsWithoutRestart() throws Exception {
        oldWriterAddAfterRecovery(SortedLedgerStorage.class.getName(), false);
    }

    private void fenceWithoutEntriesSurvivesRestart(String ledgerStorageClass) throws Exception {
        oldWriterAddAfterRecovery(ledgerStorageClass, true);
    }

    private void oldWriterAddAfterRecovery(String ledgerStorageClass, boolean restartB3) throws Exception {
        // The settings that matter: the ledger storage, and the journal (the fence is journalled,
        // the journal is synced when its queue empties: TestBKConfiguration's default, made
        // explicit). Everything else is the framework's test configuration.
        baseConf.setLedgerStorageClass(ledgerStorageClass);
        baseConf.setJournalWriteData(true);
        baseConf.setJournalFlushWhenQueueEmpty(true);
        for (int i = 0; i < 4; i++) {
            startNewBookie();
        }

        ClientConfiguration writerConf = newClientConfiguration();
        writerConf.setAddEntryTimeout((int) WAIT_SECONDS);
        try (BookKeeper writerClient = new BookKeeper(writerConf);
             BookKeeper recoveryClient = new BookKeeper(newClientConfiguration())) {
            // E=3 WQ=AQ=2 on four bookies: e0 is written to b1 and b2, e1 to b2 and b3; the fourth
            // bookie is the spare the recovery's write-back takes in b2's place.
            LedgerHandle writer = writerClient.createLedger(3, 2, 2, DigestType.CRC32, PASSWD);
            List<BookieId> ensemble = writer.getLedgerMetadata().getAllEnsembles().get(0L);
            BookieId b1 = ensemble.get(0);
            BookieId b2 = ensemble.get(1);
            BookieId b3 = ensemble.get(2);
            LOG.info("ledger {}: b1={}, b2={}, b3={}", writer.getId(), b1, b2, b3);

            assertEquals(0L, writer.appendAsync(entry(0)).get(WAIT_SECONDS, TimeUnit.SECONDS).longValue());

            // b2 goes away; another client recovers the ledger. b1 answers the fencing read OK,
            // b3, which has no entry of the ledger, NoSuchEntry: counted as fenced. The recovery
            // writes e0 back (the spare replacing b2) and closes the ledger at e0.
            ServerConfiguration b2Conf = killBookie(b2);
            ReadHandle recovered = recoveryClient.newOpenLedgerOp()
                .withLedgerId(writer.getId())
                .withDigestType(org.apache.bookkeeper.client.api.DigestType.CRC32)
                .withPassword(PASSWD)
                .withRecovery(true)
                .execute()
                .get(WAIT_SECONDS, TimeUnit.SECONDS);
            assertEquals("the recovery closes the ledger at e0", 0L, recovered.getLastAddConfirmed());
            assertTrue(recovered.isClosed());

            // b3 restarts with its data; b2 comes back (with e0, never fenced).
            if (restartB3) {
                restartBookie(b3);
            }
            startAndAddBookie(b2Conf);
            awaitKnownToClient(writerClient, b2);
            awaitKnownToClient(writerClient, b3);

            // The old writer, which never learned of the recovery, adds e1: to b2 and b3. b3 was
            // fenced by the recovery, so the add must be refused.
            Long acknowledged;
            try {
                acknowledged = writer.appendAsync(entry(1)).get(WAIT_SECONDS, TimeUnit.SECONDS);
            } catch (ExecutionException e) {
                LOG.info("the old writer's add was refused", e);
                assertTrue("the old writer's add must fail with a fencing error, got " + e.getCause(),
                    e.getCause() instanceof BKException.BKLedgerFencedException);
                return;
            } catch (TimeoutException e) {
                fail("the old writer's add neither completed nor failed in " + WAIT_SECONDS + " s");
                return;
            }
            assertNotNull(acknowledged);
            fail("bookie b3 (" + ledgerStorageClass + ") lost the fence the recovery gave it"
                + (restartB3 ? " when it restarted" : "") + ": the old writer's add of e" + acknowledged
                + " was acknowledged (by b2 and b3) beyond the end the recovery gave the ledger (e0);"
                + " b3 held no entry of the ledger when it was fenced");
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
