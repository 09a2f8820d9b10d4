"""Profile a PyTorch workload for Flameox's torch-profiler capture provider.

Flameox puts this module on PYTHONPATH and sets two variables when it runs a workload
under the torch-profiler provider:

  FLAMEOX_TORCH_PROFILER_CONFIG       compact JSON: activities, schedule and options
  FLAMEOX_TORCH_PROFILER_OUTPUT_ROOT  directory where the traces are written

The workload wraps its steps in profiler() and calls step() once per step:

    import flameox_torch_profiler

    with flameox_torch_profiler.profiler() as prof:
        for batch in loader:
            train_step(batch)
            prof.step()

Each completed schedule cycle is written as a Kineto (Chrome Trace Event) JSON file
torch-trace-cycle-NNNN.json under the output root. Outside Flameox (the variables are
unset) profiler() profiles nothing and step() does nothing, so the workload runs as is.
"""

import contextlib
import json
import os
import sys

CONFIG = "FLAMEOX_TORCH_PROFILER_CONFIG"
OUTPUT_ROOT = "FLAMEOX_TORCH_PROFILER_OUTPUT_ROOT"

# Exit status of a workload run under the provider whose Python cannot import torch.
TORCH_UNAVAILABLE = 3


class _Idle:
    def step(self):
        pass


def _config():
    raw = os.environ.get(CONFIG)
    root = os.environ.get(OUTPUT_ROOT)
    if not raw or not root:
        return None, None
    return json.loads(raw), root


@contextlib.contextmanager
def profiler():
    """Profile the enclosed steps as FLAMEOX_TORCH_PROFILER_CONFIG says."""
    cfg, root = _config()
    if cfg is None:
        yield _Idle()
        return
    try:
        import torch
        from torch.profiler import ProfilerActivity, profile, schedule
    except ImportError as exc:
        sys.stderr.write(
            "flameox_torch_profiler: this Python (%s) cannot import torch (%s); "
            "install PyTorch in the workload's environment.\n" % (sys.executable, exc)
        )
        sys.exit(TORCH_UNAVAILABLE)
    activities = []
    for name in cfg["activities"]:
        if name == "cpu":
            activities.append(ProfilerActivity.CPU)
        elif name == "cuda" or (name == "cuda_if_available" and torch.cuda.is_available()):
            activities.append(ProfilerActivity.CUDA)
        else:
            sys.stderr.write("flameox_torch_profiler: torch sees no CUDA device; cuda_if_available profiles no CUDA activity.\n")
    if not activities:
        # torch would otherwise profile its own default set without saying so.
        sys.stderr.write("flameox_torch_profiler: no requested activity is available; profiling CPU activities.\n")
        activities.append(ProfilerActivity.CPU)
    os.makedirs(root, exist_ok=True)
    cycles = [0]

    def ready(prof):
        path = os.path.join(root, "torch-trace-cycle-%04d.json" % cycles[0])
        cycles[0] += 1
        prof.export_chrome_trace(path)

    s = cfg["schedule"]
    with profile(
        activities=activities,
        schedule=schedule(
            skip_first=s["skip_first"], wait=s["wait"], warmup=s["warmup"], active=s["active"], repeat=s["repeat"]
        ),
        on_trace_ready=ready,
        record_shapes=cfg["record_shapes"],
        profile_memory=cfg["profile_memory"],
        with_stack=cfg["with_stack"],
        with_flops=cfg["with_flops"],
        with_modules=cfg["with_modules"],
    ) as prof:
        yield prof
