// callscope's flame graph: zoom, search and details for the SVG that
// export/flame.cpp writes (frames are <g class="f"> with data-s, data-w:
// start and width in weight units, data-d: depth; a <title> each). Also
// used inside the HTML report, on an SVG it embeds. No dependencies.
"use strict";
(function () {
  function setup(svg) {
    if (svg.callscopeFlame) return svg.callscopeFlame;
    var W = +svg.getAttribute("data-width"), pad = 10;
    var frames = [].slice.call(svg.querySelectorAll("g.f")).map(function (g) {
      var r = g.querySelector("rect"), t = g.querySelector("text");
      return {g: g, r: r, t: t, s: +g.getAttribute("data-s"), w: +g.getAttribute("data-w"),
              d: +g.getAttribute("data-d"), name: g.getAttribute("data-n"),
              title: g.querySelector("title").textContent, fill: r.getAttribute("fill")};
    });
    var root = frames[0];
    var details = svg.querySelector(".details"), matched = svg.querySelector(".matched");
    var unzoom = svg.querySelector(".unzoom"), unsearch = svg.querySelector(".unsearch");
    var zoomed = root, searched = null;

    function fit(f, px) {
      var n = Math.floor((px - 6) / 7);
      if (n < 3) return "";
      return f.name.length <= n ? f.name : f.name.slice(0, n - 2) + "..";
    }
    function place(f, x, w) {
      f.r.setAttribute("x", x.toFixed(2));
      f.r.setAttribute("width", w.toFixed(2));
      f.t.setAttribute("x", (x + 3).toFixed(2));
      f.t.textContent = fit(f, w);
    }
    function zoom(target) {
      zoomed = target;
      var end = target.s + target.w, scale = (W - 2 * pad) / target.w;
      frames.forEach(function (f) {
        var inside = f.s >= target.s && f.s + f.w <= end && f.d >= target.d;
        var above = f.d < target.d && f.s <= target.s && f.s + f.w >= end;
        if (inside) {
          f.g.style.display = "";
          f.g.classList.remove("parent");
          place(f, pad + (f.s - target.s) * scale, f.w * scale);
        } else if (above) {
          f.g.style.display = "";
          f.g.classList.add("parent");
          place(f, pad, W - 2 * pad);
        } else {
          f.g.style.display = "none";
        }
      });
      unzoom.style.opacity = target === root ? "0" : "1";
      if (searched) search(searched);
    }
    function search(term) {
      var re;
      try {
        re = new RegExp(term);
      } catch (e) {
        matched.textContent = "bad pattern: " + e.message;
        return null;
      }
      searched = term;
      var hits = frames.filter(function (f) { return f !== root && re.test(f.name); });
      frames.forEach(function (f) { f.r.setAttribute("fill", f.fill); f.g.classList.remove("hit"); });
      hits.forEach(function (f) { f.r.setAttribute("fill", "rgb(230,0,230)"); f.g.classList.add("hit"); });
      // The share matched, inside the zoomed frame: nested matches count once.
      var end = zoomed.s + zoomed.w, covered = 0, upto = -1;
      hits.filter(function (f) { return f.s < end && f.s + f.w > zoomed.s && f.d >= zoomed.d; })
          .sort(function (a, b) { return a.s - b.s || b.w - a.w; })
          .forEach(function (f) {
            var s = Math.max(f.s, zoomed.s, upto), e = Math.min(f.s + f.w, end);
            if (e > s) { covered += e - s; upto = e; }
          });
      var pct = zoomed.w ? 100 * covered / zoomed.w : 0;
      matched.textContent = "Matched: " + pct.toFixed(1) + "% (" + hits.length + " frames)";
      unsearch.style.opacity = "1";
      return pct;
    }
    function clearSearch() {
      searched = null;
      frames.forEach(function (f) { f.r.setAttribute("fill", f.fill); f.g.classList.remove("hit"); });
      matched.textContent = "";
      unsearch.style.opacity = "0";
    }
    frames.forEach(function (f) {
      f.g.addEventListener("click", function () { zoom(f); });
      f.g.addEventListener("mouseover", function () { details.textContent = f.title; });
      f.g.addEventListener("mouseout", function () { details.textContent = " "; });
    });
    unzoom.addEventListener("click", function () { zoom(root); });
    unsearch.addEventListener("click", clearSearch);
    svg.querySelector(".search").addEventListener("click", function () {
      var term = window.prompt("Search for a function (regular expression)", searched || "");
      if (term) search(term);
    });
    var api = {
      frames: frames.length,
      zoom: function (i) { zoom(frames[i]); },
      zoomTo: function (name) {
        for (var i = 0; i < frames.length; ++i) if (frames[i].name === name) { zoom(frames[i]); return i; }
        return -1;
      },
      reset: function () { zoom(root); clearSearch(); },
      search: search
    };
    svg.callscopeFlame = api;
    return api;
  }
  window.callscopeFlameSetup = setup;
  // A flame graph opened on its own (not inside the HTML report).
  var svg = document.documentElement;
  if (svg.localName === "svg" && svg.classList.contains("callscope-flame")) {
    var api = setup(svg);
    window.callscopeFlame = api;
    document.addEventListener("keydown", function (e) {
      if ((e.ctrlKey || e.metaKey) && e.key === "f") {
        e.preventDefault();
        svg.querySelector(".search").dispatchEvent(new MouseEvent("click"));
      } else if (e.key === "Escape") {
        api.reset();
      }
    });
  }
})();
