"""Record a pytest run as Flameox's pytest event stream (JSON lines).

Flameox's pytest capture provider runs `<python> -m pytest -p flameox_pytest_plugin ...`
with this module on PYTHONPATH and FLAMEOX_PYTEST_OUTPUT naming the stream. Without the
variable the plugin records nothing.

Every event is one JSON object on its own line, at most 64 KiB, written with a single
os.write on a file opened for appending, so a run killed by a timeout keeps every event
written before it, and pytest-xdist workers (which run the fixtures) append to the same
file as the controller (which receives the test reports):

  run_started       {schema, pytest_version, worker_id}
  test_collected    {nodeid}
  test_phase        {nodeid, phase, outcome, duration_ns, worker_id, attempt, xfail[, message]}
  collection_error  {nodeid, message}
  fixture_phase     {fixture, scope, phase, outcome, worker_id, invocation_id, nodeid, duration_ns}
  run_finished      {exitstatus}
  interrupted       {}
  internal_error    {message}

A failed test_phase (and a rerun one: an attempt pytest-rerunfailures runs again) carries
message: the report's crash message (longrepr.reprcrash, what pytest's JUnit XML and short
test summary show), else the report's text, as pytest's JUnit XML chooses. A collection
error's message is its crash message, else the last line of its report. Messages are cut
to MAX_MESSAGE bytes of UTF-8 on a character boundary; Flameox keeps 1 KiB of them and
says when it cut one.
"""

import json
import os
import time

import pytest

OUTPUT = "FLAMEOX_PYTEST_OUTPUT"
SCHEMA = "flameox.pytest.v1"
MAX_LINE = 64 * 1024
MAX_TEXT = 1024
MAX_MESSAGE = 2048

_fd = None
_worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
_attempts = {}
_invocations = [0]


def _emit(event, **fields):
    if _fd is None:
        return
    obj = {"event": event}
    obj.update(fields)
    line = json.dumps(obj, separators=(",", ":"), ensure_ascii=False).encode("utf-8", "replace") + b"\n"
    if len(line) > MAX_LINE:
        # Only a pathological node id gets here: it is cut so the event still fits.
        for key in ("nodeid", "message", "fixture"):
            if isinstance(obj.get(key), str):
                obj[key] = obj[key][: MAX_TEXT] + "...[truncated]"
        line = json.dumps(obj, separators=(",", ":"), ensure_ascii=False).encode("utf-8", "replace") + b"\n"
    try:
        os.write(_fd, line)
    except OSError:
        pass


def _is_worker(config):
    return hasattr(config, "workerinput")


def _text(exc):
    if exc is None:
        return None
    msg = "%s: %s" % (type(exc).__name__, exc)
    return msg[:MAX_TEXT]


def _bounded(text):
    b = text.encode("utf-8", "replace")
    if len(b) <= MAX_MESSAGE:
        return text
    return b[:MAX_MESSAGE].decode("utf-8", "ignore")


def _message(report, collect=False):
    """The short message of a failed report, bounded to MAX_MESSAGE bytes."""
    longrepr = getattr(report, "longrepr", None)
    if longrepr is None:
        return None
    crash = getattr(longrepr, "reprcrash", None)
    if crash is not None and getattr(crash, "message", None) is not None:
        return _bounded(str(crash.message))
    if collect:
        lines = (getattr(report, "longreprtext", None) or str(longrepr)).strip().splitlines()
        return _bounded(lines[-1]) if lines else None
    return _bounded(str(longrepr))


def pytest_configure(config):
    global _fd
    path = os.environ.get(OUTPUT)
    if not path or _fd is not None:
        return
    _fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    _emit("run_started", schema=SCHEMA, pytest_version=pytest.__version__, worker_id=_worker)


def pytest_collection_finish(session):
    # session.items is the final selection (after -k, -m and deselection).
    if _is_worker(session.config):
        return
    for item in session.items:
        _emit("test_collected", nodeid=item.nodeid)


_xdist_collected = [False]


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_node_collection_finished(node, ids):
    # Every worker collects the whole suite; the first one's list is the run's.
    if _xdist_collected[0]:
        return
    _xdist_collected[0] = True
    for nodeid in ids:
        _emit("test_collected", nodeid=nodeid)


