// HeapCheck: loads an hprof written by dumptohprof with VisualVM's heap library
// (org.graalvm.visualvm.lib.jfluid.heap) and checks it against what readdump
// says about the dump it came from.
//
// usage: java -cp <jfluid-heap.jar>:<classes> HeapCheck FILE.hprof
//          [--histogram FILE]   readdump --histogram output
//          [--class-map FILE]   dumptohprof --class-map output: TYPEID<TAB>CLASS<TAB>COUNT
//          [--threads N] [--frames N]  thread roots and frames (over all threads) expected
//          [--roots KIND=N]... exact count of GC roots of a kind ("Java frame", "JNI global", ...)
//          [--alloc-traces N]  objects whose stack trace (allocation site) has frames
//          [--static CLASS.FIELD=VALUE]... a static field's value as VisualVM shows it
//          [--class CLASS=COUNT[:FIELD,...]]... a class's exact instance count and
//                               instance fields it must have (dumptohprof --binary)
//
// Checks: per-class instance counts equal the histogram (types whose objects
// share an hprof class, as all byte[] do, are compared as a group); every
// field and object-array reference resolves (arrays checked on the raw ids);
// every root names an instance; threads have names and their frames; and,
// on the raw records, the rules of Eclipse MAT and jhat (checkStructure).
// Prints PROBLEM: lines and RESULT: OK|FAILED; exit 0 ok, 1 otherwise.
import java.io.*;
import java.nio.file.*;
import java.util.*;
import org.graalvm.visualvm.lib.jfluid.heap.*;

public class HeapCheck {
    static int problems = 0;
    static long allocTraces = -1;
    static void problem(String s) { problems++; System.out.println("PROBLEM: " + s); }

