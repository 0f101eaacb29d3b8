// HotSpot peer of bench/dump/dump_bench.cc (issue 4): the same graph (same
// generator, node count and sizes) dumped by HotSpot's heap dumper.
//
// Node i is ONE heap object: an Object[] of max(2, (s-16)/4) elements, i.e.
// s bytes with compressed oops (16-byte array header, 4-byte references;
// 24 bytes for s = 16). Element 0 points to node i-1, element 1 to a random
// one of the 1024 before it; the rest are null (an Object[] cannot carry the
// 16-bit data words of the C++ and Go peers).
//
// Uncompressed: in-process HotSpotDiagnosticMXBean.dumpHeap(file, false),
// the VM_HeapDumper operation that `jcmd PID GC.heap_dump -all FILE` runs
// (live=false: no full GC first, every object dumped, like the peers).
// Compressed (-gz cases): JDK 17 has gzip only in jcmd, so this process runs
// `jcmd PID GC.heap_dump -all -gz=1 FILE`; its time minus the median time of
// a no-op `jcmd PID VM.uptime` (the attach and jcmd's own JVM start) is
// reported. GC.heap_dump is not exported through the DiagnosticCommand MBean.
// The pause is the largest gap seen by a ticker thread sleeping 50 us.
// HotSpot refuses to overwrite files, so there is no /dev/null case.
//
// Usage: java -Xmx.. DumpPeer N MIN MAX REPS SHM_DIR DISK_DIR CASES(shm,disk,shm-gz,disk-gz)
import java.io.File;
import java.lang.management.ManagementFactory;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import com.sun.management.HotSpotDiagnosticMXBean;

public class DumpPeer {
  static Object[] root;
  static long s;  // splitmix64 state

  static long next() {
    s += 0x9E3779B97F4A7C15L;
    long z = s;
    z = (z ^ (z >>> 30)) * 0xBF58476D1CE4E5B9L;
    z = (z ^ (z >>> 27)) * 0x94D049BB133111EBL;
    return z ^ (z >>> 31);
  }

  static long nodeSize(double lo, double hi) {
    double u = (double) (next() >>> 11) * (1.0 / 9007199254740992.0);
    long v = ((long) (lo * Math.exp(u * Math.log(hi / lo)))) & ~15L;
    return Math.max(16, v);
  }

  static volatile long maxGap, resetReq, ticks;

  static double median(List<Double> v) {
    Collections.sort(v);
    return v.get(v.size() / 2);
  }

  // Seconds a jcmd command takes, its output discarded.
  static double jcmd(String... args) throws Exception {
    List<String> cmd = new ArrayList<>();
    cmd.add("jcmd");
    Collections.addAll(cmd, args);
    long t = System.nanoTime();
    Process p = new ProcessBuilder(cmd).redirectErrorStream(true).redirectOutput(ProcessBuilder.Redirect.DISCARD).start();
    if (p.waitFor() != 0) throw new RuntimeException("jcmd failed: " + cmd);
    return (System.nanoTime() - t) / 1e9;
  }

  public static void main(String[] a) throws Exception {
    long n = Long.parseLong(a[0]);
    double lo = Double.parseDouble(a[1]), hi = Double.parseDouble(a[2]);
    int reps = Integer.parseInt(a[3]);
    String shm = a[4], disk = a[5], cases = a[6];
    long t0 = System.nanoTime();
    s = 42;
    Object[][] recent = new Object[1024][];
    Object[] prev = null;
    long bytes = 0, javaBytes = 0;
    for (long i = 0; i < n; i++) {
      long sz = nodeSize(lo, hi);
      int len = (int) Math.max(2, (sz - 16) / 4);
      Object[] o = new Object[len];
      o[0] = prev;
      if (i > 0) o[1] = recent[(int) Long.remainderUnsigned(next(), Math.min(i, 1024))];
      for (long k = 1; k < sz / 16; k++) next();  // keep the sequence in step with the peers' data words
      recent[(int) (i % 1024)] = o;
      prev = o;
      bytes += sz;
      javaBytes += (16 + 4L * len + 7) & ~7L;
    }
    root = prev;
    recent = null;
    Runtime rt = Runtime.getRuntime();
    System.gc();
    System.out.printf("java %s: %d nodes, %.3f GB asked (%.3f GB of Object[], %.3f GB heap used), built in %.2f s%n",
        System.getProperty("java.vm.version"), n, bytes / 1e9, javaBytes / 1e9,
        (rt.totalMemory() - rt.freeMemory()) / 1e9, (System.nanoTime() - t0) / 1e9);

    Thread tick = new Thread(() -> {
      long last = System.nanoTime();
      while (true) {
        try { Thread.sleep(0, 50000); } catch (InterruptedException e) { return; }
        long t = System.nanoTime();
        if (resetReq != 0) { maxGap = 0; resetReq = 0; }
        else if (t - last > maxGap) maxGap = t - last;
        last = t;
        ticks = ticks + 1;
      }
    });
    tick.setDaemon(true);
    tick.start();

    HotSpotDiagnosticMXBean hs = ManagementFactory.getPlatformMXBean(HotSpotDiagnosticMXBean.class);
    String pid = Long.toString(ProcessHandle.current().pid());
    double jcmdBase = -1;
    for (String c : cases.split(",")) {
      List<Double> secs = new ArrayList<>(), pauses = new ArrayList<>();
      long dumpBytes = 0;
      boolean gz = c.endsWith("-gz");
      String where = gz ? c.substring(0, c.length() - 3) : c;
      for (int r = 0; r < reps; r++) {
        File f = new File((where.equals("shm") ? shm : disk) + "/dumppeer_java." + ProcessHandle.current().pid() + ".hprof");
        f.delete();
        if (gz && jcmdBase < 0) {
          List<Double> base = new ArrayList<>();
          for (int k = 0; k < 3; k++) base.add(jcmd(pid, "VM.uptime"));
          jcmdBase = median(base);
          System.out.printf("jcmd PID VM.uptime (subtracted from -gz times): %.3f s%n", jcmdBase);
        }
        resetReq = 1;
        while (resetReq != 0) Thread.onSpinWait();
        long t1 = System.nanoTime();
        double extra = 0;
        if (gz) {
          extra = jcmd(pid, "GC.heap_dump", "-all", "-gz=1", f.getPath()) - jcmdBase;
        } else {
          hs.dumpHeap(f.getPath(), false);
        }
        long t2 = System.nanoTime();
        if (gz) t2 = t1 + (long) (extra * 1e9);
        // The gap that ends when the world resumes is recorded at the next tick.
        for (long c0 = ticks; ticks < c0 + 2; ) Thread.onSpinWait();
        long gap = maxGap;
        if (!f.exists()) throw new RuntimeException("no dump written: " + f);
        dumpBytes = f.length();
        f.delete();
        secs.add((t2 - t1) / 1e9);
        pauses.add(gap / 1e6);
      }
      double sec = median(secs), p = median(pauses);
      System.out.printf("RESULT impl=hotspot case=%s nodes=%d heap_bytes=%d secs=%.4f pause_ms=%.2f gbps=%.3f mobjps=%.3f dump_bytes=%d pause_ms_per_gb=%.2f%n",
          c, n, bytes, sec, p, bytes / sec / 1e9, n / sec / 1e6, dumpBytes, p / (bytes / 1e9));
    }
  }
}
