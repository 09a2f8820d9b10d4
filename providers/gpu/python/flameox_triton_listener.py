"""Record Triton autotune selections as Flameox listener-v1 JSON Lines.

One line is appended to the file FLAMEOX_TRITON_LISTENER_PATH names for every autotune
selection: the first time an autotuner meets a key in this process and picks a config,
by benchmarking its configs or by reading Triton's on-disk autotune cache
(cache_hit true). Launches that reuse the autotuner's in-memory pick are not
selections and write nothing, nor does an autotuner left with one config (Triton
benchmarks nothing then). Flameox reads the file with inspect_triton_autotune
(format "triton"); docs/decisions/0059-triton-listener.md defines the record.

Run a workload under it:

    FLAMEOX_TRITON_LISTENER_PATH=triton-listener.jsonl \\
        python -m flameox_triton_listener train.py --its --args
    FLAMEOX_TRITON_LISTENER_PATH=triton-listener.jsonl \\
        python -m flameox_triton_listener -m package.module --its --args

or import it in the workload (`import flameox_triton_listener`), before or after
triton. Without FLAMEOX_TRITON_LISTENER_PATH nothing is installed. The module needs
only the standard library; it does not import triton itself, but hooks Triton when
the workload imports it:

- Triton with knobs.autotuning.listener (3.8 and later): Flameox's listener is set
  there, and calls any listener that was set before it. A listener the workload sets
  afterwards replaces it (a warning is printed at exit).
- Older Triton: Autotuner.run and Autotuner._bench are wrapped; a run that added a
  key to the autotuner's cache and replaced its configs_timings made a selection,
  benchmarked when _bench ran or bench_time was set anew, else read from the disk
  cache.
"""

import json
import math
import numbers
import os
import sys
import threading
import time

PATH = "FLAMEOX_TRITON_LISTENER_PATH"
SCHEMA = "flameox.triton-autotune"
VERSION = "listener-v1"

# The module whose import is hooked, and the marker set on it once hooked.
_AUTOTUNER = "triton.runtime.autotuner"
_MARK = "_flameox_triton_listener"

_lock = threading.Lock()
_state = {"path": None, "warned": False, "listener": None}


def _warn(msg):
    if not _state["warned"]:
        _state["warned"] = True
        sys.stderr.write("flameox_triton_listener: %s\n" % msg)


def _number(x):
    """A float as strict JSON carries it: finite, or its name as a string."""
    f = float(x)
    if math.isnan(f):
        return "NaN"
    if math.isinf(f):
        return "Infinity" if f > 0 else "-Infinity"
    return f


def _value(v, depth=0):
    """A config, key or kwargs value as JSON: numbers, strings, booleans and null as
    they are (non-finite floats by name), lists and dicts element by element,
    callables by qualified name, anything else as str()."""
    if v is None or isinstance(v, (bool, str)):
        return v
    if isinstance(v, numbers.Integral):
        return int(v)
    if isinstance(v, numbers.Real):
        return _number(v)
    if depth < 16:
        if isinstance(v, dict):
            return {str(k): _value(x, depth + 1) for k, x in v.items()}
        if isinstance(v, (list, tuple)):
            return [_value(x, depth + 1) for x in v]
    if callable(v):
        mod = getattr(v, "__module__", None)
        name = getattr(v, "__qualname__", None) or getattr(v, "__name__", None)
        if name:
            return "%s.%s" % (mod, name) if mod else name
    return str(v)


def _config(cfg):
    """A triton.Config as Triton's disk cache writes it (its __dict__: kwargs,
    num_warps, num_ctas, num_stages, maxnreg, pre_hook, ir_override, ...)."""
    attrs = getattr(cfg, "__dict__", None)
    if not isinstance(attrs, dict):
        return {"str": str(cfg)}
    return {str(k): _value(v) for k, v in attrs.items() if not str(k).startswith("_")}


