package org.apache.bookkeeper.client;

/** A stand-in for BookKeeper's BKException (same name and getCode()), for tests without it. */
public abstract class BKException extends Exception {
    private final int code;

    protected BKException(int code, String message) {
        super(message);
        this.code = code;
    }

    public final int getCode() {
        return code;
    }

    public static class BKLedgerFencedException extends BKException {
        public BKLedgerFencedException() {
            super(-101, "Ledger has been fenced off");
        }
    }

    public static class BKNoSuchLedgerExistsException extends BKException {
        public BKNoSuchLedgerExistsException() {
            super(-7, "No such ledger exists");
        }
    }

    public static class BKLedgerClosedException extends BKException {
        public BKLedgerClosedException() {
            super(-11, "Attempt to write to a closed ledger");
        }
    }

    public static class BKUnauthorizedAccessException extends BKException {
        public BKUnauthorizedAccessException() {
            super(-102, "Attempted to access ledger using the wrong password");
        }
    }

    public static class BKReadException extends BKException {
        public BKReadException() {
            super(-1, "Error while reading ledger");
        }
    }

    public static class BKOddException extends BKException {
        public BKOddException() {
            super(-77, "a code the adapter does not list");
        }
    }
}