    public static void main(String[] args) throws Exception {
        File file = new File(args[0]);
        String histogram = null, classMap = null;
        int threads = -1, frames = -1;
        Map<String, Integer> rootKinds = new TreeMap<>();
        Map<String, String> statics = new TreeMap<>();
        List<String> classChecks = new ArrayList<>();
        for (int i = 1; i < args.length; i++) {
            switch (args[i]) {
                case "--histogram": histogram = args[++i]; break;
                case "--class-map": classMap = args[++i]; break;
                case "--threads": threads = Integer.parseInt(args[++i]); break;
                case "--frames": frames = Integer.parseInt(args[++i]); break;
                case "--roots": { String a = args[++i]; int eq = a.lastIndexOf('=');
                    rootKinds.put(a.substring(0, eq), Integer.parseInt(a.substring(eq + 1))); break; }
                case "--alloc-traces": allocTraces = Long.parseLong(args[++i]); break;
                case "--class": classChecks.add(args[++i]); break;
                case "--static": { String a = args[++i]; int eq = a.indexOf('=');
                    statics.put(a.substring(0, eq), a.substring(eq + 1)); break; }
                default: System.err.println("unknown argument " + args[i]); System.exit(2);
            }
        }
        try {
            checkStructure(file);
        } catch (IOException | RuntimeException e) {
            problem("unreadable: " + e);
        }
        try {
            Heap heap = HeapFactory.createHeap(file);
            check(heap, histogram, classMap, threads, frames, rootKinds);
            checkStatics(heap, statics);
            checkClasses(heap, classChecks);
        } catch (IOException | RuntimeException e) {
            problem("VisualVM's heap library cannot load the file: " + e);
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

    // The rules Eclipse MAT and jhat enforce and VisualVM's library does not,
    // checked on the raw records (so broken files are judged without loading
    // them): one heap dump (never two 0x0C records, segments contiguous and
    // closed by 0x2C); UTF8, LOAD CLASS, FRAME and TRACE before the heap; every
    // TRACE's frames defined before it and every trace serial used defined; a
    // LOAD CLASS for every class dump; superclass 0 or dumped; class dumps
    // before their instances; object ids unique and non-zero; every root and
    // every object-array slot names an object in the file (the library shows
    // unresolved slots as nulls); ROOT THREAD OBJECT before any frame root
    // naming its thread serial; no zero-length record but HEAP DUMP END.
    static void checkStructure(File file) throws IOException {
        Set<Long> frames = new HashSet<>(), loaded = new HashSet<>(), classes = new HashSet<>(), objects = new HashSet<>();
        Set<Integer> traces = new HashSet<>(), usedTraces = new TreeSet<>(), threadSerials = new HashSet<>();
        Map<Integer, Long> objectTraces = new HashMap<>();   // trace serial -> objects
        Map<Integer, Integer> traceFrames = new HashMap<>(); // trace serial -> frames
        List<long[]> supers = new ArrayList<>();   // {class, super}
        List<long[]> refs = new ArrayList<>();     // {what (0 root, 1 slot), id, holder}
        int heapDumps = 0, segmentRuns = 0, ends = 0;
        int lastTag = -1;
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
                if (len == 0 && tag != 0x2C) problem("zero-length record of tag 0x" + Integer.toHexString(tag));
                if (tag == 0x0C) heapDumps++;
                if (tag == 0x1C && lastTag != 0x1C) segmentRuns++;
                if (tag == 0x2C) {
                    ends++;
                    if (lastTag != 0x1C && lastTag != 0x0C) problem("HEAP DUMP END closes no heap dump");
                }
                if (lastTag == 0x1C && tag != 0x1C && tag != 0x2C) problem("heap dump segments not closed by HEAP DUMP END before tag 0x" + Integer.toHexString(tag));
                boolean inHeap = heapDumps + segmentRuns > 0;
                if (inHeap && (tag == 0x01 || tag == 0x02 || tag == 0x04 || tag == 0x05))
                    problem("top-level record 0x" + Integer.toHexString(tag) + " after the heap dump began");
                lastTag = tag;
                switch (tag) {
                    case 0x02: { in.readInt(); loaded.add(in.readLong()); usedTraces.add(in.readInt()); in.readLong(); break; }
                    case 0x04: { long id = in.readLong(); if (!frames.add(id)) problem("FRAME 0x" + Long.toHexString(id) + " defined twice"); in.skipNBytes(len - 8); break; }
                    case 0x05: {
                        int serial = in.readInt(); in.readInt(); int n = in.readInt();
                        if (!traces.add(serial)) problem("TRACE " + serial + " defined twice");
                        traceFrames.put(serial, n);
                        for (int i = 0; i < n; i++) {
                            long f = in.readLong();
                            if (!frames.contains(f)) problem("TRACE " + serial + " names frame 0x" + Long.toHexString(f) + " before (or without) its FRAME");
                        }
                        break;
                    }
                    case 0x0A: { in.readInt(); in.readLong(); usedTraces.add(in.readInt()); in.skipNBytes(24); break; }
                    case 0x0C: case 0x1C: {
                        long end = len;
                        while (end > 0) {
                            int sub = in.readUnsignedByte();
                            long used = 1;
                            switch (sub) {
                                case 0xFF: case 0x05: case 0x07: refs.add(new long[] {0, in.readLong(), sub}); used += 8; break;
                                case 0x01: refs.add(new long[] {0, in.readLong(), sub}); in.readLong(); used += 16; break;
                                case 0x04: case 0x06: refs.add(new long[] {0, in.readLong(), sub}); in.readInt(); used += 12; break;
                                case 0x02: case 0x03: {
                                    refs.add(new long[] {0, in.readLong(), sub});
                                    int thread = in.readInt(); in.readInt(); used += 16;
                                    if (!threadSerials.contains(thread))
                                        problem("frame root names thread serial " + thread + " before (or without) its ROOT THREAD OBJECT");
                                    break;
                                }
                                case 0x08: {
                                    refs.add(new long[] {0, in.readLong(), sub});
                                    threadSerials.add(in.readInt()); usedTraces.add(in.readInt()); used += 16;
                                    break;
                                }
                                case 0x20: {
                                    long id = in.readLong(); usedTraces.add(in.readInt()); long sup = in.readLong();
                                    in.skipNBytes(40); used += 60;
                                    newObject(objects, id, "class");
                                    classes.add(id);
                                    if (!loaded.contains(id)) problem("class dump 0x" + Long.toHexString(id) + " without a LOAD CLASS");
                                    supers.add(new long[] {id, sup});
                                    in.readInt(); used += 4;
                                    int cp = in.readUnsignedShort(); used += 2;
                                    for (int i = 0; i < cp; i++) { in.readUnsignedShort(); int t = in.readUnsignedByte(); int s = size(t); in.skipNBytes(s); used += 3 + s; }
                                    int st = in.readUnsignedShort(); used += 2;
                                    for (int i = 0; i < st; i++) { in.readLong(); int t = in.readUnsignedByte(); int s = size(t); in.skipNBytes(s); used += 9 + s; }
                                    int nf = in.readUnsignedShort(); used += 2;
                                    in.skipNBytes(9L * nf); used += 9L * nf;
                                    break;
                                }
                                case 0x21: {
                                    long id = in.readLong(); objectTraces.merge(in.readInt(), 1L, Long::sum); long cls = in.readLong();
                                    long n = in.readInt() & 0xFFFFFFFFL; in.skipNBytes(n); used += 24 + n;
                                    newObject(objects, id, "instance");
                                    if (!classes.contains(cls)) problem("instance 0x" + Long.toHexString(id) + " before (or without) the dump of its class 0x" + Long.toHexString(cls));
                                    break;
                                }
                                case 0x22: {
                                    long id = in.readLong(); objectTraces.merge(in.readInt(), 1L, Long::sum); long n = in.readInt() & 0xFFFFFFFFL; long cls = in.readLong();
                                    used += 24 + 8 * n;
                                    newObject(objects, id, "object array");
                                    if (!classes.contains(cls)) problem("object array 0x" + Long.toHexString(id) + " before (or without) the dump of its class 0x" + Long.toHexString(cls));
                                    for (long i = 0; i < n; i++) {
                                        long e = in.readLong();
                                        if (e != 0) { slots++; refs.add(new long[] {1, e, id}); }
                                    }
                                    break;
                                }
                                case 0x23: {
                                    long id = in.readLong(); objectTraces.merge(in.readInt(), 1L, Long::sum); long n = in.readInt() & 0xFFFFFFFFL; int t = in.readUnsignedByte();
                                    in.skipNBytes(n * size(t)); used += 17 + n * size(t);
                                    newObject(objects, id, "primitive array");
                                    break;
                                }
                                default: throw new IOException("sub-record tag 0x" + Integer.toHexString(sub));
                            }
                            end -= used;
                        }
                        if (end != 0) problem("a sub-record overruns its segment");
                        break;
                    }
                    default: in.skipNBytes(len);
                }
            }
        }
        if (heapDumps > 1) problem(heapDumps + " HEAP DUMP (0x0C) records: readers take one heap dump per file");
        if (heapDumps > 0 && segmentRuns > 0) problem("both HEAP DUMP and HEAP DUMP SEGMENT records");
        if (segmentRuns > 1) problem("heap dump segments in " + segmentRuns + " runs: a second heap dump");
        if (segmentRuns > 0 && ends != 1) problem(ends + " HEAP DUMP END records for one heap dump");
        if (heapDumps + segmentRuns == 0) problem("no heap dump");
        for (long[] cs : supers)
            if (cs[1] != 0 && !classes.contains(cs[1]))
                problem("class 0x" + Long.toHexString(cs[0]) + " has superclass 0x" + Long.toHexString(cs[1]) + ", which is not dumped");
        usedTraces.addAll(objectTraces.keySet());
        long withTrace = 0;
        for (Map.Entry<Integer, Long> e : objectTraces.entrySet())
            if (traceFrames.getOrDefault(e.getKey(), 0) > 0) withTrace += e.getValue();
        System.out.println("objects with an allocation site: " + withTrace);
        if (allocTraces >= 0 && withTrace != allocTraces)
            problem("expected " + allocTraces + " objects with an allocation site, got " + withTrace);
        for (int t : usedTraces) if (!traces.contains(t)) problem("trace serial " + t + " used but no TRACE defines it");
        for (long[] r : refs) {
            if (objects.contains(r[1])) continue;
            if (r[0] == 0) problem("GC root (sub-record 0x" + Long.toHexString(r[2]) + ") names 0x" + Long.toHexString(r[1]) + ", which is not in the file");
            else problem("slot of array 0x" + Long.toHexString(r[2]) + " -> 0x" + Long.toHexString(r[1]) + " does not resolve");
        }
        System.out.printf("structure: %d objects, %d classes, %d traces, %d frames, object-array references %d%n",
                objects.size(), classes.size(), traces.size(), frames.size(), slots);
    }

