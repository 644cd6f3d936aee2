package bkconform;

import java.io.BufferedReader;
import java.io.File;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.stream.Stream;
import org.apache.bookkeeper.common.component.LifecycleComponent;
import org.apache.bookkeeper.common.component.LifecycleComponentStack;
import org.apache.bookkeeper.common.component.LifecycleListener;
import org.apache.bookkeeper.conf.ServerConfiguration;
import org.apache.bookkeeper.server.Main;
import org.apache.bookkeeper.server.conf.BookieConfiguration;
import org.apache.bookkeeper.server.service.BookieService;

/**
 * One real BookKeeper bookie in a JVM that can restart it without restarting the JVM.
 *
 * <p>Written by bkconform (adapters/cluster/java_sources/). The bookie is built exactly as
 * {@code org.apache.bookkeeper.server.Main} builds it ({@code Main.buildBookieServer}, the
 * same lifecycle components from the same configuration file); what differs is who owns the
 * JVM. A crash that loses the bookie's disks ("restart-empty" on standard input) closes the
 * bookie's components, deletes its journal, ledger and index directories and builds and starts
 * a new bookie from the configuration: what BookKeeper's own test clusters do to restart a
 * bookie, and what a JVM boot costs (about 1.5 s of the 2 s a process restart takes) is
 * paid once. A real crash (SIGKILL) still kills the whole JVM.
 *
 * <p>A <b>standby</b> ({@code --standby}) boots the JVM and loads the bookie's entry classes,
 * then waits for {@code start} on standard input before it builds the bookie from the
 * configuration file: booted ahead while the bookie it stands by for still runs, it takes over
 * after that bookie's crash without paying for a JVM's boot on the restart's path.
 *
 * <p>Usage: {@code bkconform.BookieHost --conf FILE [--standby]}. Commands, one per line on
 * standard input: {@code restart-empty}; {@code start} (a standby's, once). End of input (the
 * supervisor went away) closes the bookie, if it runs, and exits 0; a failed start or restart
 * exits 3; an uncaught exception in the running bookie's threads
 * closes it and exits 1, as {@code Main} would. Every event is logged to standard output as a
 * line starting with {@code bkconform-bookie-host:}.
 */
public final class BookieHost {
    private static final String TAG = "bkconform-bookie-host: ";
    /** The lifecycle component that serves requests and owns the disks. */
    private static final String SERVER = "bookie-server";
    /** Components closed before the server, in this order (4.17.3's names). */
    private static final String QUIESCE_FIRST = "data-integ,rx-scheduler,bkc";
    /** The data-integrity service's worker threads (4.17.3's name). */
    private static final String INTEGRITY_WORKER = "bookie-data-integ";
    private static final long QUIESCE_TIMEOUT_MS = 10_000;
    /**
     * The host's own key in the bookie's configuration file (BookKeeper ignores keys it does
     * not know): "false" turns off the quiescing of {@link #closeServing}, so that the bookie
     * is closed in BookKeeper's own order. It exists only for the reproducer of the crash that
     * quiescing works around (benchmarks/shutdown_crash.py,
     * docs/findings/bookie-shutdown-sigsegv-4.17.3.md); everything else leaves it unset.
     */
    static final String INTEGRITY_QUIESCE_KEY = "bkconform.host.integrityQuiesce";

    private final File confFile;
    /** Read from the configuration file at each start ({@link #INTEGRITY_QUIESCE_KEY}). */
    private volatile boolean integrityQuiesce = true;
    private LifecycleComponentStack bookie;
    private int generation;
    /** The generation that is up (0: none). Volatile, not locked: the bookie's threads read
     * it while the main thread, holding the lock, may be waiting for them to end. */
    private volatile int running;
    /** The thread starting the current generation's components, until they are started. */
    private Starter starter;

    private BookieHost(File confFile) {
        this.confFile = confFile;
    }

