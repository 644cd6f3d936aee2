package org.apache.bookkeeper.client;

import java.util.Enumeration;
import java.util.Vector;

/** A stand-in for BookKeeper's LedgerHandle over the in-memory ledgers of BookKeeper. */
public class LedgerHandle {
    private final BookKeeper.Ledger ledger;
    private final boolean writer;
    private boolean closed;

    LedgerHandle(BookKeeper.Ledger ledger, boolean writer) {
        this.ledger = ledger;
        this.writer = writer;
    }

    public long getId() {
        return ledger.id;
    }

    public synchronized long addEntry(byte[] data) throws BKException {
        if (ledger.fenced) {
            throw new BKException.BKLedgerFencedException();
        }
        if (closed || !writer || ledger.closed) {
            throw new BKException.BKLedgerClosedException();
        }
        ledger.entries.add(data.clone());
        return ledger.entries.size() - 1;
    }

    public Enumeration<LedgerEntry> readEntries(long first, long last) throws BKException {
        if (first < 0 || last >= ledger.entries.size() || first > last) {
            throw new BKException.BKReadException();
        }
        Vector<LedgerEntry> found = new Vector<>();
        for (long id = first; id <= last; id++) {
            found.add(new LedgerEntry(id, ledger.entries.get((int) id)));
        }
        return found.elements();
    }

    public long readLastConfirmed() {
        return ledger.entries.size() - 1;
    }

    public long getLastAddConfirmed() {
        return ledger.entries.size() - 1;
    }

    public boolean isClosed() {
        return closed || ledger.closed;
    }

    public void close() {
        closed = true;
        if (writer) {
            ledger.closed = true;
        }
    }
}
