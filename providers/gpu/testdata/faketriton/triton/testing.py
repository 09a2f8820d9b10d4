"""The fake's benchmarker. A fake kernel reports the run times (ms) a GPU timer would
measure as {quantile: ms}; do_bench runs the kernel once and returns the quantiles
asked for, in that order, one value alone as a number (triton.testing.do_bench:
`if len(ret) == 1: ret = ret[0]`)."""

_measured = {}


def report(by_quantile):
    _measured.clear()
    _measured.update(by_quantile)


def do_bench(fn, warmup=25, rep=100, quantiles=None, return_mode="mean"):
    fn()
    if quantiles is None:
        return _measured[0.5]
    ret = [_measured[q] for q in quantiles]
    if len(ret) == 1:
        ret = ret[0]
    return ret
