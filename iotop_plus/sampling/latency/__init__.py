"""Block latency from the bpftrace tracer: the program, its child, the parser, histograms."""