    public static void main(String[] args) {
        boolean standby = args.length == 3 && "--standby".equals(args[2]);
        if (!(args.length == 2 || standby) || !"--conf".equals(args[0])) {
            System.err.println("usage: bkconform.BookieHost --conf FILE [--standby]");
            System.exit(2);
        }
        BookieHost host = new BookieHost(new File(args[1]));
        Runtime.getRuntime().addShutdownHook(new Thread(host::close, "bkconform-host-shutdown"));
        if (standby) {
            host.warmUp();
        } else if (!host.startOrLog()) {
            System.exit(3);
        }
        int code = host.serve();
        System.exit(code);
    }

    /**
     * A standby's preparation: what every start does before it reads the configuration, done
     * ahead (the classes of BookKeeper's entry point, its logging, the configuration's parser).
     * The bookie itself is not built: the bookie this JVM stands by for may still hold the
     * directories and the port.
     */
    private void warmUp() {
        long began = System.nanoTime();
        try {
            Class.forName(Main.class.getName(), true, BookieHost.class.getClassLoader());
            configuration();
        } catch (Exception e) {
            log("standby warm-up failed (the start will do it): " + e);
        }
        log("standby ready after " + millis(began) + " ms: waiting for start");
    }

    private boolean startOrLog() {
        try {
            start();
            return true;
        } catch (Exception e) {
            log("the bookie did not start: " + e);
            e.printStackTrace(System.out);
            return false;
        }
    }

    private int serve() {
        BufferedReader in =
                new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        try {
            String line;
            while ((line = in.readLine()) != null) {
                String command = line.trim();
                if (command.isEmpty()) {
                    continue;
                }
                if ("start".equals(command)) {
                    if (bookieBuilt()) {
                        log("start ignored: the bookie runs");
                    } else if (!startOrLog()) {
                        return 3;
                    }
                    continue;
                }
                if (!"restart-empty".equals(command)) {
                    log("unknown command " + command + " (ignored; the commands are restart-empty"
                            + " and start)");
                    continue;
                }
                if (!bookieBuilt()) {
                    log("restart-empty ignored: a standby's bookie is not started");
                    continue;
                }
                try {
                    restartEmpty();
                } catch (Exception e) {
                    log("restart-empty failed: " + e);
                    e.printStackTrace(System.out);
                    return 3;
                }
            }
        } catch (IOException e) {
            log("standard input failed: " + e);
        }
        log("end of standard input: closing the bookie");
        close();
        return 0;
    }

    private synchronized boolean bookieBuilt() {
        return bookie != null;
    }

    private ServerConfiguration configuration() throws Exception {
        ServerConfiguration conf = new ServerConfiguration();
        conf.loadConf(confFile.toURI().toURL());
        return conf;
    }

    private synchronized void start() throws Exception {
        long began = System.nanoTime();
        LifecycleComponentStack stack = build();
        launch(stack, began);
    }

    private LifecycleComponentStack build() throws Exception {
        ServerConfiguration conf = configuration();
        integrityQuiesce = conf.getBoolean(INTEGRITY_QUIESCE_KEY, true);
        if (!integrityQuiesce) {
            log("integrity quiescing is off (" + INTEGRITY_QUIESCE_KEY + "=false): closing in"
                    + " BookKeeper's order, a running integrity check may outlive the storage");
        }
        return Main.buildBookieServer(new BookieConfiguration(conf));
    }

    private synchronized void launch(LifecycleComponentStack stack, long began) {
        final int current = ++generation;
        // As ComponentStarter does for Main: an uncaught exception in the bookie's threads
        // ends the bookie and the process. Threads of an earlier generation that die while it
        // is closed (its death watcher does) are that generation's business, not a crash.
        Starter next = new Starter(stack, current, began);
        stack.setExceptionHandler((thread, error) -> onUncaught(next, thread, error));
        bookie = stack;
        running = current;
        starter = next;
        next.start();
    }

    /** Thrown on a starter thread to end the start of a generation that is being closed. */
    private static final class Abandoned extends RuntimeException {
        Abandoned() {
            super("the generation is closed before its start ended", null, false, false);
        }
    }

