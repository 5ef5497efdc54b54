import java.lang.management.GarbageCollectorMXBean;
import java.lang.management.ManagementFactory;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;

/**
 * A fixed amount of work in one of three allocation patterns, for the JVM garbage
 * collection trace (benches/traces/record_jvm_gc.py, docs/traces.md). It prints one JSON
 * object: the workload's wall and CPU seconds (every thread of the process: the
 * collector's too), the collectors' count and time, and the peak resident memory.
 *
 * Usage: java [GC options] -cp CLASSES GcWorkload PATTERN SEED [WORK], WORK the fraction
 * of the work done (1 unless given; smoke tests run less).
 *
 *   requests: a service answering requests; each builds a few short-lived objects
 *             (a parsed request, a response of 1-8 KiB) beside a live set of 16 MiB
 *             sessions that is replaced slowly: the young generation's work.
 *   cache:    an in-memory cache of 96 MiB (8 KiB entries) whose entries are replaced
 *             at random, the old ones garbage once evicted: objects live long enough
 *             to be promoted, then die, which the old generation pays for.
 *   batch:    a batch job reading records into buffers of 0.25-2 MiB and reducing them,
 *             a few buffers alive at a time: large, short-lived arrays.
 */
public final class GcWorkload {
    static long checksum = 0;

    public static void main(String[] args) throws Exception {
        String pattern = args[0];
        long seed = Long.parseLong(args[1]);
        double work = args.length > 2 ? Double.parseDouble(args[2]) : 1.0;
        Random random = new Random(seed);
        // Warm-up: the JIT compiles the loop before the measured part.
        run(pattern, random, 0.1 * work);
        long wall = System.nanoTime();
        long cpu = processCpuNanos();
        long[] gcBefore = collections();
        run(pattern, random, work);
        long[] gcAfter = collections();
        double cpuSeconds = (processCpuNanos() - cpu) / 1e9;
        double wallSeconds = (System.nanoTime() - wall) / 1e9;
        System.out.printf(
                "{\"wall_seconds\": %.6f, \"cpu_seconds\": %.6f, \"gc_count\": %d,"
                        + " \"gc_seconds\": %.6f, \"peak_rss_mib\": %.2f, \"checksum\": %d}%n",
                wallSeconds, cpuSeconds, gcAfter[0] - gcBefore[0],
                (gcAfter[1] - gcBefore[1]) / 1e3, peakRssMib(), checksum);
    }

    static void run(String pattern, Random random, double scale) {
        switch (pattern) {
            case "requests" -> requests(random, (int) (1_000_000 * scale));
            case "cache" -> cache(random, (int) (300_000 * scale));
            case "batch" -> batch(random, (int) (2_000 * scale));
            default -> throw new IllegalArgumentException("unknown pattern " + pattern);
        }
    }

    static void requests(Random random, int count) {
        Object[] sessions = new Object[2048];
        for (int i = 0; i < sessions.length; i++) {
            sessions[i] = new byte[8192];
        }
        for (int i = 0; i < count; i++) {
            Map<String, String> request = new HashMap<>();
            request.put("path", "/items/" + random.nextInt(100_000));
            request.put("user", Integer.toString(random.nextInt(sessions.length)));
            byte[] response = new byte[1024 + random.nextInt(7 * 1024)];
            response[random.nextInt(response.length)] = (byte) i;
            checksum += response.length + request.get("path").length();
            if (i % 64 == 0) {
                sessions[random.nextInt(sessions.length)] = new byte[8192];
            }
        }
    }

    static void cache(Random random, int count) {
        int entries = 96 * 1024 / 8;
        byte[][] cache = new byte[entries][];
        for (int i = 0; i < entries; i++) {
            cache[i] = new byte[8192];
        }
        for (int i = 0; i < count; i++) {
            int slot = random.nextInt(entries);
            if (random.nextInt(4) == 0) {
                cache[slot] = new byte[8192];
                cache[slot][0] = (byte) i;
            }
            checksum += cache[slot][random.nextInt(8192)];
            checksum += new StringBuilder("k").append(slot).length();
        }
    }

    static void batch(Random random, int count) {
        List<long[]> inFlight = new ArrayList<>();
        for (int i = 0; i < count; i++) {
            long[] buffer = new long[(32 + random.nextInt(224)) * 1024];
            for (int j = 0; j < buffer.length; j += 64) {
                buffer[j] = random.nextLong();
            }
            inFlight.add(buffer);
            if (inFlight.size() > 4) {
                long[] done = inFlight.remove(0);
                long sum = 0;
                for (int j = 0; j < done.length; j += 64) {
                    sum += done[j];
                }
                checksum += sum;
            }
        }
    }

    static long processCpuNanos() {
        return ((com.sun.management.OperatingSystemMXBean)
                        ManagementFactory.getOperatingSystemMXBean())
                .getProcessCpuTime();
    }

    /** Collections so far and their time in milliseconds, over every collector. */
    static long[] collections() {
        long count = 0, millis = 0;
        for (GarbageCollectorMXBean gc : ManagementFactory.getGarbageCollectorMXBeans()) {
            count += Math.max(0, gc.getCollectionCount());
            millis += Math.max(0, gc.getCollectionTime());
        }
        return new long[] {count, millis};
    }

    static double peakRssMib() throws Exception {
        for (String line : Files.readAllLines(Path.of("/proc/self/status"))) {
            if (line.startsWith("VmHWM:")) {
                return Long.parseLong(line.replaceAll("[^0-9]", "")) / 1024.0;
            }
        }
        throw new IllegalStateException("no VmHWM in /proc/self/status");
    }
}
