"""Write a Flameox benchmark-samples document, optionally timing PyTorch code.

Flameox puts this module on PYTHONPATH when it runs a workload under the
benchmark-samples capture provider, and sets:

  FLAMEOX_BENCHMARK_OUTPUT        the file the workload must write
  FLAMEOX_TORCH_BENCHMARK_CONFIG  compact JSON of the provider's torch_benchmark
                                  settings (only when the request sets them)

A workload records series and writes them once, on leaving the block:

    import flameox_benchmark

    with flameox_benchmark.recorder() as rec:
        rec.torch_benchmark("matmul", lambda: a @ b, dimensions={"n": 512})
        rec.add("load", [0.12, 0.11, 0.13], unit="s")

torch_benchmark times the callable with torch.utils.benchmark.Timer.blocked_autorange
(min_run_time_seconds, num_threads) and keeps at most max_samples per-iteration
samples, in seconds, with the loop count behind each; with cuda_event_timing the
Timer's clock is a CUDA event clock. Without FLAMEOX_TORCH_BENCHMARK_CONFIG it uses
the provider's defaults. Outside Flameox (FLAMEOX_BENCHMARK_OUTPUT unset) nothing is
written, and the measurements are still returned.
"""

import json
import os
import sys

OUTPUT = "FLAMEOX_BENCHMARK_OUTPUT"
CONFIG = "FLAMEOX_TORCH_BENCHMARK_CONFIG"
SCHEMA = "flameox.benchmark-samples.v1"

# The provider's torch_benchmark defaults (the CUE contract's).
DEFAULTS = {"min_run_time_seconds": 0.2, "max_samples": 100, "num_threads": 1, "cuda_event_timing": False}

# Exit status of a workload whose Python cannot import torch, or has no CUDA device
# for cuda_event_timing.
TORCH_UNAVAILABLE = 3

_IDENTITY = ("scope", "phase", "worker", "variant", "trial", "block")


def config():
    """The effective torch_benchmark settings: FLAMEOX_TORCH_BENCHMARK_CONFIG over the defaults."""
    cfg = dict(DEFAULTS)
    raw = os.environ.get(CONFIG)
    if raw:
        cfg.update(json.loads(raw))
    return cfg


def _torch():
    try:
        import torch
        import torch.utils.benchmark as benchmark
    except ImportError as exc:
        sys.stderr.write(
            "flameox_benchmark: this Python (%s) cannot import torch.utils.benchmark (%s); "
            "install PyTorch in the workload's environment.\n" % (sys.executable, exc)
        )
        sys.exit(TORCH_UNAVAILABLE)
    return torch, benchmark


def _cuda_clock(torch):
    """A clock in seconds read from CUDA events on the current stream."""
    if not torch.cuda.is_available():
        sys.stderr.write("flameox_benchmark: cuda_event_timing needs a CUDA device, and torch sees none.\n")
        sys.exit(TORCH_UNAVAILABLE)
    origin = torch.cuda.Event(enable_timing=True)
    origin.record()
    origin.synchronize()

    def clock():
        now = torch.cuda.Event(enable_timing=True)
        now.record()
        now.synchronize()
        return origin.elapsed_time(now) / 1000.0

    return clock


def measure_torch(fn, cfg=None):
    """Time fn() with torch.utils.benchmark; returns {samples (s per iteration), loops, producer}."""
    cfg = cfg or config()
    torch, benchmark = _torch()
    kwargs = {"stmt": "fn()", "globals": {"fn": fn}, "num_threads": int(cfg["num_threads"])}
    if cfg.get("cuda_event_timing"):
        kwargs["timer"] = _cuda_clock(torch)
    m = benchmark.Timer(**kwargs).blocked_autorange(min_run_time=float(cfg["min_run_time_seconds"]))
    samples = list(m.times)[: int(cfg["max_samples"])]
    return {"samples": samples, "loops": int(m.number_per_run),
            "producer": {"name": "torch.utils.benchmark", "version": str(torch.__version__)}}


class Recorder:
    """Collects series and writes them as one benchmark-samples document."""

    def __init__(self, producer=None):
        self.producer = producer
        self.benchmarks = []

    def add(self, name, samples, unit="s", dimensions=None, loops=None, warmup_samples=None, **identity):
        """Record one series: name, unit, samples and optional identity fields."""
        unknown = set(identity) - set(_IDENTITY)
        if unknown:
            raise TypeError("unknown series fields: %s" % ", ".join(sorted(unknown)))
        series = {"name": name, "unit": unit, "samples": [float(s) for s in samples]}
        if dimensions:
            series["dimensions"] = dict(dimensions)
        if loops is not None:
            series["loops"] = int(loops)
        if warmup_samples:
            series["warmup_samples"] = [float(s) for s in warmup_samples]
        for k in _IDENTITY:
            if identity.get(k) is not None:
                series[k] = str(identity[k])
        self.benchmarks.append(series)
        return series

    def torch_benchmark(self, name, fn, dimensions=None, **identity):
        """Time fn() as the provider's torch_benchmark settings say and record it (unit s)."""
        m = measure_torch(fn)
        if self.producer is None:
            self.producer = m["producer"]
        return self.add(name, m["samples"], unit="s", dimensions=dimensions, loops=m["loops"], **identity)

    def write(self, path=None):
        """Write the document to path, or to FLAMEOX_BENCHMARK_OUTPUT; returns the path, or None."""
        path = path or os.environ.get(OUTPUT)
        if not path or not self.benchmarks:
            return None
        doc = {"schema": SCHEMA, "producer": self.producer or {"name": "flameox_benchmark"},
               "benchmarks": self.benchmarks}
        tmp = path + ".tmp"
        with open(tmp, "w") as f:
            json.dump(doc, f)
        os.replace(tmp, path)
        return path

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        if exc_type is None:
            self.write()
        return False


def recorder(producer=None):
    """A Recorder that writes FLAMEOX_BENCHMARK_OUTPUT when its with-block ends without error."""
    return Recorder(producer)