    /**
     * Starts a generation's components on a thread of its own, so that the main thread reads
     * the next command while they start.
     *
     * <p>Why: up to 4.17.x, {@code BookieServer.start} ends with a 250 ms sleep ("fixes test
     * flappers until ISSUE#1400"; removed in 4.18.0 by apache/bookkeeper#4336), after its
     * request server runs and the bookie is registered, and only then are the later components
     * (the data-integrity service) started. A crash that comes during that sleep waited for
     * it. A real bookie killed in those 250 ms never starts its later components either:
     * {@link #abandon} ends the sleep (an interrupt) and no later component starts. It
     * interrupts only there: while the server component starts and the bookie server says it
     * runs; a start at any other point is waited for (on 4.18.0 there is nothing to cut
     * short: a restart waits for the components still starting).
     */
    private final class Starter extends Thread implements LifecycleListener {
        private final LifecycleComponentStack stack;
        private final int of;
        private final long began;
        private BookieService server;
        private boolean serverStarting;
        private boolean abandoned;

        Starter(LifecycleComponentStack stack, int of, long began) {
            super("bkconform-host-start-" + of);
            this.stack = stack;
            this.of = of;
            this.began = began;
            for (int i = 0; i < stack.getNumComponents(); i++) {
                LifecycleComponent component = stack.getComponent(i);
                if (component instanceof BookieService && SERVER.equals(component.getName())) {
                    server = (BookieService) component;
                    server.addLifecycleListener(this);
                }
            }
        }

        @Override
        public void run() {
            try {
                stack.start();
                log("bookie generation " + of + " started in " + millis(began) + " ms");
            } catch (Abandoned e) {
                log("generation " + of + " closed before its start ended (after "
                        + millis(began) + " ms): its later components were not started");
            }
        }

        /** No component starts after this; a bookie server that runs stops waiting. */
        synchronized void abandon() {
            abandoned = true;
            if (serverStarting && server.getServer().isRunning()) {
                interrupt();
            }
        }

        boolean abandoned(Thread thread) {
            synchronized (this) {
                return thread == this && abandoned;
            }
        }

        @Override
        public synchronized void beforeStart() {
            if (abandoned) {
                throw new Abandoned();
            }
            serverStarting = true;
        }

        @Override
        public synchronized void afterStart() {
            serverStarting = false;
            Thread.interrupted(); // an interrupt that came after the sleep ended
            if (abandoned) {
                throw new Abandoned();
            }
        }

        @Override
        public void beforeStop() {}

        @Override
        public void afterStop() {}

        @Override
        public void beforeClose() {}

        @Override
        public void afterClose() {}
    }

