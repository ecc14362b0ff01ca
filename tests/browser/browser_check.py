#!/usr/bin/env python3
"""Opens a page callscope wrote in a real headless Chromium (Debian's
chromium + chromium-driver, through python3-selenium), uses it as a person
would, checks what shows, and writes screenshots for a person to look at.

    browser_check.py flame FILE SHOTS_PREFIX [--zoom NAME] [--search RE [--share PCT]] [--min-frames N]
    browser_check.py html FILE SHOTS_PREFIX [--function NAME] [--min-rows N]

Exits 1 with the reasons on the first failed check; prints what it saw
(one "key: value" per line) on success."""

import argparse
import sys

from selenium.common.exceptions import TimeoutException
from selenium.webdriver.common.action_chains import ActionChains
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.support.ui import WebDriverWait

sys.dont_write_bytecode = True  # importing chromium.py writes no __pycache__ into the source tree
from chromium import Failed, check, run_in_chromium  # noqa: E402

FLAGS = ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
         "--window-size=1300,1000", "--hide-scrollbars", "--no-first-run",
         # No network: the pages must need none.
         "--proxy-server=127.0.0.1:9", "--proxy-bypass-list=<-loopback>")


def console_errors(d):
    return [e["message"] for e in d.get_log("browser") if e["level"] in ("SEVERE", "ERROR")]


def wait_for(d, script, what, timeout=20):
    try:
        WebDriverWait(d, timeout).until(lambda drv: drv.execute_script(script))
    except TimeoutException:
        raise Failed("timed out waiting for " + what)


def shot(d, prefix, name, seen):
    path = "%s-%s.png" % (prefix, name)
    d.save_screenshot(path)
    seen.append(("screenshot", path))


def flame(d, args, seen):
    d.get("file://" + args.file)
    wait_for(d, "return !!window.callscopeFlame", "the flame graph's script")
    errors = console_errors(d)
    check(not errors, "console errors: %s" % errors)
    frames = d.find_elements(By.CSS_SELECTOR, "g.f")
    n = d.execute_script("return window.callscopeFlame.frames")
    check(len(frames) == n and n >= args.min_frames, "%d frames drawn, script sees %d, want >= %d" % (len(frames), n, args.min_frames))
    seen.append(("frames", n))
    width = float(d.find_element(By.CSS_SELECTOR, "svg").get_attribute("data-width"))
    shot(d, args.shots, "flame", seen)
    if args.zoom:
        target = None
        for g in frames:
            if g.get_attribute("data-n") == args.zoom:
                target = g
                break
        check(target is not None, "no frame named %r" % args.zoom)
        rect = target.find_element(By.TAG_NAME, "rect")
        before = float(rect.get_attribute("width"))
        ActionChains(d).move_to_element(rect).click().perform()
        after = float(rect.get_attribute("width"))
        check(abs(after - (width - 20)) < 0.5, "clicking %s: width %.2f -> %.2f, want %.2f" % (args.zoom, before, after, width - 20))
        hidden = d.execute_script("return [].filter.call(document.querySelectorAll('g.f'), g => g.style.display === 'none').length")
        seen.append(("zoom", "%s %.1f -> %.1f px, %d frames hidden" % (args.zoom, before, after, hidden)))
        check(d.find_element(By.CSS_SELECTOR, ".unzoom").value_of_css_property("opacity") == "1", "no Reset Zoom after zooming")
        details = d.find_element(By.CSS_SELECTOR, ".details").text
        check(args.zoom in details, "the details line does not describe the frame under the mouse: %r" % details)
        seen.append(("details", details))
        shot(d, args.shots, "flame-zoomed", seen)
        ActionChains(d).send_keys(Keys.ESCAPE).perform()
        check(abs(float(rect.get_attribute("width")) - before) < 0.01, "Escape did not reset the zoom")
    if args.search:
        d.find_element(By.CSS_SELECTOR, ".search").click()
        alert = d.switch_to.alert
        alert.send_keys(args.search)
        alert.accept()
        matched = d.find_element(By.CSS_SELECTOR, ".matched").text
        hits = len(d.find_elements(By.CSS_SELECTOR, "g.f.hit"))
        seen.append(("search", "%s: %s, %d highlighted" % (args.search, matched, hits)))
        check(matched.startswith("Matched: ") and hits > 0, "search %r: %r, %d frames highlighted" % (args.search, matched, hits))
        fill = d.find_element(By.CSS_SELECTOR, "g.f.hit rect").get_attribute("fill")
        check(fill == "rgb(230,0,230)", "a match is not highlighted: fill %s" % fill)
        if args.share is not None:
            pct = float(matched.split()[1].rstrip("%"))
            check(abs(pct - args.share) < 0.06, "search %r matched %.1f%%, want %.1f%%" % (args.search, pct, args.share))
        shot(d, args.shots, "flame-search", seen)
    errors = console_errors(d)
    check(not errors, "console errors: %s" % errors)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("kind", choices=["flame", "html"])
    p.add_argument("file")
    p.add_argument("shots")
    p.add_argument("--zoom")
    p.add_argument("--search")
    p.add_argument("--share", type=float)
    p.add_argument("--min-frames", type=int, default=1)
    p.add_argument("--function")
    p.add_argument("--min-rows", type=int, default=1)
    p.add_argument("--waits", action="append", default=[],
                   help="html: the summary's Longest waits must name this (a reason or a function); repeatable")
    args = p.parse_args()
    page = {"flame": flame, "html": html}[args.kind]
    run_in_chromium("browser_check", FLAGS, args.shots, lambda d, seen: page(d, args, seen))


