"""Autotuner shaped as python/triton/runtime/autotuner.py (Triton 3.x) has it: the same
attributes and the same order of events in run, check_disk_cache and _bench. Only the
benchmarker (testing.do_bench), the compiler (none) and the cache manager (a directory
under TRITON_CACHE_DIR) are stand-ins."""

import builtins
import hashlib
import inspect
import json
import os
import time

from .. import knobs
from .errors import AutotunerError, OutOfResources
from .jit import JITFunction, KernelInterface

# Triton 3.8 and later call knobs.autotuning.listener; older releases have no such knob.
_LISTENER = hasattr(type(knobs.autotuning), "listener")


class _CacheManager:

    def __init__(self, key):
        self.dir = os.path.join(os.environ.get("TRITON_CACHE_DIR", os.path.expanduser("~/.triton/cache")), key)

    def get_file(self, name):
        path = os.path.join(self.dir, name)
        return path if os.path.exists(path) else None

    def put(self, data, name, binary=True):
        os.makedirs(self.dir, exist_ok=True)
        with open(os.path.join(self.dir, name), "w") as f:
            f.write(data)


class Autotuner(KernelInterface):

    def __init__(self, fn, arg_names, configs, key, reset_to_zero=None, restore_value=None, pre_hook=None,
                 post_hook=None, prune_configs_by=None, do_bench=None, cache_results=False):
        if not configs:
            self.configs = [Config({}, num_warps=4, num_stages=3, num_ctas=1)]
        else:
            self.configs = configs
        self.keys = key
        self.cache = {}
        self.arg_names = arg_names
        self.cache_results = (cache_results or knobs.autotuning.cache) and not knobs.runtime.interpret
        self.pre_hook = lambda kwargs, reset_only=False: 0
        self.post_hook = lambda kwargs, exception: 0
        self.perf_model = None
        self.configs_top_k = 1.0
        self.early_config_prune = None
        if prune_configs_by:
            self.early_config_prune = prune_configs_by.get("early_config_prune")
        self.fn = fn
        self.base_fn = fn
        while not inspect.isfunction(self.base_fn):
            self.base_fn = self.base_fn.fn
        self._do_bench = do_bench

    @property
    def do_bench(self):
        if self._do_bench is None:
            from ..testing import do_bench
            return do_bench
        return self._do_bench

    def _bench(self, *args, config, **meta):
        conflicts = meta.keys() & config.kwargs.keys()
        if conflicts:
            raise ValueError(f"Conflicting meta-parameters: {', '.join(conflicts)}.")
        current = dict(meta, **config.all_kwargs())
        full_nargs = {**self.nargs, **current}

        def kernel_call():
            if config.pre_hook:
                config.pre_hook(full_nargs)
            self.pre_hook(full_nargs)
            try:
                self.fn.run(*args, **current)
            except Exception as e:
                try:
                    self.post_hook(full_nargs, exception=e)
                finally:
                    raise
            self.post_hook(full_nargs, exception=None)

        try:
            return self.do_bench(kernel_call, quantiles=(0.5, 0.2, 0.8))
        except OutOfResources:
            return [float("inf"), float("inf"), float("inf")]

    def check_disk_cache(self, tuning_key, configs, bench_fn):
        if not tuning_key or any(cfg.pre_hook for cfg in configs):
            bench_fn()
            return False
        fn = self.fn
        while not isinstance(fn, JITFunction):
            fn = fn.fn
        cache_key = [fn.cache_key, str(tuning_key)] + [str(c) for c in configs]
        cache_key = hashlib.sha256("-".join(cache_key).encode("utf-8")).hexdigest()
        cache = _CacheManager(cache_key)
        file_name = f"{fn.__name__[:150]}.autotune.json"
        path = cache.get_file(file_name)
        if path:
            with open(path, "r") as cached_configs:
                timings = json.load(cached_configs)["configs_timings"]
                timings = {Config(**config): timing for config, timing in timings}
                self.cache[tuning_key] = builtins.min(timings, key=timings.get)
                self.configs_timings = timings
            return True
        bench_fn()
        cache.put(
            json.dumps({
                "key": [str(k) for k in tuning_key],
                "configs_timings": [(config.__dict__, timings) for config, timings in self.configs_timings.items()
                                    if not config.pre_hook],
            }), file_name, binary=False)
        return False

    def run(self, *args, **kwargs):
        self.nargs = dict(zip(self.arg_names, args))
        used_cached_result = True
        if len(self.configs) > 1:
            all_args = {**self.nargs, **kwargs}
            _args = {k: v for (k, v) in all_args.items() if k in self.arg_names}
            key = [_args[key] for key in self.keys if key in _args]
            for _, arg in _args.items():
                if hasattr(arg, "dtype"):
                    key.append(str(arg.dtype))
            key = tuple(key)
            if key not in self.cache:
                used_cached_result = False
                pruned_configs = self.prune_configs(kwargs)
                if len(pruned_configs) == 1:
                    self.cache[key] = pruned_configs[0]
                    used_cached_result = True
                else:

                    def benchmark():
                        bench_start = time.time()
                        timings = {config: self._bench(*args, config=config, **kwargs) for config in pruned_configs}
                        bench_end = time.time()
                        self.bench_time = bench_end - bench_start
                        self.cache[key] = builtins.min(timings, key=timings.get)
                        full_nargs = {**self.nargs, **kwargs, **self.cache[key].all_kwargs()}
                        self.pre_hook(full_nargs, reset_only=True)
                        self.configs_timings = timings

                    if self.cache_results:
                        used_cached_result = self.check_disk_cache(key, pruned_configs, benchmark)
                    else:
                        benchmark()

                    if _LISTENER and knobs.autotuning.listener is not None:
                        jit_fn = self.fn
                        while not isinstance(jit_fn, JITFunction):
                            jit_fn = jit_fn.fn
                        knobs.autotuning.listener(
                            fn=jit_fn,
                            key=key,
                            best_config=self.cache[key],
                            configs_timings=self.configs_timings,
                            duration=getattr(self, "bench_time", None) if not used_cached_result else None,
                            cache_hit=used_cached_result,
                        )
            config = self.cache[key]
        else:
            config = self.configs[0]
        self.best_config = config
        if config.pre_hook is not None:
            full_nargs = {**self.nargs, **kwargs, **config.all_kwargs()}
            config.pre_hook(full_nargs)
        ret = self.fn.run(*args, **kwargs, **config.all_kwargs())
        self.nargs = None
        return ret

    def prune_configs(self, kwargs):
        pruned_configs = self.configs
        if self.early_config_prune:
            pruned_configs = self.early_config_prune(self.configs, self.nargs, **kwargs)
            if not pruned_configs:
                raise AutotunerError("No valid autotuner configs after pruning.")
        return pruned_configs