def _timings(t):
    """Timings in ms as a list: do_bench's quantiles as returned (Triton asks for
    0.5, 0.2, 0.8), a custom do_bench's single number as a list of one; [] when they
    are not numbers."""
    try:
        if isinstance(t, numbers.Real):
            return [_number(t)]
        return [_number(x) for x in t]
    except Exception:
        return []


def _kernel(fn):
    """The kernel's name: the Python function under the JITFunction (and any
    heuristics) the autotuner wraps, as Triton names its cache file."""
    seen = 0
    while fn is not None and seen < 32:
        name = getattr(fn, "__name__", None)
        if isinstance(name, str) and not hasattr(fn, "fn"):
            return name
        inner = getattr(fn, "fn", None)
        if inner is None:
            return name if isinstance(name, str) else str(fn)
        fn, seen = inner, seen + 1
    return str(fn)


def _triton_version():
    mod = sys.modules.get("triton")
    v = getattr(mod, "__version__", None)
    return v if isinstance(v, str) else None


def record(fn, key, best_config, configs_timings, duration, cache_hit, hook):
    """The listener-v1 record of one selection."""
    candidates, best = [], None
    items = list(configs_timings.items())
    for i, (cfg, t) in enumerate(items):
        if best is None and cfg is best_config:
            best = i
        candidates.append({"config": _config(cfg), "timings_ms": _timings(t)})
    if best is None:
        for i, (cfg, _) in enumerate(items):
            try:
                if cfg == best_config:
                    best = i
                    break
            except Exception:
                pass
    seconds = None
    if duration is not None:
        seconds = _number(duration)
        if isinstance(seconds, str):
            seconds = None
    if not isinstance(key, (list, tuple)):
        key = [key]
    return {
        "schema": SCHEMA,
        "version": VERSION,
        "kernel": _kernel(fn),
        "key": [_value(k) for k in key],
        "cache_hit": bool(cache_hit),
        "tuning_seconds": seconds,
        "best_index": best,
        "candidates": candidates,
        "hook": hook,
        "triton_version": _triton_version(),
        "pid": os.getpid(),
        "time_ns": time.time_ns(),
    }


def _append(rec):
    line = (json.dumps(rec, separators=(",", ":"), allow_nan=False) + "\n").encode("utf-8")
    with _lock:
        # One write on an O_APPEND descriptor: processes sharing the file (ranks,
        # workers) append whole lines.
        fd = os.open(_state["path"], os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, line)
        finally:
            os.close(fd)


def _emit(*args, **kwargs):
    try:
        _append(record(*args, **kwargs))
    except Exception as exc:  # the workload must not fail for its listener
        _warn("a selection was not recorded: %s: %s" % (type(exc).__name__, exc))


def _knob_listener(previous):
    def listener(*, fn, key, best_config, configs_timings, duration, cache_hit, **extra):
        _emit(fn, key, best_config, configs_timings, duration, cache_hit, "knobs.autotuning.listener")
        if previous is not None:
            previous(fn=fn, key=key, best_config=best_config, configs_timings=configs_timings,
                     duration=duration, cache_hit=cache_hit, **extra)

    return listener


_MISSING = object()


def _wrap(autotuner):
    """Wraps Autotuner.run and Autotuner._bench (Triton without the listener knob)."""
    cls = autotuner.Autotuner
    run, bench = cls.run, getattr(cls, "_bench", None)

    def counted_bench(self, *args, **kwargs):
        self.__dict__["_flameox_benches"] = self.__dict__.get("_flameox_benches", 0) + 1
        return bench(self, *args, **kwargs)

    def listened_run(self, *args, **kwargs):
        d = self.__dict__
        cache = d.get("cache")
        before = len(cache) if isinstance(cache, dict) else None
        timings_before = d.get("configs_timings", _MISSING)
        benches, bench_time = d.get("_flameox_benches", 0), d.get("bench_time", _MISSING)
        try:
            return run(self, *args, **kwargs)
        finally:
            try:
                cache = d.get("cache")
                timings = d.get("configs_timings", _MISSING)
                # A selection adds its key to the cache and replaces configs_timings
                # (benchmarked, or read from the disk cache); one config left after
                # pruning is cached without timings and recorded by no listener.
                if before is not None and isinstance(cache, dict) and len(cache) > before and \
                        timings is not timings_before and isinstance(timings, dict):
                    key = list(cache)[-1]
                    now = d.get("bench_time", _MISSING)
                    timed = now is not bench_time and isinstance(now, numbers.Real)
                    benched = d.get("_flameox_benches", 0) > benches or (timed and now > 0)
                    _emit(getattr(self, "fn", None), key, cache[key], timings, now if benched and timed else None,
                          not benched, "Autotuner.run")
            except Exception as exc:
                _warn("a selection was not recorded: %s: %s" % (type(exc).__name__, exc))

    cls.run = listened_run
    if bench is not None:
        cls._bench = counted_bench


