"""knobs.autotuning as Triton has it: cache (TRITON_CACHE_AUTOTUNING), print, and,
from Triton 3.8 (FAKE_TRITON_LISTENER_KNOB=1 here), listener."""

import os


class autotuning_knobs:

    def __init__(self):
        self.cache = os.environ.get("TRITON_CACHE_AUTOTUNING") == "1"
        self.print = False


if os.environ.get("FAKE_TRITON_LISTENER_KNOB") == "1":
    # Triton 3.8: listener: Optional[AutotuningListener] = None, called with
    # fn, key, best_config, configs_timings, duration and cache_hit.
    autotuning_knobs.listener = None


class runtime_knobs:
    interpret = False


autotuning = autotuning_knobs()
runtime = runtime_knobs()
