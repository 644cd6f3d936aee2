package bkconform.probe;

import java.util.concurrent.ExecutionException;
import org.apache.bookkeeper.client.BKException;

/** The lifecycle probe: quick calls, a hanging call, exceptions, and a JVM exit. */
public class Probe {
    public int add(int a, int b) {
        return a + b;
    }

    public byte[] reversed(byte[] data) {
        byte[] out = new byte[data.length];
        for (int i = 0; i < data.length; i++) {
            out[i] = data[data.length - 1 - i];
        }
        return out;
    }

    public void hang() throws InterruptedException {
        Thread.sleep(600_000L);
    }

    public void fenced() throws BKException {
        throw new BKException.BKLedgerFencedException();
    }

    public void unknownCode() throws BKException {
        throw new BKException.BKOddException();
    }

    public void wrapped() throws ExecutionException {
        throw new ExecutionException(new BKException.BKNoSuchLedgerExistsException());
    }

    public void illegal() {
        throw new IllegalStateException("probe refuses");
    }

    public void exit() {
        Runtime.getRuntime().halt(3);
    }
}
