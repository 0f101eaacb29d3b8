// HeapCheck: loads an hprof written by dumptohprof with VisualVM's heap library
// (org.graalvm.visualvm.lib.jfluid.heap) and checks it against what readdump
// says about the dump it came from.
//
// usage: java -cp <jfluid-heap.jar>:<classes> HeapCheck FILE.hprof
//          [--histogram FILE]   readdump --histogram output
//          [--class-map FILE]   dumptohprof --class-map output: TYPEID<TAB>CLASS<TAB>COUNT
//          [--threads N] [--frames N]  thread roots and frames (over all threads) expected
//          [--roots KIND=N]... exact count of GC roots of a kind ("Java frame", "JNI global", ...)
//
// Checks: per-class instance counts equal the histogram (types whose objects
// share an hprof class, as all byte[] do, are compared as a group); every
// field and object-array reference resolves (arrays checked on the raw ids);
// every root names an instance; threads have names and their frames.
// Prints PROBLEM: lines and RESULT: OK|FAILED; exit 0 ok, 1 otherwise.
import java.io.*;
import java.nio.file.*;
import java.util.*;
import org.graalvm.visualvm.lib.jfluid.heap.*;

public class HeapCheck {
    static int problems = 0;
    static void problem(String s) { problems++; System.out.println("PROBLEM: " + s); }

    public static void main(String[] args) throws Exception {
        File file = new File(args[0]);
        String histogram = null, classMap = null;
        int threads = -1, frames = -1;
        Map<String, Integer> rootKinds = new TreeMap<>();
        for (int i = 1; i < args.length; i++) {
            switch (args[i]) {
                case "--histogram": histogram = args[++i]; break;
                case "--class-map": classMap = args[++i]; break;
                case "--threads": threads = Integer.parseInt(args[++i]); break;
                case "--frames": frames = Integer.parseInt(args[++i]); break;
                case "--roots": { String a = args[++i]; int eq = a.lastIndexOf('=');
                    rootKinds.put(a.substring(0, eq), Integer.parseInt(a.substring(eq + 1))); break; }
                default: System.err.println("unknown argument " + args[i]); System.exit(2);
            }
        }
        Heap heap = HeapFactory.createHeap(file);
        try {
            check(heap, histogram, classMap, threads, frames, rootKinds);
            checkArrayIds(file, heap);
        } finally {
            for (File f : Objects.requireNonNull(file.getAbsoluteFile().getParentFile().listFiles()))
                if (f.getName().startsWith(file.getName() + ".hwcache")) deleteTree(f);
        }
        System.out.println(problems == 0 ? "RESULT: OK" : "RESULT: FAILED (" + problems + " problems)");
        System.exit(problems == 0 ? 0 : 1);
    }

    static void deleteTree(File f) {
        File[] kids = f.listFiles();
        if (kids != null) for (File k : kids) deleteTree(k);
        f.delete();
    }

