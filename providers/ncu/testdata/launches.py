# Independent truth for the launches view: Python's csv module reads an ncu --csv page and
# prints one summary per launch: the Speed Of Light, Occupancy and Launch Statistics
# figures (details page) or the raw metrics those sections read (raw page), the duration
# in nanoseconds (decimal arithmetic on the printed text), and the rule results, largest
# estimated speedup first, those without an estimate after in file order.
import csv
import json
import sys
from decimal import Decimal

DETAILS = {
    ("GPU Speed Of Light Throughput", "Duration"): "duration_ns",
    ("GPU Speed Of Light Throughput", "Compute (SM) Throughput"): "compute_throughput_pct",
    ("GPU Speed Of Light Throughput", "Memory Throughput"): "memory_throughput_pct",
    ("Occupancy", "Achieved Occupancy"): "achieved_occupancy_pct",
    ("Occupancy", "Theoretical Occupancy"): "theoretical_occupancy_pct",
    ("Launch Statistics", "Registers Per Thread"): "registers_per_thread",
}
RAW = {
    "gpu__time_duration.sum": "duration_ns",
    "sm__throughput.avg.pct_of_peak_sustained_elapsed": "compute_throughput_pct",
    "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed": "memory_throughput_pct",
    "sm__warps_active.avg.pct_of_peak_sustained_active": "achieved_occupancy_pct",
    "sm__maximum_warps_per_active_cycle_pct": "theoretical_occupancy_pct",
    "launch__registers_per_thread": "registers_per_thread",
}
SCALE = {"ns": 0, "nsecond": 0, "us": 3, "usecond": 3, "ms": 6, "msecond": 6, "s": 9, "second": 9}


def value(name, text, unit):
    d = Decimal(text.replace(",", ""))
    if name == "duration_ns":
        d = d.scaleb(SCALE[unit.strip().lower()])
    return float(d)


def main(path):
    with open(path, newline="") as f:
        rows = list(csv.reader(f))
    header = rows[0]
    launches = {}

    def launch(r):
        i = int(r[0])
        if i not in launches:
            launches[i] = {"launch_id": i, "kernel": r[4], "device": r[9] or None, "stream": r[6] or None,
                           "block_size": r[7] or None, "grid_size": r[8] or None,
                           **{k: None for k in DETAILS.values()}, "rules": []}
        return launches[i]

    if header[11:15] == ["Section Name", "Metric Name", "Metric Unit", "Metric Value"]:
        for r in rows[1:]:
            r = r + [""] * (len(header) - len(r))
            l = launch(r)
            name = DETAILS.get((r[11], r[12]))
            if name and l[name] is None:
                l[name] = value(name, r[14], r[13])
            if len(header) > 15 and r[15]:
                s = r[19].strip().replace(",", "")
                l["rules"].append({"rule": r[15], "rule_type": r[16] or None, "section": r[11] or None,
                                   "estimated_speedup_type": r[18] or None,
                                   "estimated_speedup": float(s) if s else None, "description": r[17] or None})
    else:
        units = rows[1]
        for r in rows[2:]:
            l = launch(r)
            for i in range(11, len(header)):
                name = RAW.get(header[i])
                if name:
                    l[name] = value(name, r[i], units[i])
    out = []
    for i in sorted(launches, key=lambda i: list(launches).index(i)):
        l = launches[i]
        with_s = [x for x in l["rules"] if x["estimated_speedup"] is not None]
        without = [x for x in l["rules"] if x["estimated_speedup"] is None]
        l["rules"] = sorted(with_s, key=lambda x: -x["estimated_speedup"]) + without
        out.append(l)
    json.dump(out, sys.stdout)


main(sys.argv[1])