def _hook(autotuner):
    """Hooks an imported triton.runtime.autotuner, once."""
    if getattr(autotuner, _MARK, False):
        return
    setattr(autotuner, _MARK, True)
    knobs = sys.modules.get("triton.knobs")
    tuning = getattr(knobs, "autotuning", None)
    if tuning is not None and hasattr(tuning, "listener"):
        mine = _knob_listener(tuning.listener)
        tuning.listener = mine
        _state["listener"] = (tuning, mine)
        return
    _wrap(autotuner)


def _check_at_exit():
    held = _state["listener"]
    if held is not None and held[0].listener is not held[1]:
        sys.stderr.write("flameox_triton_listener: knobs.autotuning.listener was replaced after Flameox set it; "
                         "selections after that were not recorded\n")


class _Finder:
    """A meta path finder that hooks triton.runtime.autotuner right after the workload
    imports it, so that triton is not imported earlier than the workload would."""

    def find_spec(self, name, path, target=None):
        if name != _AUTOTUNER:
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(name, path, target)
            if spec is not None:
                break
        else:
            return None
        loader = spec.loader
        if loader is None or not hasattr(loader, "exec_module"):
            return spec
        exec_module = loader.exec_module

        class Loader:
            def __getattr__(self, attr):
                return getattr(loader, attr)

            def create_module(self, spec):
                return loader.create_module(spec)

            def exec_module(self, module):
                exec_module(module)
                try:
                    _hook(module)
                except Exception as exc:
                    _warn("Triton could not be hooked: %s: %s" % (type(exc).__name__, exc))

        spec.loader = Loader()
        return spec


def install(path=None):
    """Records selections to path (default: FLAMEOX_TRITON_LISTENER_PATH); False when
    neither names a file. Hooks Triton now if it is imported, else when it is."""
    path = path or os.environ.get(PATH)
    if not path:
        return False
    _state["path"] = os.path.abspath(path)
    autotuner = sys.modules.get(_AUTOTUNER)
    if autotuner is not None:
        _hook(autotuner)
    elif not any(isinstance(f, _Finder) for f in sys.meta_path):
        sys.meta_path.insert(0, _Finder())
    return True


def _main(argv):
    import atexit
    import runpy

    usage = "usage: python -m flameox_triton_listener (SCRIPT | -m MODULE) [ARGS...]"
    if not argv or argv[0] in ("-h", "--help"):
        sys.stderr.write(usage + "\n")
        return 2
    if not install():
        sys.stderr.write("flameox_triton_listener: set %s to the file the records go to\n" % PATH)
        return 2
    atexit.register(_check_at_exit)
    if argv[0] == "-m":
        if len(argv) < 2:
            sys.stderr.write(usage + "\n")
            return 2
        sys.argv = argv[1:]
        runpy.run_module(argv[1], run_name="__main__", alter_sys=True)
    else:
        sys.argv = argv
        sys.path[0] = os.path.dirname(os.path.abspath(argv[0]))
        runpy.run_path(argv[0], run_name="__main__")
    return 0


if __name__ == "__main__":
    # A workload that also imports the module gets this one, not a second copy.
    sys.modules.setdefault("flameox_triton_listener", sys.modules[__name__])
    sys.exit(_main(sys.argv[1:]))
elif install():
    import atexit

    atexit.register(_check_at_exit)
