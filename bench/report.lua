-- The summary every wrk benchmark prints: the rate (named by `unit`), p50/p99/max latency, errors.
-- Loaded with dofile by the scripts next to it: done = report("requests/s")
function report(unit)
  return function(summary, latency, requests)
    io.write(string.format("%s: %.0f\n", unit, summary.requests / (summary.duration / 1e6)))
    io.write(string.format("latency p50: %.1f ms   p99: %.1f ms   max: %.1f ms\n",
      latency:percentile(50) / 1000, latency:percentile(99) / 1000, latency.max / 1000))
    io.write(string.format("requests: %d\n", summary.requests))
    io.write(string.format("errors: connect %d, read %d, write %d, timeout %d, non-2xx %d\n",
      summary.errors.connect, summary.errors.read, summary.errors.write, summary.errors.timeout, summary.errors.status))
  end
end
