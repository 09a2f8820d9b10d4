"""Independent truth for the fake memray captures: the records the fake wrote (its JSON
after memray's magic), aggregated per (function, file, line) with python3 alone.

usage: python3 memraytruth.py CAPTURE high_watermark|leaked [inclusive|self]  -> JSON {rows, metrics}

Rows are ranked by inclusive, then self bytes (self, then inclusive with "self"), then
first appearance.
"""
import json
import sys

data = open(sys.argv[1], "rb").read()
assert data.startswith(b"memray\x00")
d = json.loads(data[7:])
recs = d[sys.argv[2]]
agg = {}
first = []
for r in recs:
    for depth, f in enumerate(r["stack"]):
        k = tuple(f)
        if k not in agg:
            agg[k] = {"self": 0, "inclusive": 0, "count": 0}
            first.append(k)
    for k in set(tuple(f) for f in r["stack"]):
        agg[k]["inclusive"] += r["size"]
    if r["stack"]:
        k = tuple(r["stack"][0])
        agg[k]["self"] += r["size"]
        agg[k]["count"] += r["n_allocations"]
by_self = len(sys.argv) > 3 and sys.argv[3] == "self"
if by_self:
    order = sorted(first, key=lambda k: (-agg[k]["self"], -agg[k]["inclusive"], first.index(k)))
else:
    order = sorted(first, key=lambda k: (-agg[k]["inclusive"], -agg[k]["self"], first.index(k)))
rows = [{"rank": i + 1, "function": k[0], "file": k[1], "line": k[2], "self_bytes": agg[k]["self"],
         "inclusive_bytes": agg[k]["inclusive"], "allocation_count": agg[k]["count"], "frame_id": first.index(k)}
        for i, k in enumerate(order)]
metrics = {"peak_memory_bytes": d["peak_memory"], "allocation_operations": d["total_allocations"],
           "capture_records": len(recs), "total_allocated_bytes": sum(r["size"] for r in recs),
           "retained_end_bytes": sum(r["size"] for r in d["leaked"])}
print(json.dumps({"rows": rows, "metrics": metrics}))