def html(d, args, seen):
    d.get("file://" + args.file)
    wait_for(d, "return window.callscopeReport && window.callscopeReport.readyMs", "the report's script")
    errors = console_errors(d)
    check(not errors, "console errors: %s" % errors)
    seen.append(("first view", "%.0f ms after the page began loading" % d.execute_script("return window.callscopeReport.readyMs")))
    sections = d.execute_script("return window.callscopeReport.sections")
    seen.append(("sections", " ".join(sections)))
    for want in ("summary", "functions", "tree", "callers", "flame"):
        check(want in sections, "no %s section" % want)
    # Summary.
    text = d.find_element(By.ID, "summary").text
    check("command line" in text and "Threads" in text, "the summary lacks the run or the threads")
    if args.waits:
        heads = [h.text.strip() for h in d.find_elements(By.CSS_SELECTOR, "#summary th")]
        check(all(c in heads for c in ("running", "runnable", "blocked")),
              "the threads table lacks running/runnable/blocked: %s" % heads)
        check("Longest waits" in text, "the summary has no Longest waits")
        for w in args.waits:
            check(w in text, "the Longest waits do not name %r" % w)
        seen.append(("waits", "threads by state; longest waits name %s" % ", ".join(args.waits)))
    shot(d, args.shots, "summary", seen)
    # The flat profile: rows, sorting by a header click, filtering by typing.
    tab(d, "functions")
    rows = d.find_elements(By.CSS_SELECTOR, "#flat-table tbody tr")
    check(len(rows) >= args.min_rows, "%d rows in the flat profile, want >= %d" % (len(rows), args.min_rows))
    seen.append(("flat rows", len(rows)))
    calls_head = [h for h in d.find_elements(By.CSS_SELECTOR, "#flat-table th") if h.text.strip() == "calls"][0]
    calls_head.click()
    col = [h.text.strip().split()[0] for h in d.find_elements(By.CSS_SELECTOR, "#flat-table th")].index("calls")
    values = [int(r.find_elements(By.TAG_NAME, "td")[col].text.replace(",", "")) for r in d.find_elements(By.CSS_SELECTOR, "#flat-table tbody tr")]
    check(values == sorted(values, reverse=True), "a click on 'calls' did not sort by calls: %s" % values[:10])
    if args.function:
        box = d.find_element(By.CSS_SELECTOR, "#functions input[type=search]")
        box.send_keys(args.function)
        cells = [[c.text for c in r.find_elements(By.TAG_NAME, "td")[:2]] for r in d.find_elements(By.CSS_SELECTOR, "#flat-table tbody tr")]
        names = [c[0] for c in cells]
        check(names and args.function in names and all(args.function in c[0] or args.function in c[1] for c in cells),
              "filtering by %r shows %s" % (args.function, cells[:10]))
        seen.append(("filtered", "%s: %d rows" % (args.function, len(names))))
        shot(d, args.shots, "functions", seen)
        # Its callers and callees, from a click on its name.
        d.find_element(By.CSS_SELECTOR, "#flat-table tbody tr td.name a").click()
        wait_for(d, "return document.querySelectorAll('#callers-view table').length === 2", "callers and callees")
        seen.append(("callers", d.find_element(By.ID, "callers-view").text.replace("\n", " | ")[:300]))
        shot(d, args.shots, "callers", seen)
    else:
        shot(d, args.shots, "functions", seen)
    # The call tree: rows, opened on the heaviest path; per thread too.
    tab(d, "tree")
    rows = d.find_elements(By.CSS_SELECTOR, "#tree-view .row:not(.head)")
    check(len(rows) >= 2, "the call tree shows %d rows" % len(rows))
    seen.append(("tree rows", len(rows)))
    opts = d.find_elements(By.CSS_SELECTOR, "#tree-thread option")
    if len(opts) > 1:
        opts[1].click()
        check(len(d.find_elements(By.CSS_SELECTOR, "#tree-view .row:not(.head)")) >= 1, "a thread's tree is empty")
    shot(d, args.shots, "tree", seen)
    # The flame graph: frames, a click zooms.
    tab(d, "flame")
    frames = d.find_elements(By.CSS_SELECTOR, "#flame-holder g.f")
    check(len(frames) >= 2, "the flame graph has %d frames" % len(frames))
    # The widest frame not already as wide as the graph.
    rects = [g.find_element(By.TAG_NAME, "rect") for g in frames]
    widths = [float(r.get_attribute("width")) for r in rects]
    full = max(widths)
    i = max((w, i) for i, w in enumerate(widths) if w < full - 1)[1] if any(w < full - 1 for w in widths) else 0
    target = rects[i]
    before = widths[i]
    ActionChains(d).move_to_element(target).click().perform()
    after = float(target.get_attribute("width"))
    check(abs(after - full) < 0.5, "a click on a frame did not zoom it to the full width (%.1f -> %.1f, full %.1f)" % (before, after, full))
    seen.append(("flame", "%d frames; zoom %.1f -> %.1f px" % (len(frames), before, after)))
    shot(d, args.shots, "flame", seen)
    if "timeline" in sections:
        tab(d, "timeline")
        drawn = d.execute_script("return window.callscopeReport.timeline.drawnCalls()")
        check(drawn > 0, "the timeline drew no call")
        v = d.execute_script("return window.callscopeReport.timeline.view()")
        canvas = d.find_element(By.ID, "timeline-canvas")
        # Zoom in with the wheel over the canvas, then drag.
        for _ in range(6):
            d.execute_script("arguments[0].dispatchEvent(new WheelEvent('wheel', {deltaY: -100, clientX: 300, clientY: 40, bubbles: true, cancelable: true}))", canvas)
        z = d.execute_script("return window.callscopeReport.timeline.view()")
        check(z[1] - z[0] < v[1] - v[0], "the wheel did not zoom: %s -> %s" % (v, z))
        ActionChains(d).move_to_element_with_offset(canvas, 0, 0).click_and_hold().move_by_offset(-200, 0).release().perform()
        seen.append(("timeline", "%d calls drawn; view %s -> %s" % (drawn, v, d.execute_script("return window.callscopeReport.timeline.view()"))))
        d.execute_script("window.callscopeReport.timeline.set(arguments[0], arguments[1])", v[0], v[1])
        if args.waits:
            # Each thread's state strip under its calls: some of it asleep
            # (the fixture's waits), some running.
            strips = d.execute_script("return window.callscopeReport.timeline.stateStrips")
            check(strips >= 2, "%d threads have a state strip in the timeline" % strips)
            codes = d.execute_script(
                "var t = window.callscopeReport.timeline, v = t.view(), c = [0, 0, 0, 0, 0];"
                "for (var i = 0; i < t.threads; ++i) for (var k = 0; k < 400; ++k) c[t.stateAt(i, (v[1] - v[0]) * k / 400)]++;"
                "return c;")
            check(codes[1] > 0 and codes[3] > 0, "the state strips show no running or no sleeping: %s" % codes)
            seen.append(("state strips", "%d threads; buckets by state (none, running, runnable, sleeping, D): %s" % (strips, codes)))
        shot(d, args.shots, "timeline", seen)
    for extra in ("stack", "snapshots", "memory"):
        if extra in sections:
            tab(d, extra)
            check(d.find_elements(By.CSS_SELECTOR, "#%s table tbody tr" % extra), "the %s view has no rows" % extra)
            shot(d, args.shots, extra, seen)
    errors = console_errors(d)
    check(not errors, "console errors: %s" % errors)


def tab(d, name):
    d.find_element(By.CSS_SELECTOR, "nav button[data-section=%s]" % name).click()
    check("active" in d.find_element(By.ID, name).get_attribute("class"), "the %s tab did not open" % name)


if __name__ == "__main__":
    main()
