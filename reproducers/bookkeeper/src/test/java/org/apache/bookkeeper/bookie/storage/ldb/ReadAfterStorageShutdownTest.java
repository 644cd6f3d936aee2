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
package org.apache.bookkeeper.bookie.storage.ldb;

import static org.junit.Assert.assertTrue;
import static org.junit.Assert.fail;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import java.io.File;
import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.apache.bookkeeper.bookie.BookieImpl;
import org.apache.bookkeeper.bookie.TestBookieImpl;
import org.apache.bookkeeper.conf.ServerConfiguration;
import org.apache.bookkeeper.conf.TestBKConfiguration;
import org.junit.Test;

/**
 * A read of DbLedgerStorage after its shutdown must fail with an IOException, not touch the
 * closed RocksDB.
 *
 * <p>This is what the data-integrity check does when the bookie closes while a full check runs:
 * {@code DataIntegrityService} cancels its scheduled task without waiting for the check, whose
 * continuation (on the rx scheduler's and the BookKeeper client's threads) goes on after
 * {@code DbLedgerStorage.shutdown()} and calls {@code entryExists} ({@code isEntryMissing}:
 * {@code EntryLocationIndex.getLocation}) and {@code getStorageStateFlags}
 * ({@code clearStorageStateFlag}) on the closed {@code KeyValueStorageRocksDB}, whose
 * {@code get} has no closed check: a use after free in native code (SIGSEGV in
 * {@code rocksdb::DBImpl::Get}, or garbage). The calls are made here directly, in order, after
 * the shutdown, in a child JVM (a SIGSEGV would take the test's own JVM with it): the child
 * must end normally having got an IOException raised before any call into the closed
 * RocksDB. On the releases the call goes through: the JVM dies (SIGSEGV), or RocksDB reports
 * an error ("Error in RocksDB get", a RocksDBException) or answers, as the freed memory
 * happens to be; each fails the test.
 */
public class ReadAfterStorageShutdownTest {

    private static final long LEDGER = 1;
    private static final int ENTRIES = 50;
    private static final long CHILD_SECONDS = 120;
    /** Printed by the child when the closed storage refused a read. */
    private static final String REFUSED = "REFUSED ";
    /** Printed by the child when the closed storage answered every read. */
    private static final String ANSWERED = "ANSWERED ";
    /** Printed by the child when a read reached the closed RocksDB, which reported an error. */
    private static final String TOUCHED = "TOUCHED ";

    @Test
    public void testReadAfterShutdownFailsWithoutTouchingTheClosedRocksDb() throws Exception {
        File dir = Files.createTempDirectory("read-after-shutdown").toFile();
        List<String> command = new ArrayList<>();
        command.add(new File(System.getProperty("java.home"), "bin/java").getPath());
        for (String argument : ManagementFactory.getRuntimeMXBean().getInputArguments()) {
            if (argument.startsWith("--add-opens") || argument.startsWith("-D") || argument.startsWith("-X")) {
                command.add(argument);
            }
        }
        command.add("-XX:ErrorFile=" + new File(dir, "hs_err_pid%p.log"));
        command.add("-cp");
        command.add(System.getProperty("java.class.path"));
        command.add(Child.class.getName());
        command.add(dir.getPath());
        Process child = new ProcessBuilder(command).redirectErrorStream(true)
                .redirectOutput(new File(dir, "child.log")).start();
        if (!child.waitFor(CHILD_SECONDS, TimeUnit.SECONDS)) {
            child.destroyForcibly();
            fail("the child JVM did not finish within " + CHILD_SECONDS + " s (log: " + dir + "/child.log)");
        }
        String log = new String(Files.readAllBytes(new File(dir, "child.log").toPath()), StandardCharsets.UTF_8);
        System.out.println("child JVM (exit " + child.exitValue() + "), last lines: "
                + log.substring(Math.max(0, log.length() - 2000)));
        File[] crashes = dir.listFiles((d, name) -> name.startsWith("hs_err_pid"));
        if (crashes != null && crashes.length > 0) {
            String crash = new String(Files.readAllBytes(crashes[0].toPath()), StandardCharsets.UTF_8);
            fail("the JVM died reading DbLedgerStorage after its shutdown (exit " + child.exitValue()
                    + "), problematic frame " + lineAfter(crash, "# Problematic frame:") + "; " + crashes[0]);
        }
        assertTrue("a read after the shutdown reached the closed RocksDB (exit " + child.exitValue() + "): "
                + firstLine(log, TOUCHED) + firstLine(log, ANSWERED) + "; log: " + dir + "/child.log",
                log.contains(REFUSED) && child.exitValue() == 0);
        // Passed: nothing to look at (a failure keeps the directory, its log and hs_err file).
        deleteRecursively(dir);
    }

