"""This process's peak resident set, for the benchmark children. Imports nothing, like wire.py, so loading it
before a cold-start clock starts adds no library module to the measurement."""


def peak_rss_kib() -> int:
    """Peak resident set since exec (VmHWM): unlike `wait4`'s maxrss or `getrusage`, it does not start from the
    size of the parent the process was forked from."""
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    return 0