class Config:

    def __init__(self, kwargs, num_warps=4, num_stages=3, num_ctas=1, maxnreg=None, pre_hook=None, ir_override=None):
        self.kwargs = kwargs
        self.num_warps = num_warps
        self.num_ctas = num_ctas
        self.num_stages = num_stages
        self.maxnreg = maxnreg
        self.pre_hook = pre_hook
        self.ir_override = ir_override

    def all_kwargs(self):
        return {
            **self.kwargs, **{
                k: v
                for (k, v) in (
                    ("num_warps", self.num_warps),
                    ("num_ctas", self.num_ctas),
                    ("num_stages", self.num_stages),
                    ("maxnreg", self.maxnreg),
                    ("ir_override", self.ir_override),
                ) if v is not None
            }
        }

    def __str__(self):
        res = [f"{k}: {v}" for k, v in self.kwargs.items()]
        res += [f"num_warps: {self.num_warps}", f"num_ctas: {self.num_ctas}", f"num_stages: {self.num_stages}",
                f"maxnreg: {self.maxnreg}", f"ir_override: {self.ir_override}"]
        return ", ".join(res)

    def __hash__(self):
        return hash((*self.all_kwargs().items(), self.pre_hook))

    def __eq__(self, other):
        return (*self.all_kwargs().items(), self.pre_hook) == (*other.all_kwargs().items(), other.pre_hook)


def autotune(configs, key, prune_configs_by=None, reset_to_zero=None, restore_value=None, pre_hook=None,
             post_hook=None, do_bench=None, cache_results=False):

    def decorator(fn):
        return Autotuner(fn, fn.arg_names, configs, key, reset_to_zero, restore_value, pre_hook=pre_hook,
                         post_hook=post_hook, prune_configs_by=prune_configs_by, do_bench=do_bench,
                         cache_results=cache_results)

    return decorator