    static void check(Heap heap, String histogram, String classMap, int threads, int frames,
                      Map<String, Integer> rootKinds) throws IOException {
        long instances = 0;
        for (JavaClass c : heap.getAllClasses()) instances += c.getInstancesCount();
        System.out.printf("classes %d, instances %d%n", heap.getAllClasses().size(), instances);

        if (histogram != null && classMap != null) checkCounts(heap, histogram, classMap);

        long fields = 0, refs = 0;
        for (Iterator<Instance> it = heap.getAllInstancesIterator(); it.hasNext(); ) {
            Instance o = it.next();
            if (o.getJavaClass() == null) { problem("instance 0x" + Long.toHexString(o.getInstanceId()) + " has no class"); continue; }
            if (o instanceof ObjectArrayInstance || o instanceof PrimitiveArrayInstance) continue;
            for (FieldValue fv : o.getFieldValues()) {
                fields++;
                if (!(fv instanceof ObjectFieldValue)) continue;
                long id = Long.parseLong(fv.getValue());
                if (id == 0) continue;
                refs++;
                if (((ObjectFieldValue) fv).getInstance() == null)
                    problem(o.getJavaClass().getName() + "." + fv.getField().getName() + " of 0x"
                            + Long.toHexString(o.getInstanceId()) + " -> 0x" + Long.toHexString(id) + " does not resolve");
            }
        }
        System.out.printf("instance fields %d, references %d%n", fields, refs);

        Map<String, Integer> kinds = new TreeMap<>();
        List<ThreadObjectGCRoot> threadRoots = new ArrayList<>();
        for (GCRoot r : heap.getGCRoots()) {
            kinds.merge(r.getKind(), 1, Integer::sum);
            if (r.getInstance() == null) problem("GC root of kind " + r.getKind() + " names no instance");
            if (r instanceof ThreadObjectGCRoot) threadRoots.add((ThreadObjectGCRoot) r);
        }
        System.out.println("gc roots " + kinds);
        if (heap.getGCRoots().isEmpty()) problem("no GC roots");
        for (Map.Entry<String, Integer> e : rootKinds.entrySet())
            if (!e.getValue().equals(kinds.getOrDefault(e.getKey(), 0)))
                problem("expected " + e.getValue() + " roots of kind " + e.getKey() + ", got " + kinds.getOrDefault(e.getKey(), 0));
        int frameCount = 0;
        for (ThreadObjectGCRoot r : threadRoots) {
            Instance t = r.getInstance();
            Object name = t == null ? null : t.getValueOfField("name");
            String text = name instanceof Instance ? DetailsString((Instance) name) : null;
            StackTraceElement[] st = r.getStackTrace();
            frameCount += st == null ? 0 : st.length;
            System.out.printf("thread \"%s\" frames %d%s%n", text, st == null ? 0 : st.length,
                    st != null && st.length > 0 ? " top " + st[0] : "");
            if (text == null || text.isEmpty()) problem("thread without a name");
        }
        if (threads >= 0 && threadRoots.size() != threads) problem("expected " + threads + " threads, got " + threadRoots.size());
        if (frames >= 0 && frameCount != frames) problem("expected " + frames + " frames, got " + frameCount);
    }

    // java.lang.String with a char[] value (the layout dumptohprof writes).
    static String DetailsString(Instance s) {
        Object v = s.getValueOfField("value");
        if (!(v instanceof PrimitiveArrayInstance)) return null;
        StringBuilder b = new StringBuilder();
        for (Object c : ((PrimitiveArrayInstance) v).getValues()) b.append(c);
        return b.toString();
    }

    // Types that share an hprof class are compared together: the groups are the
    // connected parts of the type <-> class graph of the class map.
    static void checkCounts(Heap heap, String histogramFile, String classMapFile) throws IOException {
        Map<String, Long> histogram = new HashMap<>();   // type id -> count (readdump)
        for (String line : Files.readAllLines(Paths.get(histogramFile))) {
            String[] f = line.trim().split("\\s+");
            if (f.length >= 4 && f[0].matches("\\d+") && f[2].startsWith("0x")) histogram.merge(f[2], Long.parseLong(f[0]), Long::sum);
        }
        Map<String, String> parent = new HashMap<>();
        List<String[]> map = new ArrayList<>();
        for (String line : Files.readAllLines(Paths.get(classMapFile))) {
            String[] f = line.split("\t");
            if (f.length != 3) { problem("bad class map line: " + line); continue; }
            map.add(f);
            union(parent, "type " + f[0], "class " + f[1]);
        }
        for (String type : histogram.keySet())
            if (!parent.containsKey("type " + type)) problem("type " + type + " (" + histogram.get(type) + " objects) has no hprof class");
        Map<String, long[]> groups = new TreeMap<>();   // root -> {readdump, visualvm}
        Set<String> classes = new HashSet<>();
        for (String[] f : map) {
            long[] g = groups.computeIfAbsent(find(parent, "type " + f[0]), k -> new long[2]);
            if (classes.add(f[1])) {
                JavaClass c = heap.getJavaClassByName(f[1]);
                if (c == null) problem("class " + f[1] + " not in the heap");
                else g[1] += c.getInstancesCount();
            }
        }
        for (String type : new TreeSet<>(histogram.keySet())) {
            if (!parent.containsKey("type " + type)) continue;
            groups.get(find(parent, "type " + type))[0] += histogram.get(type);
        }
        for (Map.Entry<String, long[]> e : groups.entrySet()) {
            List<String> members = new ArrayList<>();
            for (String k : parent.keySet()) if (find(parent, k).equals(e.getKey())) members.add(k);
            Collections.sort(members);
            long[] g = e.getValue();
            System.out.printf("count %s: readdump %d, VisualVM %d%n", members, g[0], g[1]);
            if (g[0] != g[1]) problem("instance counts differ for " + members + ": readdump " + g[0] + ", VisualVM " + g[1]);
        }
    }

