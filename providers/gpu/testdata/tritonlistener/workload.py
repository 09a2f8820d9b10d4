"""A Triton workload run against the fake triton (testdata/faketriton): it autotunes the
kernels of spec.json (argv[1]) in the order of its calls. With --import-listener it
imports flameox_triton_listener itself, after triton; otherwise the listener runs it
(python -m flameox_triton_listener workload.py spec.json)."""

import json
import sys
import time

spec = json.load(open(sys.argv[1]))

import triton  # noqa: E402
from triton import testing  # noqa: E402

if "--import-listener" in sys.argv:
    import flameox_triton_listener  # noqa: F401


class DType:

    def __init__(self, name):
        self.name = name

    def __str__(self):
        return self.name


class Tensor:
    dtype = DType("torch.float16")


def kernel_of(name, k):
    configs = [triton.Config(c["kwargs"], num_warps=c.get("num_warps", 4)) for c in k["configs"]]
    index = {(c.kwargs["BLOCK"], c.num_warps): i for i, c in enumerate(configs)}

    def kernel(x, n, BLOCK, num_warps):
        t = spec["timings"][name][str(n)][index[(BLOCK, num_warps)]]
        if t is None:
            raise triton.OutOfResources(BLOCK * 64, 232448, "shared memory")
        time.sleep(0.0005)
        testing.report({0.5: t[0], 0.2: t[1], 0.8: t[2]})

    kernel.__name__ = kernel.__qualname__ = name
    opts = {"cache_results": k.get("cache_results", False)}
    if k.get("scalar_bench"):
        opts["do_bench"] = lambda kernel_call, quantiles: testing.do_bench(kernel_call, quantiles=(0.5, ))
    if k.get("prune_to_first"):
        opts["prune_configs_by"] = {"early_config_prune": lambda configs, nargs, **kw: configs[:1]}
    return triton.autotune(configs=configs, key=k["key"], **opts)(triton.jit(kernel))


kernels = {name: kernel_of(name, k) for name, k in spec["kernels"].items()}
x = Tensor()
for call in spec["calls"]:
    fn = kernels[call["kernel"]]
    if call.get("clear_memory_cache"):
        fn.cache.clear()
    fn[(1, )](x, n=call["n"])
