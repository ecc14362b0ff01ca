#!/usr/bin/env python3
"""Opens an export of callscope's (Chrome trace events or speedscope's own
format) in speedscope -- the npm package pinned in tests/browser/speedscope,
its built app served from a local HTTP server, no network -- in headless
Chromium (Debian's chromium + chromium-driver, through python3-selenium),
and checks what a person would see:

  - the profile loads (the title becomes "NAME - speedscope") with no error
    and no warning of speedscope's importer in the console ("Tried to end X
    when Y was on top", "Frame X was still open at end of profile", ...);
  - one profile per thread, and for each --expect THREAD=F1,F2,... exactly
    those functions in its Sandwich table (THREAD is the thread's # in
    `callscope info`, read from the profile's name).

    speedscope_check.py APP_DIR FILE SHOTS_PREFIX --threads N [--expect THREAD=F1,F2,...]...

Writes SHOTS_PREFIX-thread-K.png (the time-order view of each thread) and
SHOTS_PREFIX-sandwich.png; exits 1 with the reason on the first failed check,
else prints what it saw (one "key: value" per line)."""

import argparse
import functools
import http.server
import json
import os
import re
import sys
import threading

from selenium.common.exceptions import TimeoutException
from selenium.webdriver.common.action_chains import ActionChains
from selenium.webdriver.support.ui import WebDriverWait

sys.dont_write_bytecode = True  # importing chromium.py writes no __pycache__ into the source tree
from chromium import Failed, check, run_in_chromium  # noqa: E402

FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--window-size=1300,900", "--hide-scrollbars",
         # Nothing but the local server: any other address goes to a proxy
         # that does not answer (loopback is never proxied).
         "--proxy-server=127.0.0.1:9")


def installed_app(app):
    """The app's directory, after checking that the package installed is the
    one pinned (a node_modules left from an older pin would test another
    speedscope)."""
    package_dir = os.path.dirname(os.path.dirname(os.path.abspath(app)))
    pinned_dir = os.path.dirname(os.path.dirname(package_dir))
    try:
        want = json.load(open(os.path.join(pinned_dir, "package.json")))["dependencies"]["speedscope"]
        have = json.load(open(os.path.join(package_dir, "package.json")))["version"]
    except (OSError, KeyError, ValueError) as e:
        raise Failed("speedscope is not installed (%s): run scripts/setup.sh, or `npm ci` in %s" % (e, pinned_dir))
    check(have == want, "speedscope %s is installed in %s, %s is pinned: run `npm ci` there" % (have, pinned_dir, want))
    check(os.path.isfile(os.path.join(app, "index.html")), "no index.html in %s" % app)
    return app


def serve(app, profile):
    """A local server of the app's files and, at /profile/NAME, the profile."""
    name = os.path.basename(profile)

    class Handler(http.server.SimpleHTTPRequestHandler):
        def translate_path(self, path):
            if path.split("?")[0] == "/profile/" + name:
                return profile
            return super().translate_path(path)

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Handler, directory=app))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, "http://127.0.0.1:%d" % server.server_address[1], name


def problems(d, origin):
    """Console errors, and the warnings of the app's own scripts (its
    importers warn there); Chromium's own warnings (software WebGL) are not
    the page's. A format speedscope cannot read is logged, not warned."""
    out = []
    for e in d.get_log("browser"):
        msg = e["message"]
        from_app = re.match(re.escape(origin) + r"/[^ ]*\.js ", msg) is not None
        if e["level"] == "SEVERE" or (e["level"] == "WARNING" and from_app) or "Failed to load format" in msg:
            out.append(msg)
    return out


def wait_for(d, cond, what, origin, timeout):
    """Waits for cond(d), failing at once on a console problem."""
    seen = []

    def ready(drv):
        seen.extend(problems(drv, origin))
        if seen:
            return True
        return cond(drv)

    try:
        WebDriverWait(d, timeout, poll_frequency=0.2).until(ready)
    except TimeoutException:
        raise Failed("timed out after %d s waiting for %s" % (timeout, what))
    check(not seen, "console: %s%s" % ("\n  ".join(seen[:10]), "\n  (%d in all)" % len(seen) if len(seen) > 10 else ""))


