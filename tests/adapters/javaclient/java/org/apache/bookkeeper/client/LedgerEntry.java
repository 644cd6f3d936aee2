package org.apache.bookkeeper.client;

/** A stand-in for BookKeeper's LedgerEntry. */
public class LedgerEntry {
    private final long entryId;
    private final byte[] data;

    LedgerEntry(long entryId, byte[] data) {
        this.entryId = entryId;
        this.data = data;
    }

    public long getEntryId() {
        return entryId;
    }

    public byte[] getEntry() {
        return data;
    }
}
