/*
 * Licensed to the Apache Software Foundation (ASF) under one
 * or more contributor license agreements.  See the NOTICE file
 * distributed with this work for additional information
 * regarding copyright ownership.  The ASF licenses this file
 * to you under the Apache License, Version 2.0 (the
 * "License"); you may not use this file except in compliance
 * with the License.  You may obtain a copy of the License at
 *
 *     http://www.apache.org/licenses/LICENSE-2.0
 *
 * Unless required by applicable law or agreed to in writing, software
 * distributed under the License is distributed on an "AS IS" BASIS,
 * WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
 * See the License for the specific language governing permissions and
 * limitations under the License.
 */

package org.apache.zookeeper.server.quorum;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import java.io.BufferedInputStream;
import java.io.File;
import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.ByteBuffer;
import java.util.Arrays;
import java.util.HashMap;
import org.apache.jute.BinaryInputArchive;
import org.apache.jute.BinaryOutputArchive;
import org.apache.jute.InputArchive;
import org.apache.jute.OutputArchive;
import org.apache.zookeeper.ZKTestCase;
import org.apache.zookeeper.ZooDefs;
import org.apache.zookeeper.server.ByteBufferOutputStream;
import org.apache.zookeeper.server.DataTree;
import org.apache.zookeeper.server.Request;
import org.apache.zookeeper.server.ZKDatabase;
import org.apache.zookeeper.server.persistence.FileSnap;
import org.apache.zookeeper.server.persistence.FileTxnSnapLog;
import org.apache.zookeeper.server.quorum.QuorumPeer.QuorumServer;
import org.apache.zookeeper.server.util.ZxidUtils;
import org.apache.zookeeper.txn.CreateTxn;
import org.apache.zookeeper.txn.TxnHeader;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A leader must not write its possibly uncommitted history into a snapshot before a quorum has
 * acknowledged its epoch (ZOOKEEPER-1558, fixed on branch-3.4 only, with
 * {@code Zab1_0Test#testDirtySnapshot}; neither is in any release from 3.5.0 on).
 *
 * <p>The history, on the disk of server L, the leader of epoch 1: 0x100000001 and 0x100000002
 * were committed; 0x100000003 (create {@value #UNCOMMITTED}) was logged by L alone (its PROPOSAL
 * never reached a follower) and is not committed. L restarts and is elected (its log is the
 * longest): {@code Leader.lead()} loads its database and proposes epoch 2 to a follower,
 * driven by this test, that never acknowledges it; L goes away. The other servers form epoch 3
 * without 0x100000003, and its leader syncs L with TRUNC 0x100000002.
 *
 * <p>Every step is driven by the test over sockets (fake follower, fake leader, as in
 * Zab1_0Test); every read has a timeout, every wait a bound.
 */
public class LeaderStartupSnapshotTest extends ZKTestCase {

    private static final Logger LOG = LoggerFactory.getLogger(LeaderStartupSnapshotTest.class);

    private static final String COMMITTED_1 = "/committed-1";
    private static final String COMMITTED_2 = "/committed-2";
    private static final String UNCOMMITTED = "/uncommitted";

    private static final long LAST_COMMITTED_ZXID = ZxidUtils.makeZxid(1, 2);
    private static final long UNCOMMITTED_ZXID = ZxidUtils.makeZxid(1, 3);

    /** Bound of every socket read and every wait, ms. */
    private static final int TIMEOUT_MS = 30_000;

    /**
     * The idea of ZOOKEEPER-1558's testDirtySnapshot, on a log that ends with an uncommitted
     * proposal: once the restarted L has loaded its database and sent LEADERINFO of epoch 2,
     * and before any follower acknowledged that epoch, no snapshot may hold 0x100000003.
     */
    @Test
    @Timeout(120)
    public void uncommittedProposalNotInNewLeadersSnapshot(@TempDir File testData) throws Exception {
        File dataDir = new File(testData, "L");
        writeEpochOneHistory(dataDir);

        startLeaderNeverAcknowledged(dataDir);

        File snapDir = new File(dataDir, "version-2");
        DataTree newest = new DataTree();
        long snapZxid = new FileSnap(snapDir).deserialize(newest, new HashMap<>());
        assertFalse(newest.getNode(UNCOMMITTED) != null,
            String.format("the leader wrote snapshot.%x at startup, before any follower acknowledged"
                + " epoch 2, and it holds %s, created by 0x%x, a proposal no quorum acknowledged"
                + " (snapshots: %s)",
                snapZxid, UNCOMMITTED, UNCOMMITTED_ZXID, listSnapshots(snapDir)));
    }

    /**
     * The consequence: L, synced by the leader of epoch 3 with TRUNC 0x100000002, keeps
     * {@value #UNCOMMITTED}, which no other server has, at the zxid the others have.
     */
    @Test
    @Timeout(120)
    public void uncommittedProposalDoesNotSurviveTrunc(@TempDir File testData) throws Exception {
        File dataDir = new File(testData, "L");
        writeEpochOneHistory(dataDir);

        startLeaderNeverAcknowledged(dataDir);

        String snapshotsBeforeTrunc = listSnapshots(new File(dataDir, "version-2"));
        AfterSync afterTrunc = followLeaderOfEpochThree(new File(testData, "F"), dataDir);

        assertEquals(LAST_COMMITTED_ZXID, afterTrunc.lastProcessedZxid, "L's last processed zxid after TRUNC");
        assertTrue(afterTrunc.hasCommitted, "L lost the committed " + COMMITTED_2);
        assertFalse(afterTrunc.hasUncommitted,
            String.format("after TRUNC 0x%x from the leader of epoch 3, L still serves %s, created by"
                + " 0x%x, which no quorum acknowledged and no other server has: ZKDatabase.truncateLog"
                + " truncated the log but reloaded the database from a snapshot newer than the"
                + " truncation point, written by L at startup as leader of epoch 2 (snapshots"
                + " before TRUNC: %s)",
                LAST_COMMITTED_ZXID, UNCOMMITTED, UNCOMMITTED_ZXID, snapshotsBeforeTrunc));
    }

    /**
     * Not the finding: what a fix must keep. Once a quorum (L and F) has acknowledged NEWLEADER
     * of epoch 2, L's history is committed and L has a snapshot of it (every release from 3.5.0
     * on writes one at startup; a fix should still write it, once the history is committed).
     * Here F has L's whole history (ACKEPOCH with 0x100000003), so 0x100000003 is committed
     * with epoch 2. Passes on the releases and with the fix.
     */
    @Test
    @Timeout(120)
    public void leaderSnapshotsItsHistoryOnceEpochEstablished(@TempDir File testData) throws Exception {
        File dataDir = new File(testData, "L");
        writeEpochOneHistory(dataDir);

        leadWithFakeFollower(dataDir, (ia, oa, leader) -> {
            byte[] currentEpoch = new byte[4];
            ByteBuffer.wrap(currentEpoch).putInt(1);
            oa.writeRecord(new QuorumPacket(Leader.ACKEPOCH, UNCOMMITTED_ZXID, currentEpoch, null), null);
            QuorumPacket qp = new QuorumPacket();
            Zab1_0Test.readPacketSkippingPing(ia, qp);
            assertEquals(Leader.DIFF, qp.getType(), "L syncs F, which has its whole history, by DIFF");
            Zab1_0Test.readPacketSkippingPing(ia, qp);
            assertEquals(Leader.NEWLEADER, qp.getType(), "L's NEWLEADER");
            assertEquals(ZxidUtils.makeZxid(2, 0), qp.getZxid(), "L's NEWLEADER");
            oa.writeRecord(new QuorumPacket(Leader.ACK, qp.getZxid(), null, null), null);
            Zab1_0Test.readPacketSkippingPing(ia, qp);
            assertEquals(Leader.UPTODATE, qp.getType(), "L's UPTODATE: it runs epoch 2");
            assertEquals(2, leader.self.getCurrentEpoch(), "L's current epoch");
        });

        DataTree newest = new DataTree();
        long snapZxid = new FileSnap(new File(dataDir, "version-2")).deserialize(newest, new HashMap<>());
        assertEquals(UNCOMMITTED_ZXID, snapZxid, String.format(
            "L's newest snapshot once epoch 2 was established (snapshots: %s)",
            listSnapshots(new File(dataDir, "version-2"))));
        assertTrue(newest.getNode(UNCOMMITTED) != null, "L's snapshot misses " + UNCOMMITTED);
    }

    /**
     * L's disk as the leader of epoch 1 leaves it: snapshot.0, a log with 0x100000001 and
     * 0x100000002 (committed) and 0x100000003 (logged by L alone), current and accepted epoch 1.
     */
    private static void writeEpochOneHistory(File dataDir) throws IOException {
        assertTrue(dataDir.mkdirs(), "cannot create " + dataDir);
        FileTxnSnapLog snapLog = new FileTxnSnapLog(dataDir, dataDir);
        try {
            ZKDatabase db = new ZKDatabase(snapLog);
            snapLog.save(db.getDataTree(), db.getSessionWithTimeOuts(), false);
            logCreate(db, ZxidUtils.makeZxid(1, 1), COMMITTED_1);
            logCreate(db, LAST_COMMITTED_ZXID, COMMITTED_2);
            logCreate(db, UNCOMMITTED_ZXID, UNCOMMITTED);
            db.commit();
        } finally {
            snapLog.close();
        }
    }

    private static void logCreate(ZKDatabase db, long zxid, String path) throws IOException {
        TxnHeader hdr = new TxnHeader(0x4242L, (int) zxid, zxid, 1000 + zxid, ZooDefs.OpCode.create);
        CreateTxn txn = new CreateTxn(path, path.getBytes(), ZooDefs.Ids.OPEN_ACL_UNSAFE, false, 1);
        assertTrue(db.append(new Request(hdr.getClientId(), hdr.getCxid(), hdr.getType(), hdr, txn, zxid)),
            "cannot log 0x" + Long.toHexString(zxid));
    }

    /**
     * L restarts and leads: a fake follower F (sid 1, accepted epoch 1) sends FOLLOWERINFO,
     * which with L makes a quorum for epoch 2; L sends LEADERINFO of epoch 2 (so it has run
     * {@code zk.loadData()}); F never sends ACKEPOCH, and L is shut down.
     */
    private static void startLeaderNeverAcknowledged(File dataDir) throws Exception {
        Leader leader = leadWithFakeFollower(dataDir, (ia, oa, l) -> {
            // No ACKEPOCH: epoch 2 is never established. L goes away.
        });
        assertEquals(1, leader.self.getCurrentEpoch(), "L's current epoch (epoch 2 never established)");
    }

    /** What the fake follower says once L has sent LEADERINFO. */
    private interface FollowerSide {

        void converse(InputArchive ia, OutputArchive oa, Leader leader) throws Exception;

    }

    /**
     * Start L (the history of {@link #writeEpochOneHistory} in {@code dataDir}) as leader with a
     * fake follower F: F sends FOLLOWERINFO, L answers LEADERINFO of epoch 2, then
     * {@code follower} converses; L is shut down after. Returns L.
     */
    private static Leader leadWithFakeFollower(File dataDir, FollowerSide follower) throws Exception {
        QuorumPeer peer = ZabUtils.createQuorumPeer(dataDir);
        Leader leader = ZabUtils.createLeader(dataDir, peer);
        peer.leader = leader;
        peer.setAcceptedEpoch(1);
        peer.setCurrentEpoch(1);

        Thread leadThread = new Thread(() -> {
            try {
                leader.lead();
            } catch (InterruptedException e) {
                LOG.info("lead() interrupted");
            } catch (Exception e) {
                LOG.warn("lead() failed", e);
            } finally {
                leader.shutdown("lead ended");
            }
        }, "LeadThread");
        Socket[] pair = null;
        try {
            leadThread.start();
            long deadline = System.currentTimeMillis() + TIMEOUT_MS;
            while (leader.cnxAcceptor == null || !leader.cnxAcceptor.isAlive()) {
                assertTrue(System.currentTimeMillis() < deadline,
                    "the leader did not start accepting followers within " + TIMEOUT_MS + " ms");
                assertTrue(leadThread.isAlive(), "lead() ended before accepting followers");
                Thread.sleep(20);
            }

            pair = Zab1_0Test.getSocketPair();
            Socket leaderSide = pair[0];
            Socket followerSide = pair[1];
            followerSide.setSoTimeout(TIMEOUT_MS);
            LearnerHandler handler = new LearnerHandler(leaderSide,
                new BufferedInputStream(leaderSide.getInputStream()), leader);
            handler.start();
            InputArchive ia = BinaryInputArchive.getArchive(followerSide.getInputStream());
            OutputArchive oa = BinaryOutputArchive.getArchive(followerSide.getOutputStream());

            byte[] learnerInfo = new byte[20];
            ByteBufferOutputStream.record2ByteBuffer(new LearnerInfo(1, 0x10000, 0), ByteBuffer.wrap(learnerInfo));
            oa.writeRecord(new QuorumPacket(Leader.FOLLOWERINFO, ZxidUtils.makeZxid(1, 0), learnerInfo, null), null);

            QuorumPacket qp = new QuorumPacket();
            Zab1_0Test.readPacketSkippingPing(ia, qp);
            assertEquals(Leader.LEADERINFO, qp.getType(), "L's answer to FOLLOWERINFO");
            assertEquals(ZxidUtils.makeZxid(2, 0), qp.getZxid(), "L proposes epoch 2");
            assertEquals(UNCOMMITTED_ZXID, leader.zk.getLastProcessedZxid(),
                "L loaded its whole log, the uncommitted proposal included");
            follower.converse(ia, oa, leader);
        } finally {
            leader.shutdown("the test: no follower acknowledged epoch 2");
            leadThread.interrupt();
            leadThread.join(TIMEOUT_MS);
            if (pair != null) {
                pair[0].close();
                pair[1].close();
            }
        }
        assertFalse(leadThread.isAlive(), "lead() did not end within " + TIMEOUT_MS + " ms of shutdown");
        return leader;
    }

    /**
     * L, restarted as a follower, syncs with the leader of epoch 3 (a fake leader driven by the
     * test, which has 0x100000002 and not 0x100000003): FOLLOWERINFO, LEADERINFO(3), ACKEPOCH,
     * TRUNC 0x100000002, NEWLEADER, ACK, UPTODATE, ACK. Returns what L's database holds then.
     */
    private static AfterSync followLeaderOfEpochThree(File scratchDir, File dataDir) throws Exception {
        assertTrue(scratchDir.mkdirs(), "cannot create " + scratchDir);
        QuorumPeer peer = ZabUtils.createQuorumPeer(scratchDir);
        FileTxnSnapLog logFactory = new FileTxnSnapLog(dataDir, dataDir);
        peer.setTxnFactory(logFactory);
        ZKDatabase zkDb = new ZKDatabase(logFactory);
        peer.setZKDatabase(zkDb);
        FollowerZooKeeperServer fzk = new FollowerZooKeeperServer(logFactory, peer, zkDb);

        ServerSocket leaderListener = new ServerSocket(0, 50, InetAddress.getByName("127.0.0.1"));
        leaderListener.setSoTimeout(TIMEOUT_MS);
        QuorumServer leaderServer = new QuorumServer(2, (InetSocketAddress) leaderListener.getLocalSocketAddress());
        Follower follower = new Follower(peer, fzk) {
            @Override
            protected QuorumServer findLeader() {
                return leaderServer;
            }
        };
        peer.follower = follower;
        assertEquals(2, peer.getAcceptedEpoch(), "L's accepted epoch on disk");
        assertEquals(1, peer.getCurrentEpoch(), "L's current epoch on disk");

        Thread followThread = new Thread(() -> {
            try {
                follower.followLeader();
            } catch (InterruptedException e) {
                LOG.info("followLeader() interrupted");
            } catch (Exception e) {
                LOG.warn("followLeader() failed", e);
            }
        }, "FollowThread");
        Socket toFollower = null;
        try {
            followThread.start();
            toFollower = leaderListener.accept();
            toFollower.setSoTimeout(TIMEOUT_MS);
            InputArchive ia = BinaryInputArchive.getArchive(toFollower.getInputStream());
            OutputArchive oa = BinaryOutputArchive.getArchive(toFollower.getOutputStream());

            QuorumPacket qp = new QuorumPacket();
            Zab1_0Test.readPacketSkippingPing(ia, qp);
            assertEquals(Leader.FOLLOWERINFO, qp.getType(), "L's first packet to the leader of epoch 3");

            byte[] protocol = new byte[4];
            ByteBuffer.wrap(protocol).putInt(0x10000);
            oa.writeRecord(new QuorumPacket(Leader.LEADERINFO, ZxidUtils.makeZxid(3, 0), protocol, null), null);

            Zab1_0Test.readPacketSkippingPing(ia, qp);
            assertEquals(Leader.ACKEPOCH, qp.getType(), "L's answer to LEADERINFO");
            assertEquals(UNCOMMITTED_ZXID, qp.getZxid(), "L's last logged zxid");

            // The leader of epoch 3 has 0x100000002 last: L must drop 0x100000003.
            oa.writeRecord(new QuorumPacket(Leader.TRUNC, LAST_COMMITTED_ZXID, null, null), null);
            oa.writeRecord(new QuorumPacket(Leader.NEWLEADER, ZxidUtils.makeZxid(3, 0), null, null), null);
            oa.writeRecord(new QuorumPacket(Leader.UPTODATE, 0, null, null), null);

            Zab1_0Test.readPacketSkippingPing(ia, qp);
            assertEquals(Leader.ACK, qp.getType(), "L's ACK of NEWLEADER");
            assertEquals(ZxidUtils.makeZxid(3, 0), qp.getZxid(), "L's ACK of NEWLEADER");
            Zab1_0Test.readPacketSkippingPing(ia, qp);
            assertEquals(Leader.ACK, qp.getType(), "L's ACK of UPTODATE");
            assertEquals(3, peer.getCurrentEpoch(), "L's current epoch after the sync");

            ZKDatabase db = fzk.getZKDatabase();
            return new AfterSync(db.getDataTreeLastProcessedZxid(), db.getNode(COMMITTED_2) != null,
                db.getNode(UNCOMMITTED) != null);
        } finally {
            follower.shutdown();
            followThread.interrupt();
            followThread.join(TIMEOUT_MS);
            if (toFollower != null) {
                toFollower.close();
            }
            leaderListener.close();
            peer.shutdown();
            assertFalse(followThread.isAlive(), "followLeader() did not end within " + TIMEOUT_MS + " ms");
        }
    }

    /** What L's database holds once the sync with the leader of epoch 3 is over. */
    private static final class AfterSync {

        final long lastProcessedZxid;
        final boolean hasCommitted;
        final boolean hasUncommitted;

        AfterSync(long lastProcessedZxid, boolean hasCommitted, boolean hasUncommitted) {
            this.lastProcessedZxid = lastProcessedZxid;
            this.hasCommitted = hasCommitted;
            this.hasUncommitted = hasUncommitted;
        }

    }

    private static String listSnapshots(File snapDir) {
        String[] names = snapDir.list((dir, name) -> name.startsWith("snapshot."));
        if (names == null) {
            return "[]";
        }
        Arrays.sort(names);
        return Arrays.toString(names);
    }

}