    private static void deleteRecursively(File file) {
        File[] children = file.listFiles();
        if (children != null) {
            for (File child : children) {
                deleteRecursively(child);
            }
        }
        file.delete();
    }

    private static String lineAfter(String text, String marker) {
        int at = text.indexOf(marker);
        if (at < 0) {
            return "";
        }
        return firstLine(text.substring(at + marker.length()), "#").replaceFirst("^#\\s*", "");
    }

    private static String firstLine(String text, String prefix) {
        int at = text.indexOf(prefix);
        if (at < 0) {
            return "";
        }
        int end = text.indexOf('\n', at + prefix.length() + 1);
        return text.substring(at, end < 0 ? text.length() : end).trim();
    }

    /**
     * The child JVM: a DbLedgerStorage with one ledger of {@link #ENTRIES} entries, flushed, shut
     * down, then read as the data-integrity check reads it.
     */
    public static final class Child {
        public static void main(String[] args) throws Exception {
            File dir = new File(args[0], "bookie");
            File current = BookieImpl.getCurrentDirectory(dir);
            BookieImpl.checkDirectoryStructure(current);
            ServerConfiguration conf = TestBKConfiguration.newServerConfiguration();
            conf.setLedgerStorageClass(DbLedgerStorage.class.getName());
            conf.setLedgerDirNames(new String[] {dir.getPath()});
            conf.setJournalDirName(new File(args[0], "journal").getPath());
            BookieImpl bookie = new TestBookieImpl(conf);
            DbLedgerStorage storage = (DbLedgerStorage) bookie.getLedgerStorage();
            storage.setMasterKey(LEDGER, "key".getBytes(StandardCharsets.UTF_8));
            for (long entry = 0; entry < ENTRIES; entry++) {
                ByteBuf buffer = Unpooled.buffer(128);
                buffer.writeLong(LEDGER);
                buffer.writeLong(entry);
                buffer.writeBytes(("entry-" + entry).getBytes(StandardCharsets.UTF_8));
                storage.addEntry(buffer);
            }
            storage.flush();
            storage.shutdown();
            System.out.println("storage shut down; reading it as the integrity check does");
            try {
                int found = 0;
                for (long entry = 0; entry < ENTRIES; entry++) {
                    if (storage.entryExists(LEDGER, entry)) { // isEntryMissing
                        found++;
                    }
                }
                Object flags = storage.getStorageStateFlags(); // clearStorageStateFlag
                System.out.println(ANSWERED + found + " of " + ENTRIES + " entries found, flags " + flags);
                System.exit(3);
            } catch (IOException e) {
                // Refused before the native call, or the closed database reached (use after free:
                // this time RocksDB's own error, another time a crash or an answer).
                for (Throwable cause = e; cause != null; cause = cause.getCause()) {
                    if (cause instanceof org.rocksdb.RocksDBException) {
                        System.out.println(TOUCHED + e + " caused by " + cause);
                        System.exit(4);
                    }
                }
                System.out.println(REFUSED + e);
                System.exit(0);
            }
        }
    }
}
