"""Prints FramingBench's results (JMH JSON) as ns/op and as ratios to Cassandra's own CRC32
codec of the same format, with the CPU and the machine load the figures belong to."""

import json
import os
import subprocess
import sys

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


def main(path: str) -> None:
    scores = {}
    for r in json.load(open(path)):
        p = r["params"]
        op = r["benchmark"].rsplit(".", 1)[1]
        m = r["primaryMetric"]
        scores[(op, int(p["payloadSize"]), p["codec"])] = (float(m["score"]), float(m["scoreError"]))
    sizes = sorted({s for _, s, _ in scores})
    print(f"\nCPU: {cpu()}")
    print(f"load: {os.getloadavg()[0]:.2f} {os.getloadavg()[1]:.2f} {os.getloadavg()[2]:.2f} (1, 5, 15 min, at the end of the run)")
    print("\nns/op (± 99.9% error), and the ratio to Cassandra's CRC32 codec of the same format (< 1: faster)")
    print(f"{'op':<7}{'format':<13}{'payload':>8}  {'Cassandra CRC32':>17}  {'kit CRC32':>17}  {'kit CRC32C':>17}  {'kit CRC32 / C*':>14}  {'kit CRC32C / C*':>15}")
    missing = []
    for op in ("decode", "encode"):
        for name, (base, kit32, kit32c) in FORMATS.items():
            for size in sizes:
                cells = [scores.get((op, size, c)) for c in (base, kit32, kit32c)]
                if None in cells:
                    missing.append(f"{op} {name} {size}")
                    continue
                shown = [f"{s:9.0f} ± {e:5.0f}" for s, e in cells]
                ratios = [cells[1][0] / cells[0][0], cells[2][0] / cells[0][0]]
                print(f"{op:<7}{name:<13}{size:>8}  {shown[0]:>17}  {shown[1]:>17}  {shown[2]:>17}  {ratios[0]:>14.2f}  {ratios[1]:>15.2f}")
    if missing:
        sys.exit(f"missing cells: {', '.join(missing)}")


if __name__ == "__main__":
    main(sys.argv[1])
