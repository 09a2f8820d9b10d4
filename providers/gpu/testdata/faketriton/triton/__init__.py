"""A FAKE triton for Flameox's listener tests: no compiler, no GPU.

It keeps the parts of Triton's Python runtime that flameox_triton_listener meets,
shaped as python/triton/runtime/autotuner.py has them (Autotuner.run, _bench,
check_disk_cache, cache, configs_timings, bench_time, Config.__dict__,
knobs.autotuning). Kernels are Python functions that report the run times a GPU
timer would measure (testing.report); do_bench returns them as the quantiles asked.
FAKE_TRITON_LISTENER_KNOB=1 models Triton 3.8 and later, whose autotuner calls
knobs.autotuning.listener; otherwise an older Triton without the knob.
"""

__version__ = "3.8.0+fake"

from . import knobs  # noqa: E402
from .runtime import Config, JITFunction, OutOfResources, autotune, jit  # noqa: E402
from . import testing  # noqa: E402

__all__ = ["Config", "JITFunction", "OutOfResources", "autotune", "jit", "knobs", "testing"]