    /** Ends the start of the current generation, if it still runs, and waits for it. */
    private void stopStarting() {
        Starter starting = starter;
        starter = null;
        if (starting == null) {
            return;
        }
        starting.abandon();
        try {
            starting.join();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    private void onUncaught(Starter starting, Thread thread, Throwable error) {
        if (starting.abandoned(thread)) {
            // The interrupted sleep: the start ends here, no later component starts.
            throw new Abandoned();
        }
        int of = starting.of;
        if (of != running) {
            log("generation " + of + " thread " + thread.getName() + " ended: " + error);
            return;
        }
        log("uncaught exception in " + thread.getName() + ": " + error);
        error.printStackTrace(System.out);
        System.exit(1);
    }

    private synchronized void restartEmpty() throws Exception {
        long began = System.nanoTime();
        Thread tail = closeServing();
        for (Path dir : dataDirectories(configuration())) {
            wipe(dir);
        }
        log("generation " + generation + " stopped serving and its disks are wiped after "
                + millis(began) + " ms");
        LifecycleComponentStack next;
        try {
            next = build();
        } finally {
            tail.join();
        }
        launch(next, began);
    }

    private static List<Path> dataDirectories(ServerConfiguration conf) {
        List<Path> dirs = new ArrayList<>();
        for (String[] names :
                new String[][] {
                    conf.getJournalDirNames(), conf.getLedgerDirNames(), conf.getIndexDirNames()
                }) {
            if (names == null) {
                continue;
            }
            for (String name : names) {
                dirs.add(Paths.get(name));
            }
        }
        return dirs;
    }

    private static void wipe(Path dir) throws IOException {
        if (Files.exists(dir)) {
            try (Stream<Path> walk = Files.walk(dir)) {
                for (Path path : (Iterable<Path>) walk.sorted(Comparator.reverseOrder())::iterator) {
                    Files.delete(path);
                }
            }
        }
        Files.createDirectories(dir);
    }

    /**
     * Stops the bookie serving and returns a started thread that closes what is left.
     *
     * <p>First the components whose threads reach into the bookie's storage without being
     * owned by the bookie server are closed ({@value #QUIESCE_FIRST}, those present), and the
     * data-integrity worker is given time to end: closing that service cancels its check but
     * does not wait for it, and a check still running when the storage closes calls into a
     * closed RocksDB and takes the JVM down (seen on 4.17.3; a process restart never notices,
     * its JVM is gone anyway). Then the bookie server (the port and the disks) and whatever
     * follows it in the stack. The returned thread closes the components below the server:
     * the ZooKeeper and ledger-manager clients, about 0.1 s, which hold nothing the next bookie
     * needs until it registers. The caller builds the next bookie meanwhile and joins the
     * thread before starting it, so the old session, and with it the old registration, is
     * gone first. Without a component named {@value #SERVER} everything is closed here.
     *
     * <p>With {@link #INTEGRITY_QUIESCE_KEY} false (the crash's reproducer only) nothing is
     * quiesced: the components are closed as {@code LifecycleComponentStack.close} would, the
     * last first, so the data-integrity service is closed just before the bookie server and
     * nothing waits for its check.
     */
    private synchronized Thread closeServing() {
        LifecycleComponentStack stack = bookie;
        final int closing = generation;
        running = 0;
        stopStarting();
        ZooKeeperLingerCutter cutter = new ZooKeeperLingerCutter();
        bookie = null;
        List<LifecycleComponent> below = new ArrayList<>();
        if (stack != null) {
            List<LifecycleComponent> components = new ArrayList<>();
            for (int i = 0; i < stack.getNumComponents(); i++) {
                components.add(stack.getComponent(i));
            }
            if (integrityQuiesce) {
                for (String name : QUIESCE_FIRST.split(",")) {
                    for (LifecycleComponent component : components) {
                        if (name.equals(component.getName())) {
                            component.close();
                        }
                    }
                }
                awaitThreads(INTEGRITY_WORKER, QUIESCE_TIMEOUT_MS);
            }
            int server = -1;
            for (int i = 0; i < components.size(); i++) {
                if (SERVER.equals(components.get(i).getName())) {
                    server = i;
                }
            }
            // Closing a closed component does nothing, so the quiesced ones may come again.
            for (int i = components.size() - 1; i >= Math.max(server, 0); i--) {
                components.get(i).close();
            }
            for (int i = server - 1; i >= 0; i--) {
                below.add(components.get(i));
            }
        }
        Thread tail =
                new Thread(
                        () -> {
                            try {
                                for (LifecycleComponent component : below) {
                                    component.close();
                                }
                            } finally {
                                cutter.close();
                            }
                            if (stack != null) {
                                log("generation " + closing + " closed (" + cutter.cut()
                                        + " ZooKeeper client closing sleeps cut)");
                            }
                        },
                        "bkconform-host-close");
        tail.start();
        return tail;
    }

    /**
     * Ends the 100 ms that ZooKeeper's NIO client sleeps after it closes its socket
     * ({@code ClientCnxnSocketNIO.cleanup}, ZooKeeper 3.4 to 3.9), while a generation closes.
     *
     * <p>Why: the generation's ZooKeeper clients (the data-integrity client's, closed before
     * the server, and the registration's, closed before the next generation registers) each
     * slept there on their way out, on the restart's path: 0.13 s of its 0.24 s on 4.17.3
     * with ZooKeeper 3.9.3. A crash that the restart stands for never closes those clients at
     * all; ZooKeeper itself expects the sleep to be interrupted ("SendThread interrupted during sleep,
     * ignoring"). Only the send threads that exist when the close begins are watched, and one
     * is interrupted only while its stack says it is in that sleep.
     */
    private static final class ZooKeeperLingerCutter implements AutoCloseable {
        private static final String SEND_THREAD = "-SendThread(";
        private static final String NIO_SOCKET = "org.apache.zookeeper.ClientCnxnSocketNIO";
        private final List<Thread> sendThreads = new ArrayList<>();
        private final Thread watcher;
        private volatile boolean closed;
        private int cut;

        ZooKeeperLingerCutter() {
            // The stacks are read on the watcher's thread, one thread at a time.
            for (Thread thread : liveThreads()) {
                if (thread.getName().contains(SEND_THREAD)) {
                    sendThreads.add(thread);
                }
            }
            watcher = new Thread(this::watch, "bkconform-host-linger-cutter");
            watcher.setDaemon(true);
            watcher.start();
        }

        private void watch() {
            while (!closed) {
                for (Thread thread : sendThreads) {
                    if (thread.isAlive() && lingering(thread.getStackTrace())) {
                        thread.interrupt();
                        cut++;
                    }
                }
                try {
                    Thread.sleep(2);
                } catch (InterruptedException e) {
                    return;
                }
            }
        }

        /** In {@code Thread.sleep}, called from {@code ClientCnxnSocketNIO.cleanup}. */
        static boolean lingering(StackTraceElement[] stack) {
            boolean sleeping = false;
            for (int i = 0; i < Math.min(stack.length, 4); i++) {
                StackTraceElement frame = stack[i];
                if ("java.lang.Thread".equals(frame.getClassName())
                        && frame.getMethodName().startsWith("sleep")) {
                    sleeping = true;
                } else if (sleeping) {
                    return NIO_SOCKET.equals(frame.getClassName())
                            && "cleanup".equals(frame.getMethodName());
                }
            }
            return false;
        }

        /** Stops watching. */
        @Override
        public void close() {
            closed = true;
            try {
                watcher.join();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }

        int cut() {
            return cut; // read after close(): the watcher has ended
        }
    }

    /**
     * The JVM's live threads, without their stacks: {@code Thread.getAllStackTraces} would
     * stop every thread for a moment and build every stack, on the restart's path and just
     * before a close that races with the bookie's own threads (the shutdown crash).
     */
    private static List<Thread> liveThreads() {
        ThreadGroup root = Thread.currentThread().getThreadGroup();
        while (root.getParent() != null) {
            root = root.getParent();
        }
        Thread[] threads = new Thread[root.activeCount() * 2 + 16];
        int found = root.enumerate(threads, true);
        List<Thread> live = new ArrayList<>(found);
        for (int i = 0; i < found; i++) {
            live.add(threads[i]);
        }
        return live;
    }

    private static void awaitThreads(String prefix, long timeoutMs) {
        long deadline = System.currentTimeMillis() + timeoutMs;
        for (Thread thread : liveThreads()) {
            if (!thread.getName().startsWith(prefix)) {
                continue;
            }
            long left = deadline - System.currentTimeMillis();
            try {
                if (left > 0) {
                    thread.join(left);
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return;
            }
            if (thread.isAlive()) {
                log("thread " + thread.getName() + " still runs after " + timeoutMs
                        + " ms; closing the storage under it");
            }
        }
    }

    private synchronized void close() {
        Thread tail = closeServing();
        try {
            tail.join();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    private static long millis(long since) {
        return (System.nanoTime() - since) / 1_000_000;
    }

    private static void log(String message) {
        System.out.println(TAG + message);
        System.out.flush();
    }
}
