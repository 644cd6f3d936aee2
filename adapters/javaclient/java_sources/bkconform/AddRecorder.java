package bkconform;

import java.util.Arrays;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.apache.bookkeeper.client.AsyncCallback;
import org.apache.bookkeeper.client.LedgerHandle;

/**
 * A writer's pipelined adds (LedgerHandle.asyncAddEntry) with each callback recorded: its return
 * code, the entry id and when it ran, as System.nanoTime(). On Linux that is CLOCK_MONOTONIC,
 * the clock of Python's time.monotonic(), so the harness can place each acknowledgement among
 * the frames its proxies logged. py4j cannot take a Java callback without a callback server;
 * this class is why it does not need one.
 */
public final class AddRecorder implements AsyncCallback.AddCallback {
    private static final int PENDING = Integer.MIN_VALUE;

    private final int[] codes;
    private final long[] entryIds;
    private final long[] completedAt;
    private final CountDownLatch done;

    public AddRecorder(int count) {
        codes = new int[count];
        entryIds = new long[count];
        completedAt = new long[count];
        Arrays.fill(codes, PENDING);
        done = new CountDownLatch(count);
    }

    /** Sends add number {@code index} (its callback is recorded under that number). */
    public void add(LedgerHandle handle, int index, byte[] data) {
        handle.asyncAddEntry(data, this, Integer.valueOf(index));
    }

    @Override
    public void addComplete(int rc, LedgerHandle handle, long entryId, Object ctx) {
        long now = System.nanoTime();
        int index = (Integer) ctx;
        synchronized (this) {
            if (codes[index] != PENDING) {
                return; // a second callback for one add: keep the first
            }
            codes[index] = rc;
            entryIds[index] = entryId;
            completedAt[index] = now;
        }
        done.countDown();
    }

    /** Waits until every add has had its callback; false if the time ran out first. */
    public boolean awaitAll(long millis) throws InterruptedException {
        return done.await(millis, TimeUnit.MILLISECONDS);
    }

    /** For add {@code index}: whether it completed, its code, entry id and time (ns). */
    public synchronized boolean completed(int index) {
        return codes[index] != PENDING;
    }

    public synchronized int code(int index) {
        return codes[index];
    }

    public synchronized long entryId(int index) {
        return entryIds[index];
    }

    public synchronized long completedAtNanos(int index) {
        return completedAt[index];
    }

    /** System.nanoTime() now: lets the harness check that it shares Python's clock. */
    public static long now() {
        return System.nanoTime();
    }
}
