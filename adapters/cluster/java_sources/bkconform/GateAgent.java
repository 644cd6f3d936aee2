package bkconform;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStreamWriter;
import java.io.Writer;
import java.lang.instrument.Instrumentation;
import java.lang.reflect.Field;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import net.bytebuddy.agent.builder.AgentBuilder;
import net.bytebuddy.asm.Advice;
import net.bytebuddy.description.method.MethodDescription;
import net.bytebuddy.description.type.TypeDescription;
import net.bytebuddy.dynamic.DynamicType;
import net.bytebuddy.matcher.ElementMatcher;
import net.bytebuddy.matcher.ElementMatchers;
import net.bytebuddy.utility.JavaModule;

/**
 * The gate agent (bkconform, adapters/cluster/gate_agent.py): loaded into a bookie's JVM with
 * {@code -javaagent:gate-agent.jar=port=P,hold-limit-ms=L}, it can stop a thread at the entry or
 * the exit of the methods where a request's handling meets the bookie's shared state, until the
 * harness releases it.
 *
 * <p>The harness drives it over one TCP connection to 127.0.0.1:P, a line protocol
 * (docs/adapters/gates.md):
 * <pre>
 *   agent:   HELLO bkconform-gates 1 hold-limit-ms=L          on connecting
 *   harness: ARM point entry|exit ledger|* count   agent: OK ARMED gate
 *            RELEASE hold                                 OK RELEASED hold
 *            RELEASE-ALL                                  OK RELEASED-ALL n
 *            DISARM gate                                  OK DISARMED gate released=n
 *            POINTS                                       OK POINTS name=state ...
 *            (anything wrong)                             ERR why
 *   agent, at any time:
 *            HELD hold=H gate=G point=P at=entry|exit ledger=N|- entry=N|- thread=NAME
 *            EXPIRED hold=H gate=G after-ms=L thread=NAME
 * </pre>
 *
 * <p>No hold outlives its bound: a held thread goes on by itself after the hold limit and the
 * agent says so (EXPIRED), and when the harness's connection ends every gate is disarmed and
 * every held thread released, so a harness that dies never leaves a bookie stuck. With no gate
 * armed the instrumented methods do what they did (one volatile read more per call).
 */
public final class GateAgent {

    private GateAgent() {
    }

    /** Where a point's ledger id comes from. */
    enum LedgerFrom { FIRST_LONG_ARGUMENT, LEDGER_ID_FIELD }

    /** Where a point's entry id comes from, when it has one. */
    enum EntryFrom { NONE, FIRST_LONG_ARGUMENT, SECOND_LONG_ARGUMENT, ENTRY_BUFFER }

    /** One method of BookKeeper a gate can stop at; its name is {@code Class.method}. */
    static final class Point {
        final String name;
        final String className;
        final String method;
        /** Only the overload whose first parameter is a long (Journal.logAddEntry has two, one
         * calling the other: a gate on both would hold one add twice). */
        final boolean firstParameterLong;
        final LedgerFrom ledgerFrom;
        final EntryFrom entryFrom;
        /** pending (class not loaded yet), installed, missing (no such method), error. */
        volatile String state = "pending";

        Point(String className, String method, boolean firstParameterLong, LedgerFrom ledgerFrom,
              EntryFrom entryFrom) {
            this.name = className.substring(className.lastIndexOf('.') + 1) + "." + method;
            this.className = className;
            this.method = method;
            this.firstParameterLong = firstParameterLong;
            this.ledgerFrom = ledgerFrom;
            this.entryFrom = entryFrom;
        }

        ElementMatcher.Junction<MethodDescription> matcher() {
            ElementMatcher.Junction<MethodDescription> named =
                ElementMatchers.<MethodDescription>named(method)
                    .and(ElementMatchers.not(ElementMatchers.isAbstract()));
            return firstParameterLong ? named.and(ElementMatchers.takesArgument(0, long.class)) : named;
        }
    }

