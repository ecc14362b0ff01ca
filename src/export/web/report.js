// callscope's HTML report: draws the views of the data export/html.cpp
// writes into the page (#callscope-data). Ours, no dependencies; each view
// is built the first time it is shown.
"use strict";
(function () {
  var D = JSON.parse(document.getElementById("callscope-data").textContent);
  var F = D.functions;  // [name, module, file, line]
  var info = D.info || {};

  // ---- helpers ----
  function el(tag, attrs, kids) {
    var e = document.createElement(tag);
    if (attrs) for (var k in attrs) {
      if (k === "text") e.textContent = attrs[k];
      else if (k === "cls") e.className = attrs[k];
      else if (k.slice(0, 2) === "on") e.addEventListener(k.slice(2), attrs[k]);
      else e.setAttribute(k, attrs[k]);
    }
    (kids || []).forEach(function (c) { if (c != null) e.appendChild(typeof c === "string" ? document.createTextNode(c) : c); });
    return e;
  }
  function fmtNs(ns) {
    if (ns == null) return "";
    var a = Math.abs(ns);
    if (a < 1e3) return Math.round(ns) + " ns";
    if (a < 1e6) return (ns / 1e3).toPrecision(3) + " \u00b5s";
    if (a < 1e9) return (ns / 1e6).toPrecision(3) + " ms";
    return (ns / 1e9).toFixed(3) + " s";
  }
  function fmtBytes(b) {
    if (b == null) return "";
    var u = ["B", "KiB", "MiB", "GiB", "TiB"], i = 0, v = b;
    while (Math.abs(v) >= 1024 && i < u.length - 1) { v /= 1024; ++i; }
    return (i ? v.toPrecision(3) : v) + " " + u[i];
  }
  function fmtCount(n) { return n == null ? "" : Number(n).toLocaleString("en-US"); }
  function pct(part, whole) { return whole ? (100 * part / whole).toFixed(1) + "%" : ""; }
  function fname(i) { return i < 0 ? "(outside any traced function)" : F[i][0]; }
  function floc(i) {
    if (i < 0 || !F[i][2]) return "";
    var file = F[i][2], slash = file.lastIndexOf("/");
    return file.slice(slash + 1) + (F[i][3] ? ":" + F[i][3] : "");
  }
  function threadLabel(t) {
    for (var i = 0; i < D.threads.length; ++i) if (D.threads[i].thread === t) return "[" + D.threads[i].label + "]";
    return "[thread " + t + "]";
  }
  function hue(s) {
    var h = 2166136261;
    for (var i = 0; i < s.length; ++i) { h ^= s.charCodeAt(i); h = Math.imul(h, 16777619); }
    return h >>> 0;
  }
  function fnColor(i, alpha) {
    var h = hue(i < 0 ? "?" : F[i][0]);
    var r = 205 + (h >>> 16 & 0xff) * 50 / 255, g = (h & 0xff) * 230 / 255, b = (h >>> 8 & 0xff) * 55 / 255;
    return "rgba(" + (r | 0) + "," + (g | 0) + "," + (b | 0) + "," + alpha + ")";
  }
  function kv(rows) {
    return el("table", {cls: "kv"}, rows.filter(function (r) { return r[1] !== "" && r[1] != null; }).map(function (r) {
      return el("tr", null, [el("td", {text: r[0]}), el("td", {text: String(r[1])})]);
    }));
  }
  // A sortable table: cols [{title, key(row)->value, show(row)->text|node, cls, num}], rows.
  function table(cols, rows, opts) {
    opts = opts || {};
    var sortCol = opts.sort == null ? -1 : opts.sort, desc = true, limit = opts.limit || 2000;
    var wrap = el("div", {cls: "tablewrap"}), tbl = el("table"), thead = el("thead"), tbody = el("tbody");
    var note = el("div", {cls: "note"});
    var heads = cols.map(function (c, i) {
      var th = el("th", {cls: (c.cls || "") + " sortable", text: c.title, title: c.tip || ""});
      th.addEventListener("click", function () {
        if (sortCol === i) desc = !desc; else { sortCol = i; desc = c.num !== false; }
        draw();
      });
      return th;
    });
    thead.appendChild(el("tr", null, heads));
    tbl.appendChild(thead);
    tbl.appendChild(tbody);
    wrap.appendChild(tbl);
    var shown = rows;
    function draw() {
      var r = shown.slice();
      if (sortCol >= 0) {
        var key = cols[sortCol].key;
        r.sort(function (a, b) {
          var x = key(a), y = key(b);
          var c = x < y ? -1 : x > y ? 1 : 0;
          return desc ? -c : c;
        });
      }
      heads.forEach(function (h, i) {
        h.classList.toggle("sorted-desc", i === sortCol && desc);
        h.classList.toggle("sorted-asc", i === sortCol && !desc);
      });
      tbody.textContent = "";
      var frag = document.createDocumentFragment();
      r.slice(0, limit).forEach(function (row) {
        frag.appendChild(el("tr", null, cols.map(function (c) {
          var v = c.show ? c.show(row) : c.key(row);
          var td = el("td", {cls: c.cls || ""});
          if (v instanceof Node) td.appendChild(v); else td.textContent = v;
          return td;
        })));
      });
      tbody.appendChild(frag);
      note.textContent = r.length > limit ? "showing " + limit + " of " + fmtCount(r.length) + " rows (filter to see others)" : "";
    }
    draw();
    var box = el("div", null, [wrap, note]);
    box.setRows = function (r) { shown = r; draw(); };
    box.table = tbl;
    return box;
  }
  function matcher(text) {
    if (!text) return function () { return true; };
    try {
      var re = new RegExp(text, "i");
      return function (s) { return re.test(s); };
    } catch (e) {
      var t = text.toLowerCase();
      return function (s) { return s.toLowerCase().indexOf(t) >= 0; };
    }
  }

  // ---- layout: header, tabs, sections ----
  var exe = info.processes && info.processes.length ? info.processes[0].exe : "";
  var sections = [], byId = {};
  var header = el("header", null, [
    el("h1", {text: D.title}),
    el("div", {cls: "sub", text: [info.trace, D.mode === "profile" ? "profile mode" : "every call recorded",
                                  fmtNs(info.duration_ns), D.filters].filter(Boolean).join(" \u00b7 ")})]);
  var nav = el("nav");
  header.appendChild(nav);
  var main = el("main");
  document.body.appendChild(header);
  document.body.appendChild(main);
  var tip = el("div", {cls: "tip"});
  document.body.appendChild(tip);

  function addSection(id, title, render) {
    var s = {id: id, title: title, render: render, node: el("section", {id: id}), built: false};
    s.button = el("button", {text: title, "data-section": id, onclick: function () { show(id); }});
    nav.appendChild(s.button);
    main.appendChild(s.node);
    sections.push(s);
    byId[id] = s;
  }
  function show(id) {
    var s = byId[id];
    if (!s) return;
    sections.forEach(function (x) {
      x.node.classList.toggle("active", x === s);
      x.button.classList.toggle("active", x === s);
    });
    if (!s.built) { s.built = true; s.render(s.node); }
    if (s.onShow) s.onShow();
    try {
      if (location.hash !== "#" + id) history.replaceState(null, "", "#" + id);
    } catch (e) { /* some browsers refuse it for file: pages */ }
  }

  // ---- summary ----
  addSection("summary", "Summary", function (node) {
    node.appendChild(el("h2", {text: "Run"}));
    var started = info.start_realtime_ns ? new Date(info.start_realtime_ns / 1e6).toISOString().replace("T", " ").slice(0, 19) + " UTC" : "";
    node.appendChild(kv([
      ["program", exe], ["command line", (info.argv || []).join(" ")], ["directory", info.cwd],
      ["recorded", started], ["mode", D.mode === "profile" ? "profile: call trees kept in the process" : "record: every call"],
      ["duration", fmtNs(info.duration_ns)], ["ended", info.ended],
      ["calls", fmtCount(info.calls)], ["events", D.mode === "profile" ? "" : fmtCount(info.events)],
      ["lost events", info.lost_events ? fmtCount(info.lost_events) : "none"],
      ["trace", info.trace + " (" + fmtBytes(info.file_bytes) + ", format " + info.format_version + ")"],
      ["shown", D.filters || "everything"], ["callscope", info.tool_version]]));
    if (info.lost_events)
      node.appendChild(el("div", {cls: "warn", text: fmtCount(info.lost_events) + " events were lost; the trace marks where, and the time of each gap counts as \u201c[lost events]\u201d."}));
    if (info.unwound && info.hooked_calls && info.unwound_calls)
      node.appendChild(el("div", {cls: "warn", text: "This trace mixes " + fmtCount(info.hooked_calls) + " calls from hooks with " + fmtCount(info.unwound_calls) + " frames unwound at allocations in " + fmtCount(info.unwound_processes) + " of its " + (info.processes || []).length + " processes: those frames say where memory was allocated, not how often or how long functions ran."}));
    else if (info.unwound)
      node.appendChild(el("div", {cls: "warn", text: "The calls of this trace were unwound at allocations: frames say where memory was allocated, not how often or how long functions ran."}));
    (info.problems || []).forEach(function (p) { node.appendChild(el("div", {cls: "warn", text: "damaged trace: " + p})); });
    node.appendChild(el("h2", {text: "Processes"}));
    node.appendChild(table([
      {title: "pid", key: function (p) { return p.pid; }},
      {title: "parent", key: function (p) { return p.ppid; }},
      {title: "ended", key: function (p) { return p.ended; }, cls: "left", num: false},
      {title: "command line", key: function (p) { return (p.argv || []).join(" ") || p.exe; }, cls: "name", num: false}],
      info.processes || []));
    node.appendChild(el("h2", {text: "Threads"}));
    var ths = (info.threads || []).map(function (t, i) { t.index = i; return t; });
    var thCols = [
      {title: "#", key: function (t) { return t.index; }},
      {title: "pid", key: function (t) { var p = (info.processes || [])[t.process_index]; return p ? p.pid : ""; }},
      {title: "tid", key: function (t) { return t.tid; }},
      {title: "name", key: function (t) { return t.name; }, cls: "left", num: false},
      {title: "calls", key: function (t) { return t.calls; }, show: function (t) { return fmtCount(t.calls); }},
      {title: "lost", key: function (t) { return t.lost_events; }, show: function (t) { return t.lost_events ? fmtCount(t.lost_events) : ""; }},
      {title: "duration", key: function (t) { return t.duration_ns; }, show: function (t) { return fmtNs(t.duration_ns); }}];
    // Running or waiting (the kernel's context switches): each thread's
    // time on the CPU, waiting for one, and blocked.
    var states = ths.some(function (t) { return t.running_ns != null; });
    if (states) {
      var life = function (t) { return (t.running_ns || 0) + (t.runnable_ns || 0) + (t.blocked_ns || 0); };
      thCols.push(
        {title: "running", key: function (t) { return t.running_ns; }, show: function (t) { return t.running_ns == null ? "" : fmtNs(t.running_ns) + " (" + pct(t.running_ns, life(t)) + ")"; }},
        {title: "runnable", key: function (t) { return t.runnable_ns; }, show: function (t) { return t.runnable_ns == null ? "" : fmtNs(t.runnable_ns) + " (" + pct(t.runnable_ns, life(t)) + ")"; }},
        {title: "blocked", key: function (t) { return t.blocked_ns; }, show: function (t) { return t.blocked_ns == null ? "" : fmtNs(t.blocked_ns) + " (" + pct(t.blocked_ns, life(t)) + ")"; }});
    }
    node.appendChild(table(thCols, ths));
    if (D.waits && D.waits.length) {
      node.appendChild(el("h2", {text: "Longest waits"}));
      node.appendChild(el("div", {cls: "note", text: "Time off the CPU by thread, call path and reason: [runnable] waited for a CPU; a system call ([futex], [fsync D] when it slept uninterruptibly) or a state ([sleeping], [blocked]) is what it blocked in. \u201ccallscope report --wait\u201d and \u201cflame --wait\u201d give all of them."}));
      node.appendChild(table([
        {title: "wait", key: function (w) { return w.wait_ns; }, show: function (w) { return fmtNs(w.wait_ns); }},
        {title: "waits", key: function (w) { return w.count; }, show: function (w) { return fmtCount(w.count); }},
        {title: "longest", key: function (w) { return w.max_ns; }, show: function (w) { return fmtNs(w.max_ns); }},
        {title: "thread", key: function (w) { return w.thread; }},
        {title: "reason", key: function (w) { return w.reason; }, cls: "left", num: false},
        {title: "call path", key: function (w) { return w.path.length ? w.path.join(" \u2192 ") : "(outside any traced function)"; }, cls: "name", num: false}],
        D.waits));
    }
    if (D.snapshots) {
      node.appendChild(el("h2", {text: "Snapshots"}));
      node.appendChild(el("div", {cls: "chips"}, D.snapshots.map(function (s) { return el("span", {text: s.label}); })));
    }
  });

  // ---- the flat profile ----
  var observed = D.observed_ns || 1;
  addSection("functions", "Functions", function (node) {
    node.appendChild(el("div", {cls: "note", text: "Per function, all threads shown. Total counts each outermost call once (recursion is not added twice); self is the time in the function itself. Click a name for its callers and callees."}));
    var filter = el("input", {type: "search", placeholder: "filter: function or module (regular expression)"});
    var count = el("span", {cls: "note"});
    node.appendChild(el("div", {cls: "controls"}, [filter, count]));
    var rows = D.flat;
    var t = table([
      {title: "function", key: function (r) { return F[r[0]][0]; }, cls: "name", num: false,
       show: function (r) { return el("a", {text: F[r[0]][0], onclick: function () { callersOf(r[0]); }}); }},
      {title: "module", key: function (r) { return F[r[0]][1]; }, cls: "left", num: false},
      {title: "calls", key: function (r) { return r[1]; }, show: function (r) { return fmtCount(r[1]); }},
      {title: "total", key: function (r) { return r[2]; }, show: function (r) { return fmtNs(r[2]); }},
      {title: "total %", key: function (r) { return r[2]; }, show: function (r) {
        return el("span", null, [el("span", {cls: "bar", style: "width:" + Math.min(60, 60 * r[2] / observed) + "px"}), pct(r[2], observed)]); }},
      {title: "self", key: function (r) { return r[3]; }, show: function (r) { return fmtNs(r[3]); }},
      {title: "self %", key: function (r) { return r[3]; }, show: function (r) { return pct(r[3], observed); }},
      {title: "avg", key: function (r) { return r[1] ? r[2] / r[1] : 0; }, show: function (r) { return r[1] ? fmtNs(r[2] / r[1]) : ""; }},
      {title: "min", key: function (r) { return r[4]; }, show: function (r) { return fmtNs(r[4]); }},
      {title: "max", key: function (r) { return r[5]; }, show: function (r) { return fmtNs(r[5]); }},
      {title: "location", key: function (r) { return floc(r[0]); }, cls: "left", num: false}],
      rows, {sort: 3, limit: 1500});
    node.appendChild(t);
    t.table.id = "flat-table";
    function apply() {
      var m = matcher(filter.value.trim());
      var r = rows.filter(function (x) { return m(F[x[0]][0]) || m(F[x[0]][1]); });
      t.setRows(r);
      count.textContent = fmtCount(r.length) + " of " + fmtCount(rows.length) + " functions";
    }
    filter.addEventListener("input", apply);
    apply();
    if (D.flat_left_out) node.appendChild(el("div", {cls: "note", text: fmtCount(D.flat_left_out) + " functions with the least total time are not listed."}));
  });

  // ---- call trees ----
  function treeModel(nodes) {
    var kids = nodes.map(function () { return []; });
    for (var i = 1; i < nodes.length; ++i) kids[nodes[i][0]].push(i);
    kids.forEach(function (k) { k.sort(function (a, b) { return nodes[b][4] - nodes[a][4]; }); });
    return {nodes: nodes, kids: kids};
  }
  var perThread = treeModel(D.tree), merged = treeModel(D.merged_tree);
  addSection("tree", "Call tree", function (node) {
    node.appendChild(el("div", {cls: "note", text: "One row per call path. Click \u25b8 to open a path; the heaviest paths are open at first. Find expands the paths to every matching function."}));
    var pick = el("select", {id: "tree-thread"});
    pick.appendChild(el("option", {value: "merged", text: "all threads, merged"}));
    perThread.kids[0].forEach(function (i) {
      var t = perThread.nodes[i][2];
      pick.appendChild(el("option", {value: String(i), text: threadLabel(t).slice(1, -1)}));
    });
    var find = el("input", {type: "search", placeholder: "find function (regular expression)"});
    var found = el("span", {cls: "note"});
    node.appendChild(el("div", {cls: "controls"}, [el("label", {text: "threads "}), pick, find, found]));
    var box = el("div", {cls: "tree", id: "tree-view"});
    node.appendChild(box);
    if (D.tree_left_out) node.appendChild(el("div", {cls: "note", text: fmtCount(D.tree_left_out) + " call paths with the least total time are left out of the trees."}));
    var model, rootId, rootTotal;
    function row(id, depth) {
      var n = model.nodes[id], has = model.kids[id].length > 0;
      var toggle = el("span", {cls: "toggle", text: has ? "\u25b8" : ""});
      var name = n[1] < 0 ? threadLabel(n[2]) : F[n[1]][0];
      var r = el("div", {cls: "row", "data-node": id}, [
        el("span", {cls: "num", text: fmtNs(n[4])}),
        el("span", {cls: "num", text: pct(n[4], rootTotal)}),
        el("span", {cls: "num", text: fmtNs(n[5])}),
        el("span", {cls: "num", text: fmtCount(n[3])}),
        el("span", {cls: "label", style: "padding-left:" + (depth * 14) + "px"}, [toggle, name,
          el("span", {cls: "note", text: n[1] >= 0 && floc(n[1]) ? "  " + floc(n[1]) : ""})])]);
      var kidsBox = null;
      r.open = function () {
        if (!has || kidsBox) return kidsBox;
        kidsBox = el("div");
        model.kids[id].forEach(function (k) { kidsBox.appendChild(row(k, depth + 1)); });
        r.parentNode.insertBefore(kidsBox, r.nextSibling);
        toggle.textContent = "\u25be";
        return kidsBox;
      };
      r.close = function () {
        if (kidsBox) { kidsBox.remove(); kidsBox = null; toggle.textContent = "\u25b8"; }
      };
      toggle.addEventListener("click", function () { if (kidsBox) r.close(); else r.open(); });
      r.node = id;
      return r;
    }
    function draw() {
      box.textContent = "";
      box.appendChild(el("div", {cls: "row head"}, [el("span", {cls: "num", text: "total"}), el("span", {cls: "num", text: "%"}),
        el("span", {cls: "num", text: "self"}), el("span", {cls: "num", text: "calls"}), el("span", {cls: "label", text: "function"})]));
      var list = el("div");
      box.appendChild(list);
      var top = rootId === 0 ? model.kids[0] : [rootId];
      rootTotal = 0;
      top.forEach(function (i) { rootTotal += model.nodes[i][4]; });
      top.forEach(function (i) { var r = row(i, 0); list.appendChild(r); openHeavy(r, 0); });
    }
    function openHeavy(r, depth) {
      if (depth > 8) return;
      var k = r.open();
      if (!k) return;
      var first = k.firstChild;
      if (first && model.nodes[first.node][4] >= 0.1 * rootTotal) openHeavy(first, depth + 1);
    }
    function select() {
      if (pick.value === "merged") { model = merged; rootId = 0; } else { model = perThread; rootId = +pick.value; }
      draw();
    }
    pick.addEventListener("change", select);
    find.addEventListener("change", function () {
      var m = matcher(find.value.trim());
      if (!find.value.trim()) return;
      var hits = [];
      for (var i = 1; i < model.nodes.length && hits.length < 200; ++i)
        if (model.nodes[i][1] >= 0 && m(F[model.nodes[i][1]][0])) hits.push(i);
      hits.forEach(function (h) {
        var chain = [];
        for (var x = h; x > 0; x = model.nodes[x][0]) chain.unshift(x);
        var scope = box;
        chain.forEach(function (x) {
          var r = scope.querySelector('[data-node="' + x + '"]');
          if (!r) return;
          if (x !== h) r.open(); else r.style.background = "var(--hit)";
          scope = r.parentNode;
        });
      });
      found.textContent = hits.length + " paths found";
    });
    select();
  });

  // ---- callers and callees ----
  var pendingFn = null;
  function callersOf(fn) {
    pendingFn = fn;
    show("callers");
  }
  addSection("callers", "Callers & callees", function (node) {
    node.appendChild(el("div", {cls: "note", text: "Who called a function, and what it called: calls and the total time of those calls, all threads."}));
    var names = {};
    D.flat.forEach(function (r) { names[F[r[0]][0] + (F[r[0]][1] ? "  (" + F[r[0]][1] + ")" : "")] = r[0]; });
    var list = el("datalist", {id: "fn-names"}, Object.keys(names).sort().slice(0, 5000).map(function (n) { return el("option", {value: n}); }));
    var input = el("input", {type: "text", list: "fn-names", id: "callers-fn", placeholder: "function", style: "width:420px"});
    node.appendChild(el("div", {cls: "controls"}, [input, list]));
    var out = el("div", {cls: "twocol", id: "callers-view"});
    node.appendChild(out);
    function render(fn) {
      out.textContent = "";
      if (fn == null) return;
      input.value = F[fn][0] + (F[fn][1] ? "  (" + F[fn][1] + ")" : "");
      var callers = [], callees = [];
      D.edges.forEach(function (e) {
        if (e[1] === fn) callers.push(e);
        if (e[0] === fn) callees.push(e);
      });
      function side(title, rows, other) {
        return el("div", null, [el("h2", {text: title + " of " + F[fn][0]}), table([
          {title: title === "Callers" ? "caller" : "callee", key: function (e) { return fname(e[other]); }, cls: "name", num: false,
           show: function (e) { return e[other] < 0 ? fname(-1) : el("a", {text: fname(e[other]), onclick: function () { render(e[other]); }}); }},
          {title: "calls", key: function (e) { return e[2]; }, show: function (e) { return fmtCount(e[2]); }},
          {title: "total", key: function (e) { return e[3]; }, show: function (e) { return fmtNs(e[3]); }}],
          rows, {sort: 2})]);
      }
      out.appendChild(side("Callers", callers, 0));
      out.appendChild(side("Callees", callees, 1));
      if (D.edges_left_out)
        out.appendChild(el("div", {cls: "note", text: fmtCount(D.edges_left_out) + " caller\u2013callee pairs with the least time are left out of the page."}));
      if (callers.some(function (e) { return e[0] === fn; }))
        out.appendChild(el("div", {cls: "note", text: F[fn][0] + " is recursive: each of its calls from itself counts on its own, so the times of nested calls overlap (the Functions tab counts each outermost call once)."}));
    }
    input.addEventListener("change", function () { if (input.value in names) render(names[input.value]); });
    byId.callers.onShow = function () {
      if (pendingFn != null) { render(pendingFn); pendingFn = null; }
      else if (!out.firstChild && D.flat.length) render(D.flat[0][0]);
    };
  });

  // ---- flame graph ----
  addSection("flame", "Flame graph", function (node) {
    node.appendChild(el("div", {cls: "note", text: "Click a frame to zoom, Search to highlight functions (the share matched shows at the bottom right), Reset Zoom or Escape to go back. Widths: total time."}));
    var holder = el("div", {id: "flame-holder"});
    var svg = document.querySelector("#flame-svg svg");
    holder.appendChild(svg);
    node.appendChild(holder);
    if (D.flame_left_out) node.appendChild(el("div", {cls: "note", text: fmtCount(D.flame_left_out) + " frames too narrow to draw are left out ('callscope flame' draws more)."}));
    var api = window.callscopeFlameSetup(svg);
    document.addEventListener("keydown", function (e) { if (e.key === "Escape" && byId.flame.node.classList.contains("active")) api.reset(); });
    window.callscopeReport.flame = api;
  });

  // ---- timeline ----
  if (D.timeline) addSection("timeline", "Timeline", function (node) {
    var T = D.timeline;
    var note = "Each thread's calls in time, a lane per depth" +
               (T.threads.some(function (t) { return t.state; }) ? ", under a strip of its state (green running, yellow runnable, grey sleeping or blocked, red uninterruptible: the disk)" : "") +
               ". Scroll to zoom, drag to move, double-click to see the whole run. ";
    note += T.detail.length < T.calls
      ? "Drawn one by one: the " + fmtCount(T.detail.length) + " longest of " + fmtCount(T.calls) + " calls (all of at least " + fmtNs(T.detail_min_ns) +
        "); shorter calls are drawn per time bucket: the function running at its middle, shaded by how busy the depth was (hover for it). 'callscope html --from T --to T' shows every call of a window."
      : "Every call is drawn.";
    node.appendChild(el("div", {cls: "note", text: note}));
    if (T.threads_left_out) node.appendChild(el("div", {cls: "note", text: fmtCount(T.threads_left_out) + " more threads have no timeline here: choose them with -t."}));
    if (T.too_deep) node.appendChild(el("div", {cls: "note", text: fmtCount(T.too_deep) + " calls deeper than " + T.max_depth + " levels are not drawn."}));
    var range = el("span", {cls: "note"});
    var canvas = el("canvas", {id: "timeline-canvas"});
    node.appendChild(el("div", {cls: "controls"}, [
      el("button", {cls: "small", text: "\u2212", title: "zoom out", onclick: function () { zoomBy(2, 0.5); }}),
      el("button", {cls: "small", text: "+", title: "zoom in", onclick: function () { zoomBy(0.5, 0.5); }}),
      el("button", {cls: "small", text: "whole run", onclick: function () { setView(T.from_ns, T.to_ns); }}), range]));
    var wrap = el("div", {cls: "timeline"}, [canvas]);
    node.appendChild(wrap);
    var LANE = 14, HEAD = 18, AXIS = 22;
    // Decode the raster and split the detail calls per thread.
    function un(a, Arr) {
      var n = 0, i;
      for (i = 1; i < a.length; i += 2) n += a[i];
      var out = new Arr(n), p = 0;
      for (i = 0; i < a.length; i += 2) for (var k = 0; k < a[i + 1]; ++k) out[p++] = a[i];
      return out;
    }
    var threads = T.threads.map(function (t) {
      var lanes = t.lanes.map(function (l) {
        return {fn: un(l.fn, Int32Array), busy: un(l.busy, Uint8Array)};
      });
      // Its state under its calls (the kernel's context switches), per bucket.
      var state = t.state ? {code: un(t.state, Uint8Array), off: un(t.off_cpu, Uint8Array)} : null;
      return {label: t.label, lanes: lanes, calls: [], state: state};
    });
    var STRIP = 6;
    var STATE_COLOR = [null, "#3aa655", "#e0b000", "#9aa7b8", "#d9534f"];
    var STATE_NAME = ["", "running", "runnable (waiting for a CPU)", "sleeping or blocked", "uninterruptible (the disk, mostly)"];
    var prev = -1, at = 0;
    T.detail.forEach(function (c) {
      if (c[0] !== prev) { prev = c[0]; at = 0; }
      at += c[1];
      threads[c[0]].calls.push({s: at, e: at + c[2], d: c[3], fn: c[4]});
    });
    var tops = [], y = AXIS;
    threads.forEach(function (t) { tops.push(y); y += HEAD + (t.state ? STRIP : 0) + Math.max(1, t.lanes.length) * LANE + 6; });
    var height = Math.min(y, 6000);
    var v0 = T.from_ns, v1 = T.to_ns, W = 800, ctx = canvas.getContext("2d");
    var bucketNs = (T.to_ns - T.from_ns) / T.buckets;
    function resize() {
      W = Math.max(600, wrap.parentNode.clientWidth - 40);
      var dpr = window.devicePixelRatio || 1;
      canvas.width = W * dpr; canvas.height = height * dpr;
      canvas.style.width = W + "px"; canvas.style.height = height + "px";
      ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    }
    function X(ns) { return (ns - v0) / (v1 - v0) * W; }
    var drawn = 0;
    function draw() {
      ctx.clearRect(0, 0, W, height);
      ctx.font = "11px system-ui, sans-serif";
      ctx.textBaseline = "middle";
      // Axis.
      var span = v1 - v0, step = Math.pow(10, Math.floor(Math.log10(span / 8)));
      if (span / step > 16) step *= 5; else if (span / step > 8) step *= 2;
      ctx.fillStyle = "#666";
      ctx.strokeStyle = "#ddd";
      for (var t0 = Math.ceil(v0 / step) * step; t0 <= v1; t0 += step) {
        var x = X(t0);
        ctx.fillRect(x, AXIS - 6, 1, 6);
        ctx.fillText(fmtNs(t0 - T.from_ns), x + 2, 8);
      }
      drawn = 0;
      var bpx = bucketNs / span * W;
      threads.forEach(function (t, ti) {
        var top = tops[ti];
        if (top > height) return;
        ctx.fillStyle = "#333";
        ctx.fillText(t.label, 2, top + HEAD / 2);
        var laneTop = top + HEAD + (t.state ? STRIP : 0);
        // The raster: runs of buckets with the same function and busyness.
        var b0 = Math.max(0, Math.floor((v0 - T.from_ns) / bucketNs)), b1 = Math.min(T.buckets - 1, Math.floor((v1 - T.from_ns) / bucketNs));
        // The state strip: runs of buckets in the same state.
        if (t.state) {
          for (var sb = b0; sb <= b1;) {
            var se = sb + 1;
            while (se <= b1 && t.state.code[se] === t.state.code[sb]) ++se;
            if (t.state.code[sb]) {
              ctx.fillStyle = STATE_COLOR[t.state.code[sb]];
              var sa = X(T.from_ns + sb * bucketNs), sz = X(T.from_ns + se * bucketNs);
              ctx.fillRect(sa, top + HEAD - 1, Math.max(0.5, sz - sa), STRIP - 1);
            }
            sb = se;
          }
        }
        t.lanes.forEach(function (l, d) {
          var yy = laneTop + d * LANE;
          for (var b = b0; b <= b1;) {
            var e = b + 1;
            while (e <= b1 && l.fn[e] === l.fn[b] && l.busy[e] === l.busy[b]) ++e;
            if (l.busy[b] > 0) {
              var a = bpx > 3 ? 0.3 : Math.max(0.25, l.busy[b] / 100);
              ctx.fillStyle = l.fn[b] >= 0 ? fnColor(l.fn[b], a) : "rgba(120,120,120," + a * 0.8 + ")";
              var xa = X(T.from_ns + b * bucketNs), xb = X(T.from_ns + e * bucketNs);
              ctx.fillRect(xa, yy, Math.max(0.5, xb - xa), LANE - 1);
            }
            b = e;
          }
        });
        // The calls drawn one by one.
        t.calls.forEach(function (c) {
          if (c.e < v0 || c.s > v1) return;
          var xa = X(c.s), xb = X(c.e), w = xb - xa;
          if (w < 0.3) return;
          ++drawn;
          var yy = laneTop + c.d * LANE;
          ctx.fillStyle = fnColor(c.fn, 1);
          ctx.fillRect(xa, yy, Math.max(w, 0.8), LANE - 1);
          if (w > 30) {
            ctx.save();
            ctx.beginPath(); ctx.rect(Math.max(xa, 0), yy, Math.min(w, W), LANE); ctx.clip();
            ctx.fillStyle = "#000";
            ctx.fillText(fname(c.fn), Math.max(xa, 0) + 3, yy + LANE / 2);
            ctx.restore();
          }
        });
      });
      // Losses and stops.
      T.instants.forEach(function (i) {
        if (i[1] < v0 || i[1] > v1) return;
        ctx.fillStyle = i[2] === "lost" ? "#d00" : i[2] === "mark" ? "#06c" : "#888";
        ctx.fillRect(X(i[1]) - 1, tops[i[0]], 2, HEAD);
      });
      range.textContent = fmtNs(v0 - T.from_ns) + " \u2013 " + fmtNs(v1 - T.from_ns) + " (" + fmtNs(v1 - v0) + " shown)";
    }
    function setView(a, b) {
      var min = 100;  // ns
      if (b - a < min) { var m = (a + b) / 2; a = m - min / 2; b = m + min / 2; }
      v0 = Math.max(T.from_ns, a); v1 = Math.min(T.to_ns, b);
      if (v1 <= v0) { v0 = T.from_ns; v1 = T.to_ns; }
      draw();
    }
    function zoomBy(f, at) {
      var c = v0 + (v1 - v0) * at;
      setView(c - (c - v0) * f, c + (v1 - c) * f);
    }
    canvas.addEventListener("wheel", function (e) {
      e.preventDefault();
      zoomBy(e.deltaY > 0 ? 1.25 : 0.8, e.offsetX / W);
    }, {passive: false});
    var drag = null;
    canvas.addEventListener("mousedown", function (e) { drag = {x: e.clientX, v0: v0, v1: v1}; canvas.style.cursor = "grabbing"; });
    window.addEventListener("mouseup", function () { drag = null; canvas.style.cursor = ""; });
    canvas.addEventListener("dblclick", function () { setView(T.from_ns, T.to_ns); });
    canvas.addEventListener("mousemove", function (e) {
      if (drag) {
        var dt = (e.clientX - drag.x) / W * (drag.v1 - drag.v0);
        var a = drag.v0 - dt, b = drag.v1 - dt;
        if (a < T.from_ns) { b += T.from_ns - a; a = T.from_ns; }
        if (b > T.to_ns) { a -= b - T.to_ns; b = T.to_ns; }
        v0 = a; v1 = b;
        draw();
        return;
      }
      tip.style.display = "none";
      var ns = v0 + e.offsetX / W * (v1 - v0);
      for (var ti = 0; ti < threads.length; ++ti) {
        var t = threads[ti], strip = t.state ? STRIP : 0;
        if (t.state && e.offsetY >= tops[ti] + HEAD - 1 && e.offsetY < tops[ti] + HEAD - 1 + STRIP) {
          var sbk = Math.floor((ns - T.from_ns) / bucketNs);
          if (sbk >= 0 && sbk < T.buckets && t.state.code[sbk]) {
            tip.textContent = "mostly " + STATE_NAME[t.state.code[sbk]] + "\noff the CPU " + t.state.off[sbk] + "% of " + fmtNs(bucketNs) +
                              " from " + fmtNs(sbk * bucketNs) + "\n(the Waits section says why)";
            tip.style.whiteSpace = "pre";
            tip.style.display = "block";
            tip.style.left = (e.clientX + 12) + "px";
            tip.style.top = (e.clientY + 12) + "px";
          }
          break;
        }
        var d = Math.floor((e.offsetY - tops[ti] - HEAD - strip) / LANE);
        if (d < 0 || d >= t.lanes.length) continue;
        var text = null, c;
        for (var k = 0; k < t.calls.length; ++k) {
          c = t.calls[k];
          if (c.d === d && c.s <= ns && ns <= c.e && X(c.e) - X(c.s) >= 0.3) {
            text = fname(c.fn) + "\n" + fmtNs(c.e - c.s) + " from " + fmtNs(c.s - T.from_ns) + (floc(c.fn) ? "\n" + floc(c.fn) : "");
            break;
          }
        }
        if (!text) {
          var b = Math.floor((ns - T.from_ns) / bucketNs), l = t.lanes[d];
          if (b >= 0 && b < T.buckets && l.busy[b] > 0)
            text = (l.fn[b] >= 0 ? fname(l.fn[b]) + " (running at the middle of this span)" : "short calls") + "\ndepth " + d + " busy " + l.busy[b] +
                   "% of " + fmtNs(bucketNs) + " from " + fmtNs(b * bucketNs) + "\n(aggregated: zoom in for the calls drawn one by one)";
        }
        if (text) {
          tip.textContent = text;
          tip.style.whiteSpace = "pre";
          tip.style.display = "block";
          tip.style.left = (e.clientX + 12) + "px";
          tip.style.top = (e.clientY + 12) + "px";
        }
        break;
      }
    });
    canvas.addEventListener("mouseleave", function () { tip.style.display = "none"; });
    byId.timeline.onShow = function () { resize(); draw(); };
    window.callscopeReport.timeline = {
      view: function () { return [v0, v1]; }, set: setView, zoom: zoomBy,
      drawnCalls: function () { return drawn; }, threads: threads.length,
      stateStrips: threads.filter(function (t) { return t.state; }).length,
      // a thread's state strip at a time (ns since the trace start): its code (0 none, 1 running, ...)
      stateAt: function (i, ns) { var t = threads[i], b = Math.floor(ns / bucketNs); return t && t.state && b >= 0 && b < T.buckets ? t.state.code[b] : 0; }
    };
  });

  // ---- measured stack ----
  if (D.stack) addSection("stack", "Stack", function (node) {
    node.appendChild(el("div", {cls: "note", text: "Measured stack use of instrumented frames, from the stack pointer at every entry (what uninstrumented callees push below is not seen)."}));
    node.appendChild(el("h2", {text: "Peak per thread"}));
    node.appendChild(table([
      {title: "thread", key: function (t) { return t.label; }, cls: "left", num: false},
      {title: "peak", key: function (t) { return t.peak_bytes; }, show: function (t) { return fmtBytes(t.peak_bytes); }},
      {title: "call path at the peak", key: function (t) { return t.path.join(" > "); }, cls: "name", num: false}],
      D.stack.threads, {sort: 1}));
    node.appendChild(el("h2", {text: "Deepest stack below each function"}));
    node.appendChild(table([
      {title: "function", key: function (f) { return f[0]; }, cls: "name", num: false},
      {title: "module", key: function (f) { return f[1]; }, cls: "left", num: false},
      {title: "calls", key: function (f) { return f[2]; }, show: function (f) { return fmtCount(f[2]); }},
      {title: "deepest below", key: function (f) { return f[3]; }, show: function (f) { return fmtBytes(f[3]); }}],
      D.stack.functions, {sort: 3}));
  });

  // ---- snapshots (profile mode) ----
  if (D.snapshots && D.snapshots.length) addSection("snapshots", "Snapshots", function (node) {
    node.appendChild(el("div", {cls: "note", text: "Each snapshot's flat profile, and what changed between two of them (B \u2212 A, biggest change of total time first)."}));
    var a = el("select", {id: "snap-a"}), b = el("select", {id: "snap-b"});
    D.snapshots.forEach(function (s, i) {
      a.appendChild(el("option", {value: String(i), text: s.label}));
      b.appendChild(el("option", {value: String(i), text: s.label}));
    });
    b.value = String(D.snapshots.length - 1);
    node.appendChild(el("div", {cls: "controls"}, [el("label", {text: "A "}), a, el("label", {text: "B "}), b]));
    var out = el("div", {id: "snap-diff"});
    node.appendChild(out);
    function render() {
      var rows = {}, key;
      D.snapshots[+a.value].flat.forEach(function (r) { key = r[0] + "\u0000" + r[1]; rows[key] = {n: r[0], m: r[1], a: r, b: null}; });
      D.snapshots[+b.value].flat.forEach(function (r) { key = r[0] + "\u0000" + r[1]; (rows[key] = rows[key] || {n: r[0], m: r[1], a: null, b: r}).b = r; });
      var list = Object.keys(rows).map(function (k) { return rows[k]; });
      function v(x, i) { return x ? x[i] : 0; }
      out.textContent = "";
      out.appendChild(table([
        {title: "function", key: function (r) { return r.n; }, cls: "name", num: false},
        {title: "module", key: function (r) { return r.m; }, cls: "left", num: false},
        {title: "calls A", key: function (r) { return v(r.a, 2); }, show: function (r) { return fmtCount(v(r.a, 2)); }},
        {title: "calls B", key: function (r) { return v(r.b, 2); }, show: function (r) { return fmtCount(v(r.b, 2)); }},
        {title: "total A", key: function (r) { return v(r.a, 3); }, show: function (r) { return fmtNs(v(r.a, 3)); }},
        {title: "total B", key: function (r) { return v(r.b, 3); }, show: function (r) { return fmtNs(v(r.b, 3)); }},
        {title: "\u0394 total", key: function (r) { return Math.abs(v(r.b, 3) - v(r.a, 3)); }, show: function (r) {
          var dlt = v(r.b, 3) - v(r.a, 3); return (dlt >= 0 ? "+" : "\u2212") + fmtNs(Math.abs(dlt)); }},
        {title: "self B", key: function (r) { return v(r.b, 4); }, show: function (r) { return fmtNs(v(r.b, 4)); }}],
        list, {sort: 6}));
    }
    a.addEventListener("change", render);
    b.addEventListener("change", render);
    render();
  });

  // ---- memory ----
  if (D.memory) addSection("memory", "Memory", function (node) {
    var M = D.memory, s = M.summary || {};
    node.appendChild(el("div", {cls: "note", text: "Every allocation and free recorded (record --memory): what 'callscope memory' shows, for the whole trace."}));
    node.appendChild(kv([
      ["allocations", fmtCount(s.allocs) + " (" + fmtBytes(s.bytes) + ")"],
      ["peak outstanding", fmtBytes(s.peak_bytes) + (s.peak_ns != null ? " at " + fmtNs(s.peak_ns) : "")],
      ["freed", fmtCount(s.frees)], ["leaked (never freed)", fmtCount(s.leaked) + " (" + fmtBytes(s.leaked_bytes) + ")"],
      ["short-lived", fmtCount(s.short_lived) + " (" + fmtBytes(s.short_lived_bytes) + ")"],
      ["mismatched frees", fmtCount(s.mismatched_frees)], ["frees of unknown blocks", fmtCount(s.unknown_frees)]]));
    (M.tables || []).forEach(function (t) {
      var k = t.by.join(", ");
      node.appendChild(el("h2", {text: "By " + k}));
      node.appendChild(table([
        {title: k, key: function (r) { return t.by.map(function (b) { return r[b]; }).join(" / "); }, cls: "name", num: false},
        {title: "allocs", key: function (r) { return r.allocs; }, show: function (r) { return fmtCount(r.allocs); }},
        {title: "bytes", key: function (r) { return r.bytes; }, show: function (r) { return fmtBytes(r.bytes); }},
        {title: "at the peak", key: function (r) { return r.peak_bytes; }, show: function (r) { return fmtBytes(r.peak_bytes); }},
        {title: "leaked", key: function (r) { return r.leaked_bytes; }, show: function (r) { return fmtBytes(r.leaked_bytes); }},
        {title: "short-lived", key: function (r) { return r.short_lived; }, show: function (r) { return fmtCount(r.short_lived); }}],
        t.rows, {sort: 2}));
    });
  });

  window.callscopeReport = {
    sections: sections.map(function (s) { return s.id; }),
    show: show, data: D
  };
  var first = location.hash.slice(1);
  show(byId[first] ? first : "summary");
  window.callscopeReport.readyMs = performance.now();
  window.addEventListener("resize", function () { var t = byId.timeline; if (t && t.built && t.node.classList.contains("active")) t.onShow(); });
})();
