package org.apache.bookkeeper.client;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.bookkeeper.conf.ClientConfiguration;

/**
 * A stand-in for BookKeeper's client with in-memory ledgers: enough of the API (same names and
 * signatures) to test the Python adapter's calls without a BookKeeper distribution. A recovery
 * open fences and closes the ledger, as the real client does.
 */
public class BookKeeper {
    public enum DigestType { MAC, CRC32, CRC32C, DUMMY }

    static final class Ledger {
        final long id;
        final byte[] password;
        final DigestType digest;
        final List<byte[]> entries = new ArrayList<>();
        volatile boolean fenced;
        volatile boolean closed;

        Ledger(long id, DigestType digest, byte[] password) {
            this.id = id;
            this.digest = digest;
            this.password = password.clone();
        }
    }

    private static final Map<Long, Ledger> LEDGERS = new ConcurrentHashMap<>();
    private static long nextId = 1;
    public static ClientConfiguration lastConfiguration;
    public boolean closed;

    public BookKeeper(ClientConfiguration conf) {
        lastConfiguration = conf;
    }

    public LedgerHandle createLedger(
            int ensemble, int writeQuorum, int ackQuorum, DigestType digest, byte[] password) {
        synchronized (BookKeeper.class) {
            Ledger ledger = new Ledger(nextId++, digest, password);
            LEDGERS.put(ledger.id, ledger);
            return new LedgerHandle(ledger, true);
        }
    }

    private Ledger find(long id, DigestType digest, byte[] password) throws BKException {
        Ledger ledger = LEDGERS.get(id);
        if (ledger == null) {
            throw new BKException.BKNoSuchLedgerExistsException();
        }
        if (!Arrays.equals(ledger.password, password) || ledger.digest != digest) {
            throw new BKException.BKUnauthorizedAccessException();
        }
        return ledger;
    }

    public LedgerHandle openLedger(long id, DigestType digest, byte[] password)
            throws BKException {
        Ledger ledger = find(id, digest, password);
        ledger.fenced = true;
        ledger.closed = true;
        return new LedgerHandle(ledger, false);
    }

    public LedgerHandle openLedgerNoRecovery(long id, DigestType digest, byte[] password)
            throws BKException {
        return new LedgerHandle(find(id, digest, password), false);
    }

    public void close() {
        closed = true;
    }
}
