"""Independent figures of a V8 sampling heap profile, computed with Python's json module.

Frames are call frames merged by (functionName, scriptId, url, lineNumber, columnNumber);
the (root) node is not a frame. self: sum of selfSize; inclusive: the subtree bytes of the
outermost node of each frame on every stack; count: samples naming the frame's nodes (None
without a samples array); id: first appearance in pre-order. Printed ranked by inclusive
desc, self desc, id; with a second argument "self", by self desc, inclusive desc, id.
"""
import json
import sys

doc = json.load(open(sys.argv[1]))
counts = {}
for s in doc.get("samples", []):
    counts[s["nodeId"]] = counts.get(s["nodeId"], 0) + 1
frames = {}


def subtree(n):
    return n["selfSize"] + sum(subtree(c) for c in n.get("children", []))


def visit(n, on_stack):
    cf = n["callFrame"]
    k = (cf["functionName"], cf.get("scriptId", ""), cf.get("url", ""), cf.get("lineNumber", -1), cf.get("columnNumber", -1))
    f = frames.setdefault(k, {"key": k, "id": len(frames), "self": 0, "inclusive": 0, "count": 0})
    f["self"] += n["selfSize"]
    f["count"] += counts.get(n.get("id"), 0)
    if k not in on_stack:
        f["inclusive"] += subtree(n)
    for c in n.get("children", []):
        visit(c, on_stack | {k})


sys.setrecursionlimit(100000)
for c in doc["head"].get("children", []):
    visit(c, frozenset())
if len(sys.argv) > 2 and sys.argv[2] == "self":
    rows = sorted(frames.values(), key=lambda f: (-f["self"], -f["inclusive"], f["id"]))
else:
    rows = sorted(frames.values(), key=lambda f: (-f["inclusive"], -f["self"], f["id"]))
out = []
for i, f in enumerate(rows):
    name, _, url, line, col = f["key"]
    out.append({"rank": i + 1, "function": name or "(anonymous)", "file": url or None, "line": line + 1 if line >= 0 else None,
                "self_bytes": f["self"], "inclusive_bytes": f["inclusive"],
                "allocation_count": f["count"] if "samples" in doc else None, "frame_id": f["id"]})
print(json.dumps({"rows": out, "total_bytes": subtree(doc["head"]), "sample_count": len(doc.get("samples", []))}))