    private static final String BOOKIE = "org.apache.bookkeeper.bookie.";

    /** The points, as in BookKeeper 4.17.3 and 4.18.0 (docs/adapters/gates.md says what each is). */
    static final Point[] POINTS = {
        new Point(BOOKIE + "HandleFactoryImpl", "getHandle", false,
            LedgerFrom.FIRST_LONG_ARGUMENT, EntryFrom.NONE),
        new Point(BOOKIE + "LedgerDescriptorImpl", "isFenced", false,
            LedgerFrom.LEDGER_ID_FIELD, EntryFrom.NONE),
        new Point(BOOKIE + "LedgerDescriptorImpl", "setFenced", false,
            LedgerFrom.LEDGER_ID_FIELD, EntryFrom.NONE),
        new Point(BOOKIE + "LedgerDescriptorImpl", "fenceAndLogInJournal", false,
            LedgerFrom.LEDGER_ID_FIELD, EntryFrom.NONE),
        new Point(BOOKIE + "LedgerDescriptorImpl", "addEntry", false,
            LedgerFrom.LEDGER_ID_FIELD, EntryFrom.ENTRY_BUFFER),
        new Point(BOOKIE + "LedgerDescriptorImpl", "setExplicitLac", false,
            LedgerFrom.LEDGER_ID_FIELD, EntryFrom.NONE),
        new Point(BOOKIE + "LedgerDescriptorImpl", "readEntry", false,
            LedgerFrom.LEDGER_ID_FIELD, EntryFrom.FIRST_LONG_ARGUMENT),
        new Point(BOOKIE + "Journal", "logAddEntry", true,
            LedgerFrom.FIRST_LONG_ARGUMENT, EntryFrom.SECOND_LONG_ARGUMENT),
        new Point(BOOKIE + "BookieImpl", "fenceLedger", false,
            LedgerFrom.FIRST_LONG_ARGUMENT, EntryFrom.NONE),
        new Point(BOOKIE + "BookieImpl", "readEntry", false,
            LedgerFrom.FIRST_LONG_ARGUMENT, EntryFrom.SECOND_LONG_ARGUMENT),
    };

    // The agent ---------------------------------------------------------------------------------