def pytest_collectreport(report):
    if not report.failed:
        return
    if _worker != "main":
        return  # the controller receives the failed collect reports of its workers
    _emit("collection_error", nodeid=report.nodeid, message=_message(report, collect=True))


def pytest_runtest_logreport(report):
    if _worker != "main":
        return  # workers forward their reports to the controller, which writes them
    worker = getattr(report, "worker_id", None)
    if worker is None:
        node = getattr(report, "node", None)
        gw = getattr(node, "gateway", None)
        worker = getattr(gw, "id", None) or "main"
    phase = report.when if report.when in ("setup", "call", "teardown") else "call"
    outcome = report.outcome
    key = report.nodeid
    if phase == "setup":
        _attempts[key] = _attempts.get(key, 0) + 1
    attempt = _attempts.get(key, 1)
    fields = {}
    if report.failed or outcome == "rerun":  # pytest-rerunfailures: a failed attempt it reruns
        msg = _message(report)
        if msg is not None:
            fields["message"] = msg
    _emit(
        "test_phase",
        nodeid=report.nodeid,
        phase=phase,
        outcome=outcome,
        duration_ns=int(round(getattr(report, "duration", 0.0) * 1e9)),
        worker_id=worker,
        attempt=attempt,
        xfail=hasattr(report, "wasxfail"),
        **fields
    )


class _Invocation:
    __slots__ = ("id", "start", "teardown_failed", "nodeid")


def _scope(fixturedef):
    s = getattr(fixturedef, "scope", "function")
    return getattr(s, "value", s)


@pytest.hookimpl(hookwrapper=True)
def pytest_fixture_setup(fixturedef, request):
    fins = getattr(fixturedef, "_finalizers", None)
    n0 = len(fins) if isinstance(fins, list) else 0
    item = getattr(request, "_pyfuncitem", None)
    nodeid = getattr(item, "nodeid", None)
    t0 = time.perf_counter_ns()
    outcome = yield
    dur = time.perf_counter_ns() - t0
    exc = outcome.excinfo[1] if outcome.excinfo else None
    if exc is None:
        result = "passed"
    elif isinstance(exc, pytest.skip.Exception):
        result = "skipped"
    else:
        result = "failed"
    _invocations[0] += 1
    inv = _Invocation()
    inv.id = "%s:%d" % (_worker, _invocations[0])
    inv.start = None
    inv.teardown_failed = False
    inv.nodeid = nodeid
    fixturedef._flameox_invocation = inv
    _emit(
        "fixture_phase",
        fixture=fixturedef.argname,
        scope=_scope(fixturedef),
        phase="setup",
        outcome=result,
        worker_id=_worker,
        invocation_id=inv.id,
        nodeid=nodeid,
        duration_ns=dur,
    )
    fins = getattr(fixturedef, "_finalizers", None)
    if not isinstance(fins, list):
        return
    # Finalizers run last in, first out: the teardown clock starts before the ones this
    # setup added (a generator fixture's teardown), which are wrapped to see failures.
    def wrap(f):
        def run():
            __tracebackhide__ = True
            try:
                f()
            except BaseException:
                inv.teardown_failed = True
                raise

        return run

    fins[n0:] = [wrap(f) for f in fins[n0:]]

    def start():
        inv.start = time.perf_counter_ns()

    fins.append(start)


def pytest_fixture_post_finalizer(fixturedef, request):
    inv = getattr(fixturedef, "_flameox_invocation", None)
    if inv is None or inv.start is None:
        return
    fixturedef._flameox_invocation = None
    _emit(
        "fixture_phase",
        fixture=fixturedef.argname,
        scope=_scope(fixturedef),
        phase="teardown",
        outcome="failed" if inv.teardown_failed else "passed",
        worker_id=_worker,
        invocation_id=inv.id,
        nodeid=inv.nodeid,
        duration_ns=time.perf_counter_ns() - inv.start,
    )


def pytest_keyboard_interrupt(excinfo):
    _emit("interrupted")


def pytest_internalerror(excrepr, excinfo):
    _emit("internal_error", message=_text(getattr(excinfo, "value", None)))


def pytest_sessionfinish(session, exitstatus):
    if _is_worker(session.config):
        return
    _emit("run_finished", exitstatus=int(exitstatus))
