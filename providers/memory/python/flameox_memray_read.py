"""Flameox's memray reader: run by the Python whose memray reads the capture.

usage: python -I flameox_memray_read.py CAPTURE high_watermark|leaked

Prints compact JSON lines: first {"memray_version": V}, then one {"frame": ...} row per
Python frame (function, file, line) aggregated over memray's merged-thread records, then
{"metrics": ...}. Exit 3: memray is not importable; exit 4: memray cannot read CAPTURE.
"""
import json
import sys


def out(obj):
    sys.stdout.write(json.dumps(obj, separators=(",", ":")) + "\n")


def main():
    path, which = sys.argv[1], sys.argv[2]
    try:
        import memray
    except Exception as e:  # ImportError, or a broken installation
        out({"error": "unavailable", "type": type(e).__name__})
        return 3
    out({"memray_version": str(getattr(memray, "__version__", "unknown"))})
    try:
        reader = memray.FileReader(path)
        meta = reader.metadata
        if which == "high_watermark":
            records = reader.get_high_watermark_allocation_records(merge_threads=True)
        else:
            records = reader.get_leaked_allocation_records(merge_threads=True)
        ids = {}
        frames = []  # [function, file, line, self, inclusive, count]
        n_records = 0
        ranked_bytes = 0
        unattributed = 0
        for rec in records:
            n_records += 1
            size = int(rec.size)
            ranked_bytes += size
            stack = list(rec.stack_trace())
            if not stack:
                unattributed += size
                continue
            seen = set()
            for depth, (function, filename, lineno) in enumerate(stack):
                key = (str(function), str(filename), int(lineno))
                i = ids.get(key)
                if i is None:
                    i = ids[key] = len(frames)
                    frames.append([key[0], key[1], key[2], 0, 0, 0])
                f = frames[i]
                if depth == 0:
                    f[3] += size
                    f[5] += int(rec.n_allocations)
                if i not in seen:
                    seen.add(i)
                    f[4] += size
        retained = ranked_bytes
        if which != "leaked":
            retained = sum(int(r.size) for r in reader.get_leaked_allocation_records(merge_threads=True))
        metrics = {
            "peak_memory_bytes": int(meta.peak_memory),
            "retained_end_bytes": retained,
            "capture_records": n_records,
            "allocation_operations": int(meta.total_allocations),
            "total_allocated_bytes": ranked_bytes,
            "unattributed_bytes": unattributed,
            "frame_count": len(frames),
            "native_traces": bool(getattr(meta, "has_native_traces", False)),
        }
    except Exception as e:
        out({"error": "read", "type": type(e).__name__})
        return 4
    for i, f in enumerate(frames):
        out({"frame": i, "function": f[0], "file": f[1], "line": f[2], "self": f[3], "inclusive": f[4], "count": f[5]})
    out({"metrics": metrics})
    return 0


if __name__ == "__main__":
    sys.exit(main())