    static String find(Map<String, String> p, String x) {
        p.putIfAbsent(x, x);
        while (!p.get(x).equals(x)) x = p.get(x);
        return x;
    }
    static void union(Map<String, String> p, String a, String b) { p.put(find(p, a), find(p, b)); }

    // The library hides unresolved object-array slots as nulls: read the raw ids.
    static void checkArrayIds(File file, Heap heap) throws IOException {
        long slots = 0;
        try (DataInputStream in = new DataInputStream(new BufferedInputStream(new FileInputStream(file), 1 << 20))) {
            while (in.readByte() != 0) { }
            if (in.readInt() != 8) { problem("id size is not 8"); return; }
            in.readLong();
            while (true) {
                int tag = in.read();
                if (tag < 0) break;
                in.readInt();
                long len = in.readInt() & 0xFFFFFFFFL;
                if (tag != 0x1C) { in.skipNBytes(len); continue; }
                long end = len;
                while (end > 0) {
                    int sub = in.readUnsignedByte();
                    long used = 1;
                    switch (sub) {
                        case 0xFF: in.readLong(); used += 8; break;
                        case 0x01: case 0x03: case 0x08: in.skipNBytes(16); used += 16; break;
                        case 0x20: {
                            in.skipNBytes(8 + 4 + 48 + 4); used += 64;
                            int cp = in.readUnsignedShort(); used += 2;
                            if (cp != 0) throw new IOException("constant pool entries");
                            int st = in.readUnsignedShort(); used += 2;
                            for (int i = 0; i < st; i++) { in.readLong(); int t = in.readUnsignedByte(); int s = size(t); in.skipNBytes(s); used += 9 + s; }
                            int nf = in.readUnsignedShort(); used += 2;
                            in.skipNBytes(9L * nf); used += 9L * nf;
                            break;
                        }
                        case 0x21: { in.skipNBytes(20); long n = in.readInt() & 0xFFFFFFFFL; in.skipNBytes(n); used += 24 + n; break; }
                        case 0x22: {
                            long id = in.readLong(); in.readInt(); long n = in.readInt() & 0xFFFFFFFFL; in.readLong();
                            used += 24 + 8 * n;
                            for (long i = 0; i < n; i++) {
                                long e = in.readLong();
                                if (e == 0) continue;
                                slots++;
                                if (heap.getInstanceByID(e) == null)
                                    problem("slot " + i + " of array 0x" + Long.toHexString(id) + " -> 0x" + Long.toHexString(e) + " does not resolve");
                            }
                            break;
                        }
                        case 0x23: { in.skipNBytes(12); long n = in.readInt() & 0xFFFFFFFFL; int t = in.readUnsignedByte(); in.skipNBytes(n * size(t)); used += 17 + n * size(t); break; }
                        default: throw new IOException("sub-record tag " + sub);
                    }
                    end -= used;
                }
                if (end != 0) problem("a sub-record overruns its segment");
            }
        }
        System.out.printf("object-array references %d%n", slots);
    }

    static int size(int t) {
        switch (t) { case 2: return 8; case 4: case 8: return 1; case 5: case 9: return 2; case 6: case 10: return 4; case 7: case 11: return 8; }
        throw new IllegalArgumentException("type " + t);
    }
}
