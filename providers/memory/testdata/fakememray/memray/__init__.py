"""A FAKE memray for Flameox's tests (not bloomberg/memray).

`python -m memray run --output F target...` runs the target, then writes F: memray's real
header magic (b"memray\\0") followed by JSON records this package's FileReader reads back.
The records come from $FAKE_MEMRAY_RECORDS (a JSON file) when set, else a fixed set.
"""
import json

# A fake's version: the oldest memray Flameox accepts, marked as the fake.
__version__ = "1.17.0+fake"

MAGIC = b"memray\x00"

DEFAULT = {
    "peak_memory": 4096,
    "total_allocations": 9,
    "high_watermark": [
        {"size": 3000, "n_allocations": 3, "stack": [["grow", "app.py", 3], ["main", "app.py", 9]]},
        {"size": 1000, "n_allocations": 2, "stack": [["main", "app.py", 10]]},
        {"size": 96, "n_allocations": 1, "stack": [["helper", "lib.py", 2], ["grow", "app.py", 4], ["main", "app.py", 9]]},
    ],
    "leaked": [
        {"size": 2048, "n_allocations": 2, "stack": [["grow", "app.py", 3], ["main", "app.py", 9]]},
        {"size": 512, "n_allocations": 1, "stack": [["keep", "lib.py", 7], ["keep", "lib.py", 7], ["main", "app.py", 11]]},
    ],
}


class Metadata:
    def __init__(self, d):
        self.peak_memory = d["peak_memory"]
        self.total_allocations = d["total_allocations"]
        self.has_native_traces = False


class AllocationRecord:
    def __init__(self, d):
        self.size = d["size"]
        self.n_allocations = d["n_allocations"]
        self._stack = [tuple(f) for f in d["stack"]]

    def stack_trace(self, max_stacks=None):
        return list(self._stack)


class FileReader:
    def __init__(self, file_name, *, report_progress=False, max_memory_records=10000):
        with open(file_name, "rb") as f:
            data = f.read()
        if not data.startswith(MAGIC):
            raise OSError("not a memray capture")
        self._d = json.loads(data[len(MAGIC):].decode())
        self.metadata = Metadata(self._d)

    def get_high_watermark_allocation_records(self, merge_threads=True):
        return [AllocationRecord(r) for r in self._d["high_watermark"]]

    def get_leaked_allocation_records(self, merge_threads=True):
        return [AllocationRecord(r) for r in self._d["leaked"]]
