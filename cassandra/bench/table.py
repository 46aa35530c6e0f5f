"""Prints FramingBench's results (JMH JSON) as ns/op and as ratios to Cassandra's own CRC32
codec of the same format, or ChecksumBench's as ns per byte, with the CPU and the machine load
the figures belong to. cassandra/bench/e2e/e2e.py reads ChecksumBench's through checksum_cost."""

import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

FORMATS = {
    "uncompressed": ("CRC32_CASSANDRA", "CRC32_KIT", "CRC32C_KIT"),
    "lz4": ("LZ4_CRC32_CASSANDRA", "LZ4_CRC32_KIT", "LZ4_CRC32C_KIT"),
}


def cpu() -> str:
    """`lscpu`'s model name, family and model, and flags that matter to CRC32C."""
    fields = {}
    for line in subprocess.run(["lscpu"], capture_output=True, text=True, check=True).stdout.splitlines():
        key, _, value = line.partition(":")
        fields[key.strip()] = value.strip()
    flags = set(fields.get("Flags", "").split())
    simd = [f for f in ("sse4_2", "pclmulqdq", "avx2", "avx512f", "vpclmulqdq") if f in flags]
    return (f"{fields.get('Model name', '?')}, family {fields.get('CPU family', '?')} model "
            f"{fields.get('Model', '?')}, {fields.get('CPU(s)', '?')} CPUs, {' '.join(simd)}")


def idle() -> str:
    """How an idle CPU waits for its next wake-up: in a virtual machine a halted virtual CPU costs
    an exit to the hypervisor to wake, unless the guest polls a while before it halts
    (cpuidle-haltpoll's guest_halt_poll_ns, 0: never polls; the window shrinks after waits that
    outlast it if guest_halt_poll_allow_shrink). Every process hop a request makes pays it, so
    latency figures need it named."""
    def read(path: str) -> str | None:
        try:
            return Path(path).read_text().strip()
        except OSError:
            return None
    driver = read("/sys/devices/system/cpu/cpuidle/current_driver") or "none"
    knobs = "/sys/module/haltpoll/parameters/guest_halt_poll_"
    poll, shrink = read(knobs + "ns"), read(knobs + "allow_shrink")
    return f"cpuidle driver {driver}" + (f", guest_halt_poll_ns {poll}, allow_shrink {shrink}" if poll else "")


def iterations(record: dict) -> tuple[float, float]:
    """The fastest and the median iteration of a JMH result: on a machine shared with other jobs
    the interference only adds time, so the fastest iteration is the least disturbed one."""
    runs = [x for fork in record["primaryMetric"]["rawData"] for x in fork]
    return min(runs), statistics.median(runs)


def checksum_cost(path: str) -> dict[tuple[str, int], tuple[float, float]]:
    """ChecksumBench: per (checksum, bytes), ns per byte of the fastest and the median iteration."""
    cost = {}
    for r in json.load(open(path)):
        n = int(r["params"]["bytes"])
        cost[(r["params"]["checksum"], n)] = tuple(t / n for t in iterations(r))
    return cost


def checksum_table(path: str) -> None:
    cost = checksum_cost(path)
    print("\nthe node's payload checksum alone (FrameChecksum.compute, direct buffer): ns/byte of the fastest / "
          "the median iteration (GB/s of the fastest)")
    for (checksum, n), (fastest, median) in sorted(cost.items()):
        print(f"{checksum:<7}{n:>8} B  {fastest:.4f} / {median:.4f} ns/B  ({1 / fastest:.1f} GB/s)")
    missing = [f"{c} {n}" for c in ("CRC32", "CRC32C") for n in {n for _, n in cost} if (c, n) not in cost]
    if not cost or missing:
        sys.exit(f"missing cells: {', '.join(missing) or 'all'}")


def framing_table(path: str) -> None:
    cells = {}
    for r in json.load(open(path)):
        p = r["params"]
        op = r["benchmark"].rsplit(".", 1)[1]
        cells[(op, int(p["payloadSize"]), p["codec"])] = iterations(r)
    sizes = sorted({s for _, s, _ in cells})
    print("\nns/op of the fastest / the median iteration; ratios to Cassandra's CRC32 codec of the same format (< 1: faster)")
    print(f"{'op':<7}{'format':<13}{'payload':>8}  {'Cassandra CRC32':>17}  {'kit CRC32':>17}  {'kit CRC32C':>17}"
          f"  {'kit CRC32/C* fastest':>20}  {'kit CRC32C/C* fastest':>21}  {'median':>6}")
    missing = []
    for op in ("decode", "encode"):
        for name, codecs in FORMATS.items():
            for size in sizes:
                row = [cells.get((op, size, c)) for c in codecs]
                if None in row:
                    missing.append(f"{op} {name} {size}")
                    continue
                (base, base_median), (kit32, _), (kit32c, kit32c_median) = row
                shown = [f"{fastest:8.0f} / {median:<6.0f}" for fastest, median in row]
                print(f"{op:<7}{name:<13}{size:>8}  {shown[0]:>17}  {shown[1]:>17}  {shown[2]:>17}"
                      f"  {kit32 / base:>20.2f}  {kit32c / base:>21.2f}  {kit32c_median / base_median:>6.2f}")
    if missing:
        sys.exit(f"missing cells: {', '.join(missing)}")


def main(path: str) -> None:
    print(f"\nCPU: {cpu()}")
    print(f"load: {os.getloadavg()[0]:.2f} {os.getloadavg()[1]:.2f} {os.getloadavg()[2]:.2f} (1, 5, 15 min, at the end of the run)")
    records = json.load(open(path))
    if records and records[0]["benchmark"].endswith("ChecksumBench.compute"):
        checksum_table(path)
    else:
        framing_table(path)


if __name__ == "__main__":
    main(sys.argv[1])