def thread_of(name):
    """The thread's # in a profile's name: "[thread N: ...]" (speedscope's
    format) or "PROCESS (pid P), NAME (N) (tid T)" (Chrome's, as speedscope
    names it from the thread_name metadata; "thread N" for a thread without
    a name)."""
    m = (re.match(r"^\[thread (\d+)", name) or re.search(r"\((\d+)\) \(tid \d+\)$", name)
         or re.search(r"thread (\d+) \(tid \d+\)$", name))
    check(m is not None, "no thread number in the profile name %r" % name)
    return int(m.group(1))


# What the page shows, read by script: the profile selector's rows (hidden
# until opened, one per profile, the name as title; no selector for a single
# profile) and the Sandwich table's function names.
PROFILES_JS = "return [...document.querySelectorAll('tr[title]')].map(r => r.title)"
SANDWICH_JS = ("return [...document.querySelectorAll('tr')].filter(r => !r.title && r.querySelectorAll('td').length === 3)"
               ".map(r => r.cells[2].textContent.trim())")


def shown(d):
    """The toolbar's middle: the profile's name, and "(K/N)" when there are several."""
    lines = d.find_element("tag name", "body").text.split("\n")
    return lines[1] if len(lines) > 1 else ""


def run(d, args, origin, name, seen):
    d.get("%s/index.html#profileURL=%s/profile/%s" % (origin, origin, name))
    # The title is "speedscope" until a profile is imported, then "NAME -
    # speedscope": the file's name, or the name the file gives itself.
    wait_for(d, lambda drv: drv.title.endswith(" - speedscope"), "a title 'NAME - speedscope' (the profile imported)",
             origin, args.timeout)
    seen.append(("title", d.title))
    # With one profile there is no selector: its name is the toolbar's.
    names = d.execute_script(PROFILES_JS) or [shown(d)]
    seen.append(("profiles", " | ".join(names)))
    threads = [thread_of(n) for n in names]
    check(sorted(threads) == list(range(args.threads)), "threads %s, want 0..%d" % (sorted(threads), args.threads - 1))
    expect = {}
    for e in args.expect:
        t, fns = e.split("=", 1)
        expect[int(t)] = sorted(fns.split(","))
    # Each profile in turn ('n' shows the next), its flame chart in time
    # order ('1') then its Sandwich table ('3').
    for k, pname in enumerate(names):
        want_shown = pname + (" (%d/%d)" % (k + 1, len(names)) if len(names) > 1 else "")
        wait_for(d, lambda drv: shown(drv) == want_shown, "profile %d of %d shown" % (k + 1, len(names)), origin, 30)
        ActionChains(d).send_keys("1").perform()
        d.save_screenshot("%s-thread-%d.png" % (args.shots, threads[k]))
        ActionChains(d).send_keys("3").perform()
        wait_for(d, lambda drv: drv.execute_script(SANDWICH_JS), "the Sandwich table", origin, 30)
        fns = sorted(d.execute_script(SANDWICH_JS))
        seen.append(("thread %d" % threads[k], " ".join(fns)))
        if threads[k] in expect:
            check(fns == expect[threads[k]], "thread %d shows %s, want %s" % (threads[k], fns, expect[threads[k]]))
        if k == 0:
            d.save_screenshot("%s-sandwich.png" % args.shots)
        if k + 1 < len(names):
            ActionChains(d).send_keys("n").perform()
    seen.append(("screenshots", "%s-thread-*.png, %s-sandwich.png" % (args.shots, args.shots)))
    p = problems(d, origin)
    check(not p, "console: %s" % "\n  ".join(p[:10]))


def main():
    p = argparse.ArgumentParser()
    p.add_argument("app")
    p.add_argument("file")
    p.add_argument("shots")
    p.add_argument("--threads", type=int, required=True)
    p.add_argument("--expect", action="append", default=[])
    # How long speedscope may take to import (its Trace Event importer is
    # quadratic in the events of a thread): a bound for a hung page, not a
    # measure of anything.
    p.add_argument("--timeout", type=int, default=240)
    args = p.parse_args()
    try:
        app = installed_app(args.app)
    except Failed as e:
        sys.stderr.write("speedscope_check: %s\n" % e)
        sys.exit(1)
    server, origin, name = serve(app, os.path.abspath(args.file))
    try:
        run_in_chromium("speedscope_check", FLAGS, args.shots, lambda d, seen: run(d, args, origin, name, seen))
    finally:
        server.shutdown()


if __name__ == "__main__":
    main()