    // CLASS=COUNT[:FIELD,...]: the class, its instance count, its instance fields.
    static void checkClasses(Heap heap, List<String> checks) {
        for (String a : checks) {
            int eq = a.lastIndexOf('='), colon = a.indexOf(':', eq);
            String name = a.substring(0, eq);
            long want = Long.parseLong(colon < 0 ? a.substring(eq + 1) : a.substring(eq + 1, colon));
            JavaClass c = heap.getJavaClassByName(name);
            if (c == null) { problem("class " + name + " not in the heap"); continue; }
            System.out.printf("class %s: %d instances%n", name, c.getInstancesCount());
            if (c.getInstancesCount() != want) problem("class " + name + ": expected " + want + " instances, got " + c.getInstancesCount());
            if (colon < 0) continue;
            Set<String> fields = new HashSet<>();
            for (Object f : c.getFields()) fields.add(((Field) f).getName());
            for (String f : a.substring(colon + 1).split(","))
                if (!fields.contains(f)) problem("class " + name + " has no field " + f + " (has " + new TreeSet<>(fields) + ")");
        }
    }

    static void checkStatics(Heap heap, Map<String, String> statics) {
        for (Map.Entry<String, String> e : statics.entrySet()) {
            int dot = e.getKey().lastIndexOf('.');
            JavaClass c = heap.getJavaClassByName(e.getKey().substring(0, dot));
            String got = null;
            if (c != null)
                for (Object o : c.getStaticFieldValues()) {
                    FieldValue fv = (FieldValue) o;
                    if (fv.getField().getName().equals(e.getKey().substring(dot + 1))) got = fv.getValue();
                }
            System.out.println("static " + e.getKey() + " = " + got);
            if (!e.getValue().equals(got)) problem("static " + e.getKey() + ": expected " + e.getValue() + ", got " + got);
        }
    }

    static void newObject(Set<Long> objects, long id, String what) {
        if (id == 0) problem(what + " with id 0");
        else if (!objects.add(id)) problem(what + " 0x" + Long.toHexString(id) + ": id used twice");
    }

    static int size(int t) {
        switch (t) { case 2: return 8; case 4: case 8: return 1; case 5: case 9: return 2; case 6: case 10: return 4; case 7: case 11: return 8; }
        throw new IllegalArgumentException("type " + t);
    }
}
