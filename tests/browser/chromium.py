"""What the browser checks share (browser_check.py, speedscope_check.py): a
headless Chromium of its own -- Debian's chromium and chromium-driver,
through python3-selenium, a fresh profile removed afterwards (not one more
/tmp/org.chromium.Chromium.* per run), the console's messages kept -- and
the way a check ends: exit 1 with the reason and a screenshot of the page
on the first failed check, else what it saw, one "key: value" per line."""

import shutil
import sys
import tempfile

from selenium import webdriver
from selenium.webdriver.chrome.service import Service


class Failed(Exception):
    pass


def check(cond, why):
    if not cond:
        raise Failed(why)


def run_in_chromium(name, flags, shots, body):
    """Runs body(driver, seen) in a Chromium started with `flags`; `seen`
    collects (key, value) pairs to print. On Failed: SHOTS-failed.png, the
    reason on stderr as "NAME: reason", exit 1."""
    seen = []
    profile_dir = tempfile.mkdtemp(prefix="callscope-chromium-")
    o = webdriver.ChromeOptions()
    o.binary_location = "/usr/bin/chromium"
    for a in list(flags) + ["--user-data-dir=" + profile_dir]:
        o.add_argument(a)
    o.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    d = webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=o)
    try:
        body(d, seen)
    except Failed as e:
        try:
            d.save_screenshot("%s-failed.png" % shots)
        except Exception:
            pass
        sys.stderr.write("%s: %s\n" % (name, e))
        sys.exit(1)
    finally:
        d.quit()
        shutil.rmtree(profile_dir, ignore_errors=True)
    for k, v in seen:
        print("%s: %s" % (k, v))