    public static void premain(String arguments, Instrumentation instrumentation) throws IOException {
        Map<String, String> options = parseOptions(arguments);
        String port = options.get("port");
        if (port == null) {
            throw new IllegalArgumentException(
                "bkconform gate agent: no port (-javaagent:gate-agent.jar=port=P)");
        }
        Gates.holdLimitMs = Long.parseLong(options.getOrDefault("hold-limit-ms", "30000"));
        // Bound before the bookie starts: once the bookie answers, the harness can connect.
        ServerSocket server = new ServerSocket();
        server.setReuseAddress(true);
        server.bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), Integer.parseInt(port)));
        Thread accepting = new Thread(() -> Gates.serve(server), "bkconform-gates");
        accepting.setDaemon(true);
        accepting.start();
        instrument(instrumentation);
        log("listening on 127.0.0.1:" + port + ", hold limit " + Gates.holdLimitMs + " ms");
    }

    static Map<String, String> parseOptions(String arguments) {
        Map<String, String> options = new LinkedHashMap<>();
        if (arguments == null || arguments.isEmpty()) {
            return options;
        }
        for (String pair : arguments.split(",")) {
            int equals = pair.indexOf('=');
            if (equals < 0) {
                throw new IllegalArgumentException("bkconform gate agent: bad option " + pair);
            }
            options.put(pair.substring(0, equals).trim(), pair.substring(equals + 1).trim());
        }
        return options;
    }

    private static void instrument(Instrumentation instrumentation) {
        Set<String> classes = new LinkedHashSet<>();
        for (Point point : POINTS) {
            classes.add(point.className);
        }
        AgentBuilder builder = new AgentBuilder.Default()
            .disableClassFormatChanges()
            .with(new AgentBuilder.Listener.Adapter() {
                @Override
                public void onError(String typeName, ClassLoader loader, JavaModule module,
                                    boolean loaded, Throwable error) {
                    for (Point point : POINTS) {
                        if (point.className.equals(typeName)) {
                            point.state = "error";
                        }
                    }
                    log("cannot instrument " + typeName + ": " + error);
                }
            });
        for (String className : classes) {
            builder = builder.type(ElementMatchers.named(className)).transform(
                (DynamicType.Builder<?> type, TypeDescription description, ClassLoader loader,
                 JavaModule module, java.security.ProtectionDomain domain) -> {
                    DynamicType.Builder<?> changed = type;
                    for (Point point : POINTS) {
                        if (!point.className.equals(className)) {
                            continue;
                        }
                        boolean present = !description.getDeclaredMethods()
                            .filter(point.matcher()).isEmpty();
                        point.state = present ? "installed" : "missing";
                        if (present) {
                            changed = changed.visit(Advice.to(GateAdvice.class).on(point.matcher()));
                        } else {
                            log("no method " + point.name + " in this BookKeeper: that point never holds");
                        }
                    }
                    return changed;
                });
        }
        builder.installOn(instrumentation);
    }

    static void log(String message) {
        System.err.println("bkconform gate agent: " + message);
        System.err.flush();
    }

    /** Inlined at each point's entry and exit: the fast path is one volatile read. Whatever the
     * agent itself throws is suppressed: a fault of the harness must not become the bookie's. */
    public static final class GateAdvice {
        private GateAdvice() {
        }

        @Advice.OnMethodEnter(suppress = Throwable.class)
        static void enter(@Advice.Origin("#t.#m") String origin,
                          @Advice.This(optional = true) Object self,
                          @Advice.AllArguments Object[] arguments) {
            if (Gates.armed > 0) {
                Gates.pass(origin, true, self, arguments);
            }
        }

        @Advice.OnMethodExit(onThrowable = Throwable.class, suppress = Throwable.class)
        static void exit(@Advice.Origin("#t.#m") String origin,
                         @Advice.This(optional = true) Object self,
                         @Advice.AllArguments Object[] arguments) {
            if (Gates.armed > 0) {
                Gates.pass(origin, false, self, arguments);
            }
        }
    }

    /** An armed gate: a point, entry or exit, a ledger (or any), how many threads it still holds. */
    static final class Gate {
        final long id;
        final Point point;
        final boolean atEntry;
        final Long ledger;
        int remaining;

        Gate(long id, Point point, boolean atEntry, Long ledger, int remaining) {
            this.id = id;
            this.point = point;
            this.atEntry = atEntry;
            this.ledger = ledger;
            this.remaining = remaining;
        }
    }

    /** A thread held at a gate, until released or its hold limit. */
    static final class Hold {
        final long id;
        final Gate gate;
        final String thread;
        final CountDownLatch released = new CountDownLatch(1);

        Hold(long id, Gate gate, String thread) {
            this.id = id;
            this.gate = gate;
            this.thread = thread;
        }
    }

    /** The gates, the holds and the harness's connection; every change under {@link #LOCK}. */
    public static final class Gates {
        /** How many gates are armed: read on every call of a point, so volatile and first. */
        public static volatile int armed;
        static volatile long holdLimitMs = 30000;
        private static final Object LOCK = new Object();
        private static final List<Gate> GATES = new ArrayList<>();
        private static final Map<Long, Hold> HOLDS = new LinkedHashMap<>();
        private static final Map<String, Point> BY_ORIGIN = new ConcurrentHashMap<>();
        private static final Map<String, Point> BY_NAME = new LinkedHashMap<>();
        private static final Map<Class<?>, Field> LEDGER_FIELDS = new ConcurrentHashMap<>();
        private static long nextGate = 1;
        private static long nextHold = 1;
        private static Writer harness;

        static {
            for (Point point : POINTS) {
                BY_ORIGIN.put(point.className + "." + point.method, point);
                BY_NAME.put(point.name, point);
            }
        }

        private Gates() {
        }

        /** A thread at a point with a gate armed somewhere: held if a gate matches it. */
        public static void pass(String origin, boolean atEntry, Object self, Object[] arguments) {
            Point point = BY_ORIGIN.get(origin);
            if (point == null) {
                return;
            }
            Hold hold = null;
            Long ledger = null;
            synchronized (LOCK) {
                for (Gate gate : GATES) {
                    if (gate.point != point || gate.atEntry != atEntry || gate.remaining == 0) {
                        continue;
                    }
                    if (ledger == null) {
                        ledger = ledgerOf(point, self, arguments);
                    }
                    if (gate.ledger != null && !gate.ledger.equals(ledger)) {
                        continue;
                    }
                    gate.remaining--;
                    hold = new Hold(nextHold++, gate, Thread.currentThread().getName());
                    HOLDS.put(hold.id, hold);
                    // Told under the lock that registered it: the harness hears of a hold
                    // before any answer of a command that released it (RELEASE-ALL, DISARM).
                    send("HELD hold=" + hold.id + " gate=" + gate.id + " point=" + point.name
                        + " at=" + (atEntry ? "entry" : "exit") + " ledger=" + text(ledger)
                        + " entry=" + text(entryOf(point, arguments)) + " thread=" + hold.thread);
                    break;
                }
            }
            if (hold != null) {
                wait(hold, ledger);
            }
        }

        private static void wait(Hold hold, Long ledger) {
            Gate gate = hold.gate;
            log("holding " + hold.thread + " at the " + (gate.atEntry ? "entry" : "exit") + " of "
                + gate.point.name + " (ledger " + text(ledger) + ", hold " + hold.id + ")");
            boolean released;
            try {
                released = hold.released.await(holdLimitMs, TimeUnit.MILLISECONDS);
            } catch (InterruptedException interrupted) {
                Thread.currentThread().interrupt();  // the thread's owner asked it to stop: let it
                released = false;
            }
            if (released) {
                return;
            }
            synchronized (LOCK) {
                if (HOLDS.remove(hold.id) == null) {
                    return;  // released by the harness just as the limit passed
                }
            }
            send("EXPIRED hold=" + hold.id + " gate=" + gate.id + " after-ms=" + holdLimitMs
                + " thread=" + hold.thread);
            log("hold " + hold.id + " of " + hold.thread + " expired after " + holdLimitMs
                + " ms: the thread goes on (a harness error)");
        }

        private static String text(Long value) {
            return value == null ? "-" : value.toString();
        }

        private static Long ledgerOf(Point point, Object self, Object[] arguments) {
            if (point.ledgerFrom == LedgerFrom.FIRST_LONG_ARGUMENT) {
                return nthLong(arguments, 0);
            }
            if (self == null) {
                return null;
            }
            try {
                Field field = LEDGER_FIELDS.computeIfAbsent(self.getClass(), type -> {
                    try {
                        Field found = type.getDeclaredField("ledgerId");
                        found.setAccessible(true);
                        return found;
                    } catch (ReflectiveOperationException | RuntimeException missing) {
                        return null;
                    }
                });
                return field == null ? null : field.getLong(self);
            } catch (ReflectiveOperationException | RuntimeException unreadable) {
                return null;
            }
        }

        private static Long entryOf(Point point, Object[] arguments) {
            switch (point.entryFrom) {
                case FIRST_LONG_ARGUMENT:
                    return nthLong(arguments, 0);
                case SECOND_LONG_ARGUMENT:
                    return nthLong(arguments, 1);
                case ENTRY_BUFFER:
                    return entryOfBuffer(arguments.length > 0 ? arguments[0] : null);
                default:
                    return null;
            }
        }

        private static Long nthLong(Object[] arguments, int n) {
            int seen = 0;
            for (Object argument : arguments) {
                if (argument instanceof Long) {
                    if (seen == n) {
                        return (Long) argument;
                    }
                    seen++;
                }
            }
            return null;
        }

        /** An entry's id is its header's second long (ledger id, entry id, ...), read through
         * Netty's ByteBuf by reflection: the agent is compiled against ByteBuddy alone. */
        private static Long entryOfBuffer(Object buffer) {
            if (buffer == null) {
                return null;
            }
            try {
                Class<?> byteBuf = Class.forName(
                    "io.netty.buffer.ByteBuf", false, buffer.getClass().getClassLoader());
                int readerIndex = (Integer) byteBuf.getMethod("readerIndex").invoke(buffer);
                return (Long) byteBuf.getMethod("getLong", int.class).invoke(buffer, readerIndex + 8);
            } catch (ReflectiveOperationException | RuntimeException unreadable) {
                return null;
            }
        }

        private static void send(String line) {
            Writer out;
            synchronized (LOCK) {
                out = harness;
            }
            if (out == null) {
                return;
            }
            try {
                synchronized (out) {
                    out.write(line + "\n");
                    out.flush();
                }
            } catch (IOException gone) {
                // The connection's reader sees it end too, and releases everything then.
            }
        }

        static void serve(ServerSocket server) {
            while (true) {
                Socket socket;
                try {
                    socket = server.accept();
                } catch (IOException closed) {
                    return;
                }
                boolean busy;
                synchronized (LOCK) {
                    busy = harness != null;
                }
                if (busy) {
                    // One harness at a time: a second one is told so at once rather than left
                    // waiting for a greeting until the first one goes.
                    refuse(socket, "ERR busy: another harness is connected to this agent");
                    continue;
                }
                Writer out;
                try {
                    out = new OutputStreamWriter(socket.getOutputStream(), StandardCharsets.UTF_8);
                } catch (IOException failed) {
                    closeQuietly(socket);
                    continue;
                }
                synchronized (LOCK) {
                    harness = out;
                }
                Thread serving = new Thread(() -> serveOne(socket, out), "bkconform-gates-harness");
                serving.setDaemon(true);
                serving.start();
            }
        }

        private static void refuse(Socket socket, String line) {
            try {
                socket.getOutputStream().write((line + "\n").getBytes(StandardCharsets.UTF_8));
                socket.getOutputStream().flush();
            } catch (IOException gone) {
                // it left already
            }
            closeQuietly(socket);
        }

        private static void closeQuietly(Socket socket) {
            try {
                socket.close();
            } catch (IOException ignored) {
                // closing a socket that already failed
            }
        }

        private static void serveOne(Socket socket, Writer out) {
            try {
                converse(socket, out);
            } catch (IOException ended) {
                // The harness went away: the finally below makes sure nothing stays held.
            } finally {
                int released = disconnect();
                closeQuietly(socket);
                if (released > 0) {
                    log("the harness disconnected: released " + released + " held threads");
                }
            }
        }

        private static void converse(Socket socket, Writer out) throws IOException {
            socket.setTcpNoDelay(true);
            BufferedReader in = new BufferedReader(
                new InputStreamReader(socket.getInputStream(), StandardCharsets.UTF_8));
            send("HELLO bkconform-gates 1 hold-limit-ms=" + holdLimitMs);
            String line;
            while ((line = in.readLine()) != null) {
                String answer;
                try {
                    answer = answer(line.trim());
                } catch (RuntimeException bad) {
                    answer = "ERR " + bad.getMessage();
                }
                send(answer);
            }
        }

        /** Disarm every gate and release every held thread; how many were released. */
        private static int disconnect() {
            synchronized (LOCK) {
                harness = null;
                GATES.clear();
                armed = 0;
                int released = HOLDS.size();
                for (Hold hold : HOLDS.values()) {
                    hold.released.countDown();
                }
                HOLDS.clear();
                return released;
            }
        }

        static String answer(String line) {
            String[] words = line.isEmpty() ? new String[0] : line.split("\\s+");
            if (words.length == 0) {
                return "ERR empty command";
            }
            switch (words[0]) {
                case "ARM":
                    expect(words, 5, "ARM point entry|exit ledger|* count");
                    return arm(words[1], words[2], words[3], words[4]);
                case "RELEASE":
                    expect(words, 2, "RELEASE hold");
                    return release(number(words[1], "hold"));
                case "RELEASE-ALL":
                    expect(words, 1, "RELEASE-ALL");
                    return "OK RELEASED-ALL " + releaseWhere(null);
                case "DISARM":
                    expect(words, 2, "DISARM gate");
                    return disarm(number(words[1], "gate"));
                case "POINTS":
                    expect(words, 1, "POINTS");
                    StringBuilder points = new StringBuilder("OK POINTS");
                    for (Point point : POINTS) {
                        points.append(' ').append(point.name).append('=').append(point.state);
                    }
                    return points.toString();
                default:
                    return "ERR unknown command " + words[0]
                        + " (ARM, RELEASE, RELEASE-ALL, DISARM, POINTS)";
            }
        }

        private static void expect(String[] words, int count, String usage) {
            if (words.length != count) {
                throw new IllegalArgumentException("usage: " + usage);
            }
        }

        private static long number(String word, String what) {
            try {
                return Long.parseLong(word);
            } catch (NumberFormatException bad) {
                throw new IllegalArgumentException("not a " + what + " number: " + word);
            }
        }

        private static String arm(String pointName, String at, String ledgerText, String countText) {
            Point point = BY_NAME.get(pointName);
            if (point == null) {
                throw new IllegalArgumentException(
                    "unknown point " + pointName + " (known: " + String.join(" ", BY_NAME.keySet()) + ")");
            }
            if (!at.equals("entry") && !at.equals("exit")) {
                throw new IllegalArgumentException("not entry or exit: " + at);
            }
            Long ledger = ledgerText.equals("*") ? null : number(ledgerText, "ledger");
            long count = number(countText, "count");
            if (count < 1 || count > 1000) {
                throw new IllegalArgumentException("count must be 1 to 1000: " + countText);
            }
            synchronized (LOCK) {
                Gate gate = new Gate(nextGate++, point, at.equals("entry"), ledger, (int) count);
                GATES.add(gate);
                armed = GATES.size();
                return "OK ARMED " + gate.id;
            }
        }

        private static String release(long holdId) {
            synchronized (LOCK) {
                Hold hold = HOLDS.remove(holdId);
                if (hold == null) {
                    throw new IllegalArgumentException(
                        "no thread is held as hold " + holdId + " (released, or expired after "
                        + holdLimitMs + " ms)");
                }
                hold.released.countDown();
                return "OK RELEASED " + holdId;
            }
        }

        /** Release the threads held by ``gate`` (null: by every gate); how many. */
        private static int releaseWhere(Gate gate) {
            synchronized (LOCK) {
                int released = 0;
                for (Iterator<Hold> holds = HOLDS.values().iterator(); holds.hasNext();) {
                    Hold hold = holds.next();
                    if (gate == null || hold.gate == gate) {
                        hold.released.countDown();
                        holds.remove();
                        released++;
                    }
                }
                return released;
            }
        }

        private static String disarm(long gateId) {
            synchronized (LOCK) {
                for (Iterator<Gate> gates = GATES.iterator(); gates.hasNext();) {
                    Gate gate = gates.next();
                    if (gate.id == gateId) {
                        gates.remove();
                        armed = GATES.size();
                        return "OK DISARMED " + gateId + " released=" + releaseWhere(gate);
                    }
                }
            }
            throw new IllegalArgumentException("no gate " + gateId + " is armed");
        }
    }
}
