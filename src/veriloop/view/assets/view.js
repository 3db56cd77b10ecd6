/* veriloop view: draws the report from the JSON block in the page.
 *
 * Every text that came from a model, a prompt, a tool or a file is put in the page as a
 * text node (h() turns strings into text nodes; nothing here assigns HTML), so a reply
 * holding markup or a script shows literally and runs nothing.
 */
(function () {
  "use strict";

  var D = JSON.parse(document.getElementById("veriloop-data").textContent);
  var S = D.S, M = D.M, T = D.T, G = D.groups, A = D.A || [];
  var ROLES = ["system", "user", "assistant"];
  var SVGNS = "http://www.w3.org/2000/svg";
  var ROW = 30;  // list row height in px: the list draws only the rows in view
  var PALETTE = ["#2f5bb7", "#d1495b", "#2a9d8f", "#e9a23b", "#7b4fb5", "#5c8001", "#c05299", "#3d7ea6",
    "#8c564b", "#6b6b6b"];

  // ---- DOM helpers: strings become text nodes, attributes are our own constants ----
  function h(tag, props) {
    var el = document.createElement(tag);
    if (props) {
      for (var k in props) {
        if (!Object.prototype.hasOwnProperty.call(props, k)) continue;
        var v = props[k];
        if (v === null || v === undefined || v === false) continue;
        if (k === "on") { for (var ev in v) el.addEventListener(ev, v[ev]); }
        else if (k === "cls") el.className = v;
        else if (k === "text") el.textContent = v;
        else el.setAttribute(k, v);
      }
    }
    for (var i = 2; i < arguments.length; i++) add(el, arguments[i]);
    return el;
  }
  function add(el, kid) {
    if (kid === null || kid === undefined || kid === false) return;
    if (Array.isArray(kid)) { kid.forEach(function (k) { add(el, k); }); return; }
    el.appendChild(typeof kid === "object" ? kid : document.createTextNode(String(kid)));
  }
  // A long spec or path may break after a comma or slash, never inside a word: <wbr> after
  // each, so the text (and a copy of it) stays exactly the name.
  function breakable(text) {
    return h("span", null, String(text).split(/(?<=[,\/])/).map(function (part, i) {
      return i ? [h("wbr"), part] : part;
    }));
  }
  function svg(tag, attrs) {
    var el = document.createElementNS(SVGNS, tag);
    for (var k in attrs) el.setAttribute(k, attrs[k]);
    for (var i = 2; i < arguments.length; i++) {
      var kid = arguments[i];
      if (kid === null || kid === undefined) continue;
      el.appendChild(typeof kid === "object" ? kid : document.createTextNode(String(kid)));
    }
    return el;
  }
  function txt(i) { return i === null || i === undefined ? null : S[i]; }
  function pre(text, cls) { return h("pre", cls ? { cls: cls } : null, text === null ? "" : text); }
  function pct(x) { return (100 * x).toFixed(x > 0 && x < 0.1 ? 1 : 0) + "%"; }
  function fixed(x, n) { return Number(x).toFixed(n); }

  // ---- the records, decoded on demand ----
  function call(c) {
    return {
      role: c[0], round: c[1], sample: c[2], ids: c[3], response: txt(c[4]), finish: c[5], pt: c[6], ct: c[7],
      seconds: c[8], cached: !!c[9], stage: c[10], step: c[11], model: c[12],
      reasoning: c[13] === null || c[13] === undefined ? null : txt(c[13]), rt: c[14] || 0, cpt: c[15] || 0,
      sent: c[16] === null || c[16] === undefined ? null : txt(c[16])
    };
  }
  function message(id) {
    var m = M[id], code = m[0];
    return { role: code < ROLES.length ? ROLES[code] : S[code - ROLES.length], content: S[m[1]] };
  }
  function roundRec(r) {
    return { round: r[0], text: txt(r[1]), answer: txt(r[2]), verdict: r[3], correct: !!r[4], agree: r[5],
      feedback: txt(r[6]) };
  }
  function group(t) { return G[t.g]; }
  // A table keyed by values from the runs (a strategy, a condition, a model may be named
  // "constructor" or "__proto__"): no prototype, so every name is an ordinary key.
  function table() { return Object.create(null); }

  // ---- labels for groups: only the fields that tell the groups apart ----
  var varying = ["source", "model", "domain", "strategy", "seed"].filter(function (k) {
    var seen = table();
    G.forEach(function (g) { seen[g[k]] = 1; });
    return Object.keys(seen).length > 1;
  });
  if (!varying.length) varying = ["strategy"];
  function groupLabel(g) {
    return varying.map(function (k) { return k === "seed" ? "seed " + g.seed : String(g[k]); }).join(" · ");
  }
  function colour(i) { return PALETTE[i % PALETTE.length]; }

  // ---- filters ----
  var FACETS = [
    { key: "source", label: "run", values: function (t) { return [group(t).source]; } },
    { key: "model", label: "model", values: function (t) { return [group(t).model]; } },
    { key: "domain", label: "domain", values: function (t) { return [group(t).domain]; } },
    { key: "strategy", label: "strategy", values: function (t) { return [group(t).strategy]; } },
    { key: "outcome", label: "outcome", values: function (t) { return [t.ok ? "solved" : "unsolved"]; } },
    { key: "stop", label: "stop reason", values: function (t) { return [t.sr]; } },
    { key: "verifier", label: "verifier vs ground truth", values: function (t) {
      var v = [];
      if (!(t.vf & 1)) v.push("no verdict");
      else if (!(t.vf & 6)) v.push("agreed every round");
      if (t.vf & 2) v.push("false accept");
      if (t.vf & 4) v.push("false reject");
      return v;
    } }
  ];
  // Each trajectory's facet values, computed once: filtering then only compares strings.
  var facetValues = FACETS.map(function (f) { return T.map(function (t) { return f.values(t); }); });
  var lowerIds = T.map(function (t) { return t.i.toLowerCase(); });
  var allValues = FACETS.map(function (f, fi) {
    var seen = table();
    facetValues[fi].forEach(function (vs) { vs.forEach(function (v) { seen[v] = 1; }); });
    return Object.keys(seen).sort();
  });

  var state = readHash();
  function readHash() {
    var p = new URLSearchParams(location.hash.replace(/^#/, ""));
    var st = { view: p.get("view") || "home", t: p.get("t"), a: p.get("a"), b: p.get("b"), q: p.get("q") || "",
      f: {} };
    FACETS.forEach(function (f) { if (p.get(f.key)) st.f[f.key] = p.get(f.key); });
    return st;
  }
  function writeHash(replace) {
    var p = new URLSearchParams();
    if (state.view !== "home") p.set("view", state.view);
    ["t", "a", "b"].forEach(function (k) { if (state[k] !== null && state[k] !== undefined) p.set(k, state[k]); });
    if (state.q) p.set("q", state.q);
    FACETS.forEach(function (f) { if (state.f[f.key]) p.set(f.key, state.f[f.key]); });
    var hash = "#" + p.toString();
    if (replace) history.replaceState(null, "", hash); else history.pushState(null, "", hash);
  }
  function go(changes) {
    state.t = state.a = state.b = null;
    for (var k in changes) state[k] = changes[k];
    writeHash(false);
    draw();
    window.scrollTo(0, 0);
  }
  window.addEventListener("popstate", function () { state = readHash(); draw(); });

  // Which trajectories pass the filters, and for each facet the counts of its values among
  // the trajectories passing every other filter (so a choice shows what it would leave).
  function applyFilters() {
    var chosen = FACETS.map(function (f) { return state.f[f.key] || null; });
    var q = state.q.trim().toLowerCase();
    var counts = FACETS.map(function () { return table(); });
    var passing = [];
    for (var i = 0; i < T.length; i++) {
      if (q && lowerIds[i].indexOf(q) < 0) continue;
      var failed = -1, fails = 0;
      for (var fi = 0; fi < FACETS.length && fails < 2; fi++) {
        if (chosen[fi] !== null && facetValues[fi][i].indexOf(chosen[fi]) < 0) { failed = fi; fails++; }
      }
      if (fails === 0) {
        passing.push(i);
        for (fi = 0; fi < FACETS.length; fi++) bump(counts[fi], facetValues[fi][i]);
      } else if (fails === 1) {
        bump(counts[failed], facetValues[failed][i]);
      }
    }
    return { passing: passing, counts: counts };
  }
  function bump(c, values) { for (var j = 0; j < values.length; j++) c[values[j]] = (c[values[j]] || 0) + 1; }

  // ---- page frame ----
  var app = document.getElementById("app");
  var top = h("header", { cls: "top" },
    h("h1", null, D.title),
    h("nav", null,
      h("a", { on: { click: function () { go({ view: "home" }); } } }, "Overview"),
      h("a", { on: { click: function () { go({ view: "list" }); } } }, "Trajectories"),
      A.length ? h("a", { on: { click: function () { go({ view: "audits" }); } } }, "Audits") : null),
    h("span", { cls: "meta" }, T.length + " trajectories from " + D.sources.length + " run" +
      (D.sources.length === 1 ? "" : "s") + (A.length ? ", " + A.length + " audit" + (A.length === 1 ? "" : "s") : "") +
      " · " + D.paths.join(", ")),
    D.live && location.protocol.indexOf("http") === 0 ? h("span", { cls: "live" }, "live") : null);
  var body = h("main");
  app.appendChild(top);
  app.appendChild(body);

  function draw() {
    body.replaceChildren();
    if (state.view === "t" && T[state.t]) drawTrajectory(body, Number(state.t));
    else if (state.view === "cmp" && T[state.a] && T[state.b]) drawCompare(body, Number(state.a), Number(state.b));
    else if (state.view === "list") drawList(body);
    else if (state.view === "audits" && A.length) drawAudits(body);
    else if (!G.length && A.length) drawAudits(body);  // an audit alone: no run to show
    else { drawOverview(body); if (A.length) drawAudits(body); drawList(body); }
  }

  // ---- overview: the results table and the two charts ----
  function drawOverview(root) {
    root.appendChild(h("h2", null, "Results"));
    // Columns every row shares are said once above the table, not repeated per row.
    var shared = ["source", "model", "domain", "seed"].filter(function (k) { return varying.indexOf(k) < 0; });
    var names = { source: "run", model: "model", domain: "domain", seed: "seed" };
    if (shared.length) {
      root.appendChild(h("div", { cls: "tmeta" }, shared.map(function (k) {
        return h("span", null, names[k] + " ", h("b", null, String(G[0][k])));
      })));
    }
    var cols = [["#", null], ["run", "source"], ["model", "model"], ["domain", "domain"], ["strategy", "strategy"],
      ["seed", "seed"]].filter(function (c) { return !c[1] || c[1] === "strategy" || varying.indexOf(c[1]) >= 0; });
    var heads = cols.map(function (c) { return c[0]; }).concat(["n", "accuracy", "95% CI", "mean rounds", "calls",
      "cache hits", "tokens (prompt+completion)", "tokens / trajectory", "seconds", "stop reasons"]);
    var textCol = function (name) { return ["run", "model", "domain", "strategy", "stop reasons"].indexOf(name) >= 0; };
    var table = h("table", { cls: "results" }, h("thead", null, h("tr", null, heads.map(function (x) {
      return h("th", textCol(x) ? { cls: "text" } : null, x);
    }))));
    var tb = h("tbody");
    G.forEach(function (g, gi) {
      var stops = Object.keys(g.stop_reasons).map(function (k) { return k + " " + g.stop_reasons[k]; }).join(", ");
      var cells = cols.map(function (c) {
        if (!c[1]) {
          return h("span", null, h("span", { cls: "swatch", style: "background:" + colour(gi) }), " " + (gi + 1));
        }
        return breakable(g[c[1]]);
      }).concat([
        String(g.n), g.correct + "/" + g.n + " = " + pct(g.accuracy), pct(g.ci[0]) + "–" + pct(g.ci[1]),
        fixed(g.mean_rounds, 2), String(g.calls), String(g.cache_hits),
        (g.prompt_tokens + g.completion_tokens) + " (" + g.prompt_tokens + "+" + g.completion_tokens + ")",
        fixed(g.tokens_per_trajectory, 0), fixed(g.seconds, 1), stops
      ]);
      tb.appendChild(h("tr", { title: "show these trajectories", on: { click: function () {
        state.f = { source: g.source, model: g.model, domain: g.domain, strategy: g.strategy };
        state.q = ""; go({ view: "list" });
      } } }, cells.map(function (c, i) { return h("td", textCol(heads[i]) ? { cls: "text" } : null, c); })));
    });
    table.appendChild(tb);
    root.appendChild(h("div", { cls: "wide" }, table));
    root.appendChild(h("div", { cls: "charts" }, roundChart(), tokenChart()));
    if (G.some(function (g) { return g.pools; })) drawPools(root);
  }

  // Round tick values (1, 2 or 5 times a power of ten) from 0 to at least `hi`.
  function niceTicks(hi) {
    var raw = hi / 4, mag = Math.pow(10, Math.floor(Math.log10(raw))), step = mag;
    [1, 2, 5, 10].some(function (m) { step = m * mag; return step >= raw; });
    var out = [];
    for (var v = 0; v < hi + step; v += step) out.push(v);
    return out;
  }

  function axes(g, w, hgt, pad, xs, ys, xlabel, ylabel) {
    ys.ticks.forEach(function (v) {
      var y = ys.at(v);
      g.appendChild(svg("line", { x1: pad.l, x2: w - pad.r, y1: y, y2: y, "class": "grid" }));
      g.appendChild(svg("text", { x: pad.l - 6, y: y + 4, "text-anchor": "end" }, ys.fmt(v)));
    });
    xs.ticks.forEach(function (v) {
      g.appendChild(svg("text", { x: xs.at(v), y: hgt - pad.b + 15, "text-anchor": "middle" }, xs.fmt(v)));
    });
    g.appendChild(svg("line", { x1: pad.l, x2: w - pad.r, y1: hgt - pad.b, y2: hgt - pad.b, "class": "axis" }));
    g.appendChild(svg("line", { x1: pad.l, x2: pad.l, y1: pad.t, y2: hgt - pad.b, "class": "axis" }));
    g.appendChild(svg("text", { x: (pad.l + w - pad.r) / 2, y: hgt - 4, "text-anchor": "middle" }, xlabel));
    g.appendChild(svg("text", { x: 12, y: (pad.t + hgt - pad.b) / 2, "text-anchor": "middle",
      transform: "rotate(-90 12 " + (pad.t + hgt - pad.b) / 2 + ")" }, ylabel));
  }
  function accuracyScale(hgt, pad) {
    return { ticks: [0, 0.25, 0.5, 0.75, 1], fmt: pct,
      at: function (v) { return pad.t + (1 - v) * (hgt - pad.t - pad.b); } };
  }
  // The groups' colours and names; `keep(g)`, when given, chooses the groups named.
  function legend(keep) {
    return h("div", { cls: "legend" }, G.map(function (g, gi) {
      if (keep && !keep(g)) return null;
      return h("div", null, h("span", { cls: "swatch", style: "background:" + colour(gi) }), (gi + 1) + ". " +
        groupLabel(g) + " (n=" + g.n + ")");
    }));
  }

  // An x axis of the whole numbers 1..n (rounds, k), with at most about `most` ticks.
  function countScale(n, w, pad, most) {
    var xs = { ticks: [], fmt: String, at: function (v) {
      return n === 1 ? (pad.l + w - pad.r) / 2 : pad.l + (v - 1) / (n - 1) * (w - pad.l - pad.r);
    } };
    var step = Math.max(1, Math.ceil(n / most));
    for (var v = 1; v <= n; v += step) xs.ticks.push(v);
    return xs;
  }

  // Accuracy had every loop stopped after n rounds: a strategy that stopped earlier keeps
  // its last answer, drawn dashed past its own last round.
  function roundChart() {
    var w = 560, hgt = 300, pad = { l: 48, r: 16, t: 12, b: 38 };
    var maxR = 1;
    G.forEach(function (g) { maxR = Math.max(maxR, g.by_round.length); });
    var xs = countScale(maxR, w, pad, 12);
    var ys = accuracyScale(hgt, pad);
    var root = svg("svg", { width: w, height: hgt, viewBox: "0 0 " + w + " " + hgt, role: "img" });
    axes(root, w, hgt, pad, xs, ys, "rounds (loop stopped after n)", "accuracy");
    G.forEach(function (g, gi) {
      if (!g.by_round.length) return;
      var own = [], tail = [];
      for (var n = 1; n <= maxR; n++) {
        var v = g.by_round[Math.min(n, g.by_round.length) - 1];
        var p = xs.at(n) + "," + ys.at(v);
        if (n <= g.by_round.length) own.push(p);
        if (n >= g.by_round.length) tail.push(p);
      }
      var c = colour(gi);
      if (own.length > 1) root.appendChild(svg("polyline", { points: own.join(" "), fill: "none", stroke: c,
        "stroke-width": 2 }));
      if (tail.length > 1) root.appendChild(svg("polyline", { points: tail.join(" "), fill: "none", stroke: c,
        "stroke-width": 1.5, "stroke-dasharray": "4 4" }));
      g.by_round.forEach(function (v, i) {
        root.appendChild(svg("circle", { cx: xs.at(i + 1), cy: ys.at(v), r: 3.5, fill: c },
          svg("title", {}, groupLabel(g) + ": round " + (i + 1) + ", " + pct(v))));
      });
    });
    return h("div", { cls: "chart" }, h("h3", null, "Accuracy by round"), root, legend());
  }

  function tokenChart() {
    var w = 560, hgt = 300, pad = { l: 48, r: 16, t: 12, b: 38 };
    var xsVals = G.map(function (g) { return Math.max(1, g.tokens_per_trajectory); });
    var lo = Math.min.apply(null, xsVals), hi = Math.max.apply(null, xsVals);
    var log = hi / lo > 20;
    var f = log ? function (v) { return Math.log10(v); } : function (v) { return v; };
    var lin = log ? null : niceTicks(hi);
    var a = log ? Math.floor(f(lo)) : 0, b = log ? Math.ceil(f(hi)) : lin[lin.length - 1];
    if (b <= a) b = a + 1;
    var xs = { ticks: [],
      fmt: function (v) { return v >= 10000 ? (v / 1000).toFixed(0) + "k" : String(Math.round(v)); },
      at: function (v) { return pad.l + (f(v) - a) / (b - a) * (w - pad.l - pad.r); } };
    if (log) { for (var e = a; e <= b; e++) xs.ticks.push(Math.pow(10, e)); }
    else xs.ticks = lin;
    var ys = accuracyScale(hgt, pad);
    var root = svg("svg", { width: w, height: hgt, viewBox: "0 0 " + w + " " + hgt, role: "img" });
    axes(root, w, hgt, pad, xs, ys, "tokens per trajectory" + (log ? " (log scale)" : ""), "accuracy");
    G.forEach(function (g, gi) {
      var x = xs.at(xsVals[gi]), c = colour(gi);
      root.appendChild(svg("line", { x1: x, x2: x, y1: ys.at(g.ci[0]), y2: ys.at(g.ci[1]), stroke: c,
        "stroke-width": 1.5, opacity: 0.6 }));
      root.appendChild(svg("circle", { cx: x, cy: ys.at(g.accuracy), r: 5, fill: c },
        svg("title", {}, groupLabel(g) + ": " + pct(g.accuracy) + " at " + Math.round(g.tokens_per_trajectory) +
          " tokens per trajectory (95% CI " + pct(g.ci[0]) + "–" + pct(g.ci[1]) + ")")));
      root.appendChild(svg("text", { x: x + 7, y: ys.at(g.accuracy) - 6 }, String(gi + 1)));
    });
    return h("div", { cls: "chart" }, h("h3", null, "Accuracy vs tokens (95% CI)"), root, legend());
  }

  // ---- pool metrics: each group's rounds read as pools of answers (experiment.pools) ----
  var METRICS = ["pass@k", "maj@k", "best-of-k", "first@k"];
  function curveOf(g, metric) {
    var found = null;
    (g.pools ? g.pools.curves : []).forEach(function (c) { if (c.metric === metric) found = c; });
    return found;
  }
  // The k a table shows before its last column, at each curve's own largest k: 1, 2, 4,
  // 8, ... below the largest n (as results.md shows them).
  function shownKs(n) {
    var out = [];
    for (var k = 1; k < n; k *= 2) out.push(k);
    return out;
  }
  function drawPools(root) {
    root.appendChild(h("h2", null, "Pool metrics"));
    root.appendChild(h("p", { cls: "muted note" }, "Each strategy's rounds read as a pool of answers per " +
      "instance: pass@k (some of k answers is right), maj@k (a majority vote over k is right) and best-of-k (the " +
      "verifier's best of k is right), each the mean over every k answers of the pool where all pools have the " +
      "same size; first@k (one of the first k rounds is right). On a loop, whose rounds answer its feedback, they " +
      "read as an oracle choosing among its attempts. In brackets: the 95% interval over instances; k=n: at the " +
      "pool's size (first@k: the largest pool)."));
    var largest = 1;
    G.forEach(function (g) {
      (g.pools ? g.pools.curves : []).forEach(function (c) { largest = Math.max(largest, c.pool_size); });
    });
    var ks = shownKs(largest);
    var heads = ["#", "strategy", "metric", "pool"].concat(ks.map(function (k) { return "k=" + k; }), ["k=n"]);
    var textCol = function (i) { return i === 1 || i === 2; };
    var table = h("table", { cls: "pools" }, h("thead", null, h("tr", null, heads.map(function (x, i) {
      return h("th", textCol(i) ? { cls: "text" } : null, x);
    }))));
    var tb = h("tbody");
    G.forEach(function (g, gi) {
      if (!g.pools) return;
      var p = g.pools;
      var size = p.pool_size !== null ? String(p.pool_size) : p.smallest_pool + "–" + p.largest_pool;
      METRICS.forEach(function (metric) {
        var c = curveOf(g, metric);
        if (!c) return;
        var cells = [h("span", null, h("span", { cls: "swatch", style: "background:" + colour(gi) }), " " + (gi + 1)),
          breakable(groupLabel(g)), metric, p.n_instances + " × " + size].concat(ks.concat([c.pool_size]).map(
          function (k) {
            if (k > c.pool_size) return "–";
            return pct(c.values[k - 1]) + " (" + pct(c.ci_low[k - 1]) + "–" + pct(c.ci_high[k - 1]) + ")";
          }));
        tb.appendChild(h("tr", null, cells.map(function (x, i) {
          return h("td", textCol(i) ? { cls: "text" } : null, x);
        })));
      });
    });
    table.appendChild(tb);
    root.appendChild(h("div", { cls: "wide" }, table));
    root.appendChild(h("div", { cls: "charts" }, METRICS.filter(function (metric) {
      return G.some(function (g) { return curveOf(g, metric); });
    }).map(poolChart)));
  }

  // One metric over k, a line per group with its 95% band.
  function poolChart(metric) {
    var w = 560, hgt = 260, pad = { l: 48, r: 16, t: 12, b: 38 };
    var maxK = 1;
    G.forEach(function (g) { var c = curveOf(g, metric); if (c) maxK = Math.max(maxK, c.pool_size); });
    var xs = countScale(maxK, w, pad, 10);
    var ys = accuracyScale(hgt, pad);
    var root = svg("svg", { width: w, height: hgt, viewBox: "0 0 " + w + " " + hgt, role: "img" });
    axes(root, w, hgt, pad, xs, ys, "k (answers of the pool)", metric);
    G.forEach(function (g, gi) {
      var c = curveOf(g, metric);
      if (!c) return;
      var col = colour(gi);
      var top = c.k.map(function (k, i) { return xs.at(k) + "," + ys.at(c.ci_high[i]); });
      var bottom = c.k.map(function (k, i) { return xs.at(k) + "," + ys.at(c.ci_low[i]); }).reverse();
      root.appendChild(svg("polygon", { points: top.concat(bottom).join(" "), fill: col, "fill-opacity": 0.1,
        stroke: "none" }));
      var line = c.k.map(function (k, i) { return xs.at(k) + "," + ys.at(c.values[i]); });
      if (line.length > 1) {
        root.appendChild(svg("polyline", { points: line.join(" "), fill: "none", stroke: col, "stroke-width": 2 }));
      }
      c.k.forEach(function (k, i) {
        root.appendChild(svg("circle", { cx: xs.at(k), cy: ys.at(c.values[i]), r: 3, fill: col },
          svg("title", {}, groupLabel(g) + ": " + metric.replace("k", String(k)) + " = " + pct(c.values[i]) +
            " (95% CI " + pct(c.ci_low[i]) + "–" + pct(c.ci_high[i]) + ")")));
      });
    });
    return h("div", { cls: "chart" }, h("h3", null, metric + " over k"), root,
      legend(function (g) { return curveOf(g, metric); }));
  }

  // ---- audits: known-wrong answers, plain and dressed by each family (veriloop audit) ----
  function rateText(rate, ci, k, n) {
    return n ? pct(rate) + " (" + pct(ci[0]) + "–" + pct(ci[1]) + "), " + k + "/" + n : "–";
  }
  function points(x) { var v = Math.round(100 * x); return (v > 0 ? "+" : "") + v; }
  function drawAudits(root) {
    root.appendChild(h("h2", null, "Audits"));
    root.appendChild(h("p", { cls: "muted note" }, "Every answer audited is wrong by ground truth, so every accept " +
      "is a false accept. Each family dresses the same wrong answers; 'dressed − plain' is the paired difference " +
      "in points (95% bootstrap interval) with the exact McNemar p. Rates carry 95% Wilson intervals. Below " +
      "each table: the dressed answers each verifier accepted."));
    A.forEach(function (a) {
      root.appendChild(h("h3", null, breakable(a.label)));
      var facts = [["domain", a.domain], ["model", a.model], ["seed", a.seed], ["answers", a.answers]];
      root.appendChild(h("div", { cls: "tmeta" }, facts.map(function (kv) {
        return h("span", null, kv[0] + " ", h("b", null, String(kv[1])));
      }), h("span", null, a.known_wrong + " known-wrong answers on " + a.instances + " instances (" + a.dropped +
        " right ones left out) · " + a.judgements + " judgements · " + a.calls + " model calls"),
      a.stopped ? h("span", { cls: "no" }, "stopped early: " + a.stopped) : null));
      var summaries = table();
      a.families.forEach(function (f) { summaries[f.name] = f.summary; });
      var heads = ["verifier", "family", "kind", "false accepts, plain", "false accepts, dressed", "dressed − plain",
        "p", "n/a", "missing", "unreadable"];
      var tb = h("tbody");
      a.rows.forEach(function (r) {
        var plain = r.family === "plain";
        var cells = [r.verifier, r.family, plain ? "–" : r.kind,
          rateText(r.plain_rate, r.plain_ci95, r.plain_accepts, r.n),
          plain ? "–" : rateText(r.dressed_rate, r.dressed_ci95, r.dressed_accepts, r.n),
          plain || !r.difference_ci95 ? "–" : points(r.difference) + " (" + points(r.difference_ci95[0]) + " to " +
            points(r.difference_ci95[1]) + ")",
          plain || !r.n ? "–" : (r.p_value < 0.001 ? "<0.001" : fixed(r.p_value, 3)),
          plain ? "–" : String(r.not_applicable), String(r.missing), String(r.unreadable)];
        tb.appendChild(h("tr", { title: plain ? "the wrong answers as they are" : summaries[r.family] },
          cells.map(function (c, i) { return h("td", i < 3 ? { cls: "text" } : null, c); })));
      });
      root.appendChild(h("div", { cls: "wide" }, h("table", { cls: "results audit" }, h("thead", null, h("tr", null,
        heads.map(function (x, i) { return h("th", i < 3 ? { cls: "text" } : null, x); }))), tb)));
      var fooled = a.accepted.filter(function (x) { return x.items.length; });
      if (!fooled.length) root.appendChild(h("p", { cls: "muted" }, "No dressed answer was accepted."));
      fooled.forEach(function (x) { root.appendChild(acceptedAnswers(x)); });
    });
  }
  // The texts are drawn when the list is opened: an audit may hold thousands.
  function acceptedAnswers(x) {
    var body = h("div");
    var box = h("details", { cls: "accepted", on: { toggle: function () {
      if (!box.open || body.firstChild) return;
      x.items.forEach(function (it) {
        body.appendChild(h("div", { cls: "card" }, h("div", { cls: "hd" }, h("b", null, it[0]),
          "answer " + it[1] + " (" + it[2] + ")",
          it[4] ? h("span", { cls: "badge" }, "plain accepted too") : h("span", { cls: "badge fa" }, "plain rejected")),
          h("div", { cls: "bd" }, pre(txt(it[3])))));
      });
    } } }, h("summary", null, x.verifier + " accepted " + x.items.length + " answer" +
      (x.items.length === 1 ? "" : "s") + " dressed by " + x.family), body);
    return box;
  }

  // ---- the trajectory list: filters with counts, rows drawn only when in view ----
  function drawList(root) {
    root.appendChild(h("h2", null, "Trajectories"));
    var bar = h("div", { cls: "filters" });
    var countLine = h("div", { cls: "count" });
    var scroller = h("div", { cls: "scroller" });
    var spacer = h("div", { cls: "spacer" });
    var head = h("div", { cls: "row head" }, ["instance", "strategy", "model", "ok", "rounds", "calls", "tokens",
      "seconds", "stop reason", "verifier"].map(function (x) { return h("span", null, x); }));
    scroller.appendChild(head);
    scroller.appendChild(spacer);
    root.appendChild(bar);
    root.appendChild(countLine);
    root.appendChild(scroller);
    var selects = [];
    var search = h("input", { type: "search", placeholder: "instance id contains…", value: state.q });
    search.addEventListener("input", function () { state.q = search.value; writeHash(true); refresh(); });
    FACETS.forEach(function (f, fi) {
      if (allValues[fi].length < 2 && !state.f[f.key]) { selects.push(null); return; }
      var sel = h("select", { name: f.key });
      sel.addEventListener("change", function () {
        if (sel.value) state.f[f.key] = sel.value; else delete state.f[f.key];
        writeHash(true); refresh();
      });
      selects.push(sel);
      bar.appendChild(h("label", null, f.label, sel));
    });
    bar.appendChild(h("label", null, "search", search));
    bar.appendChild(h("label", null, "\u00a0", h("button", { on: { click: function () {
      state.f = {}; state.q = ""; search.value = ""; writeHash(true); refresh();
    } } }, "clear filters")));
    var passing = [];
    var drawn = {};
    function refresh() {
      var res = applyFilters();
      passing = res.passing;
      FACETS.forEach(function (f, fi) {
        var sel = selects[fi];
        if (!sel) return;
        sel.replaceChildren();
        var total = 0;
        for (var v in res.counts[fi]) total += res.counts[fi][v];
        sel.appendChild(h("option", { value: "" }, "all"));
        allValues[fi].forEach(function (v) {
          var o = h("option", { value: v }, v + " (" + (res.counts[fi][v] || 0) + ")");
          if (state.f[f.key] === v) o.selected = true;
          sel.appendChild(o);
        });
      });
      countLine.replaceChildren(h("b", null, String(passing.length)), " of " + T.length + " trajectories",
        passing.length ? " · " + passing.filter(function (i) { return T[i].ok; }).length + " solved" : "");
      spacer.style.height = passing.length * ROW + "px";
      scroller.style.height = Math.min(window.innerHeight * 0.62, (passing.length + 1) * ROW + 4) + "px";
      spacer.replaceChildren();
      drawn = {};
      scroller.scrollTop = 0;
      paint();
    }
    function paint() {
      var first = Math.max(0, Math.floor(scroller.scrollTop / ROW) - 10);
      var last = Math.min(passing.length, Math.ceil((scroller.scrollTop + scroller.clientHeight) / ROW) + 10);
      for (var key in drawn) {
        if (key < first || key >= last) { spacer.removeChild(drawn[key]); delete drawn[key]; }
      }
      for (var k = first; k < last; k++) {
        if (drawn[k]) continue;
        var el = listRow(passing[k]);
        el.style.top = k * ROW + "px";
        spacer.appendChild(el);
        drawn[k] = el;
      }
      if (!passing.length && !spacer.firstChild) {
        spacer.appendChild(h("div", { cls: "empty" }, "No trajectory matches."));
      }
    }
    scroller.addEventListener("scroll", function () { window.requestAnimationFrame(paint); });
    refresh();
  }

  function verifierBadges(t) {
    var out = [];
    if (!(t.vf & 1)) out.push(h("span", { cls: "muted" }, "no verdict"));
    else if (!(t.vf & 6)) out.push(h("span", { cls: "badge agree" }, "agreed"));
    if (t.vf & 2) out.push(h("span", { cls: "badge fa" }, "false accept"));
    if (t.vf & 4) out.push(h("span", { cls: "badge fr" }, "false reject"));
    return out;
  }

  function listRow(i) {
    var t = T[i], g = group(t);
    return h("div", { cls: "row", "data-index": i, on: { click: function () { go({ view: "t", t: i }); } } },
      h("span", { title: t.i }, t.i), h("span", { title: g.strategy }, g.strategy),
      h("span", { title: g.model }, g.model),
      h("span", { cls: t.ok ? "yes" : "no" }, t.ok ? "✓" : "✗"), h("span", { cls: "num" }, String(t.nr)),
      h("span", { cls: "num" }, String(t.nc)), h("span", { cls: "num" }, String(t.tk)),
      h("span", { cls: "num" }, fixed(t.s, 1)), h("span", { title: t.sr }, t.sr), h("span", null, verifierBadges(t)));
  }

  // ---- one trajectory ----
  function trajectoryTitle(i) {
    var g = group(T[i]);
    return g.strategy + " · " + g.model + (D.sources.length > 1 ? " · " + g.source : "");
  }
  function sameInstance(i) {
    var t = T[i], d = group(t).domain, out = [];
    for (var j = 0; j < T.length; j++) if (j !== i && T[j].i === t.i && group(T[j]).domain === d) out.push(j);
    return out;
  }

  function drawTrajectory(root, i) {
    var t = T[i];
    var back = h("a", { on: { click: function () { go({ view: "list" }); } } }, "← all trajectories");
    root.appendChild(h("p", null, back));
    var others = sameInstance(i);
    if (others.length) {
      root.appendChild(h("div", { cls: "muted" }, "Same instance elsewhere: ", others.map(function (j, k) {
        return h("span", null, k ? " · " : "", h("a", { on: { click: function () { go({ view: "t", t: j }); } } },
          trajectoryTitle(j)), " (", h("a", { on: { click: function () { go({ view: "cmp", a: i, b: j }); } } },
          "side by side"), ")");
      })));
    }
    root.appendChild(trajectoryPanel(i, false));
  }

  function drawCompare(root, a, b) {
    root.appendChild(h("p", null,
      h("a", { on: { click: function () { go({ view: "list" }); } } }, "← all trajectories")));
    function picker(current, other, side) {
      var choices = [current].concat(sameInstance(current).filter(function (j) { return j !== other; }));
      var sel = h("select", { on: { change: function () {
        var ch = {}; ch.a = side === "a" ? Number(sel.value) : a; ch.b = side === "b" ? Number(sel.value) : b;
        ch.view = "cmp"; go(ch);
      } } }, choices.map(function (j) {
        var o = h("option", { value: j }, trajectoryTitle(j));
        if (j === current) o.selected = true;
        return o;
      }));
      return h("label", null, "show: ", sel);
    }
    root.appendChild(h("h2", null, "Instance " + T[a].i + " side by side"));
    root.appendChild(h("div", { cls: "cols" },
      h("div", null, picker(a, b, "a"), trajectoryPanel(a, true)),
      h("div", null, picker(b, a, "b"), trajectoryPanel(b, true))));
  }

  function trajectoryPanel(i, compact) {
    var t = T[i], g = group(t);
    var panel = h("div");
    panel.appendChild(h(compact ? "h3" : "h2", null, "Instance " + t.i + " · " + g.strategy));
    panel.appendChild(h("div", { cls: "tmeta" },
      h("span", null, "model ", h("b", null, g.model)), h("span", null, "domain ", h("b", null, g.domain)),
      h("span", null, "seed ", h("b", null, String(g.seed))), h("span", null, "run ", h("b", null, g.source)),
      h("span", null, "stop ", h("b", null, t.sr)), h("span", null, "rounds ", h("b", null, String(t.nr))),
      h("span", null, "calls ", h("b", null, String(t.nc))), h("span", null, "tokens ", h("b", null, String(t.tk))),
      h("span", null, "seconds ", h("b", null, fixed(t.s, 2))), h("span", null, verifierBadges(t))));
    var fin = h("div", { cls: "final" },
      h("span", { cls: "k" }, "final answer"), pre(txt(t.fa) === null ? "(none)" : txt(t.fa)),
      h("span", { cls: "k" }, "ground truth"), h("span", { cls: t.ok ? "yes" : "no" }, t.ok ? "correct" : "wrong"));
    if (t.ref !== undefined) {
      fin.appendChild(h("span", { cls: "k" }, "reference"));
      fin.appendChild(pre(txt(t.ref)));
    }
    panel.appendChild(fin);
    panel.appendChild(timeline(t));
    return panel;
  }

  function timeline(t) {
    var root = h("div");
    var calls = t.c.map(call), rounds = t.r.map(roundRec), tools = t.tc || [], checks = t.sc || [];
    var numbers = {};
    calls.forEach(function (c) { numbers[c.round] = 1; });
    rounds.forEach(function (r) { numbers[r.round] = 1; });
    tools.forEach(function (x) { numbers[x[0]] = 1; });
    checks.forEach(function (x) { numbers[x.round] = 1; });
    var order = Object.keys(numbers).map(Number).sort(function (x, y) { return x - y; });
    var previousIds = null, previousAnswer = null;
    // Records keep no clock across calls and tool calls, so a tool call goes just before the
    // first call of its round whose prompt holds its observation (the call it informed);
    // one that no call saw closes the round's calls.
    var placed = {};
    function sawObservation(c, x) {
      var observation = txt(x[3]);
      return observation !== "" && c.ids.some(function (id) { return message(id).content.indexOf(observation) >= 0; });
    }
    order.forEach(function (n) {
      var box = h("div", { cls: "round" }, h("h3", null, "Round " + n));
      calls.forEach(function (c, ci) {
        if (c.round !== n) return;
        tools.forEach(function (x, xi) {
          if (x[0] === n && !placed[xi] && sawObservation(c, x)) {
            box.appendChild(toolCard(x));
            placed[xi] = true;
          }
        });
        box.appendChild(callCard(c, ci, previousIds));
        previousIds = c.ids;
      });
      tools.forEach(function (x, xi) { if (x[0] === n && !placed[xi]) box.appendChild(toolCard(x)); });
      checks.forEach(function (x) { if (x.round === n) box.appendChild(checkCard(x)); });
      rounds.forEach(function (r) {
        if (r.round !== n) return;
        box.appendChild(roundCard(r, previousAnswer));
        previousAnswer = r.text;
      });
      root.appendChild(box);
    });
    if (!order.length) root.appendChild(h("p", { cls: "empty" }, "This trajectory recorded no call."));
    return root;
  }

  function callCard(c, index, previousIds) {
    var hd = h("div", { cls: "hd" },
      h("span", { cls: "badge " + c.role }, c.role + (c.stage ? " · " + c.stage : "")),
      c.step !== null && c.step !== undefined ? h("span", null, "step " + c.step) : null,
      h("span", null, "call " + (index + 1)), c.sample ? h("span", null, "sample " + c.sample) : null,
      h("span", null, (c.pt + c.ct) + " tokens (" + c.pt + "+" + c.ct + ")" +
        (c.rt ? ", " + c.rt + " reasoning" : "") + (c.cpt ? ", " + c.cpt + " prompt cached" : "")),
      h("span", null, fixed(c.seconds, 2) + " s"), c.cached ? h("span", { cls: "badge cached" }, "cached") : null,
      c.finish !== "stop" ? h("span", null, "finish: " + c.finish) : null,
      c.model ? h("span", null, "model " + c.model) : null);
    var bd = h("div", { cls: "bd" });
    // The turns this call shares with the previous one are folded; what is new is shown.
    var shared = 0;
    if (previousIds) {
      while (shared < c.ids.length && shared < previousIds.length && c.ids[shared] === previousIds[shared]) shared++;
    }
    var earlier = Math.max(shared, c.ids.length - 1);
    if (earlier > 0) {
      var det = h("details", null, h("summary", null, earlier + " earlier message" + (earlier === 1 ? "" : "s") +
        (shared ? " (" + shared + " as in the previous call)" : "")));
      det.addEventListener("toggle", function () {
        if (det.open && det.childNodes.length === 1) {
          c.ids.slice(0, earlier).forEach(function (id) { det.appendChild(msgBox(id)); });
        }
      });
      bd.appendChild(det);
    }
    c.ids.slice(earlier).forEach(function (id) { bd.appendChild(msgBox(id)); });
    if (c.sent !== null) bd.appendChild(h("details", null, h("summary", null, "parameters sent"), pre(c.sent)));
    if (c.reasoning !== null) {
      bd.appendChild(h("details", { cls: "reasoning" }, h("summary", null, "the model's reasoning" +
        (c.rt ? " (" + c.rt + " tokens)" : "")), pre(c.reasoning)));
    }
    bd.appendChild(h("div", { cls: "msg" }, h("div", { cls: "role" }, "response"), pre(c.response)));
    return h("div", { cls: "card" }, hd, bd);
  }
  function msgBox(id) {
    var m = message(id);
    return h("div", { cls: "msg" }, h("div", { cls: "role" }, m.role), pre(m.content));
  }

  function roundCard(r, previousText) {
    var box = h("div", { cls: "verdict" });
    box.appendChild(h("div", null, h("b", null, "answer of round " + r.round + ": "),
      // A multi-line answer (a function) keeps its lines.
      r.answer === null ? h("span", { cls: "muted" }, "(none read)") :
        r.answer.indexOf("\n") >= 0 ? pre(r.answer) : h("code", null, r.answer), " — ground truth: ",
      h("span", { cls: r.correct ? "yes" : "no" }, r.correct ? "correct" : "wrong")));
    var v = r.verdict;
    if (v) {
      var words = { agree: ["agree", "verifier agreed with the ground truth"], false_accept: ["fa",
        "false accept: the verifier accepted a wrong answer"], false_reject: ["fr",
        "false reject: the verifier rejected a right answer"] }[r.agree];
      box.appendChild(h("div", null, "verdict (" + v.by + "): ", h("span", { cls: v.ok ? "yes" : "no" },
        v.ok ? "accepted" : "rejected"), v.mal ? " · malformed answer" : "", v.unr ? " · judge reply unreadable" : "",
        v.sc !== undefined ? " · score " + v.sc : "", " ",
        words ? h("span", { cls: "badge " + words[0] }, words[1]) : null));
      if (v.e && v.e.length) {
        box.appendChild(h("ul", null, v.e.map(function (e) {
          return h("li", null, h("b", null, e[0]), ": " + S[e[1]] + (e[2] ? " (" + e[2] + ")" : ""));
        })));
      }
    } else {
      box.appendChild(h("div", { cls: "muted" }, "no verdict in this round"));
    }
    if (r.feedback !== null) {
      box.appendChild(h("div", null, h("b", null, "fed back:")));
      box.appendChild(pre(r.feedback));
    }
    if (previousText !== null && previousText !== undefined) {
      box.appendChild(h("div", null, h("b", null, "change from the previous answer:")));
      box.appendChild(diffView(previousText, r.text === null ? "" : r.text));
    }
    return box;
  }

  function toolCard(x) {
    return h("div", { cls: "card" },
      h("div", { cls: "hd" }, h("span", { cls: "badge verify" }, "tool · " + x[1]),
        h("span", { cls: x[4] ? "yes" : "no" }, x[4] ? "ok" : "failed"), h("span", null, fixed(x[5], 3) + " s"),
        x[6] ? h("span", { cls: "badge cached" }, "cached") : null),
      h("div", { cls: "bd" }, h("div", { cls: "role" }, "input"), pre(txt(x[2])),
        h("div", { cls: "role" }, "observation"), pre(txt(x[3]))));
  }

  function checkCard(x) {
    var resultWord = { "1": "supports (+1)", "-1": "contradicts (−1)", "0": "unrelated (0)" };
    var hd = h("div", { cls: "hd" }, h("span", { cls: "badge check" }, "SelfCheck · " + x.checker),
      h("span", null, "steps checked " + x.checked + "/" + x.total + (x.max !== null && x.checked < x.total ?
        " (capped at " + x.max + ")" : "")),
      h("span", null, "confidence " + fixed(x.confidence, 3)),
      x.contradicted.length ? h("span", { cls: "no" }, "contradicted: " + x.contradicted.join(", ")) : null,
      x.unrelated ? h("span", null, "unrelated: " + x.unrelated) : null);
    var bd = h("div", { cls: "bd" });
    if (x.global !== null) {
      bd.appendChild(h("div", { cls: "role" }, "global check reply"));
      bd.appendChild(pre(txt(x.global)));
    }
    if (x.steps.length) {
      bd.appendChild(h("table", { cls: "steps" },
        h("tr", null, ["step", "text", "target", "information used", "regenerated", "comparison", "verdict"].map(
          function (c) { return h("th", null, c); })),
        x.steps.map(function (s) {
          var used = "facts " + (s[3].join(", ") || "none") + "; steps " + (s[4].join(", ") || "none") +
            (s[5] ? " (indices unreadable: all given)" : "");
          return h("tr", null, h("td", null, String(s[0])), h("td", null, pre(txt(s[1]))),
            h("td", null, pre(txt(s[2]))), h("td", null, used), h("td", null, pre(txt(s[6]))),
            h("td", null, pre(txt(s[7]))),
            h("td", { cls: s[8] > 0 ? "yes" : s[8] < 0 ? "no" : "" },
              resultWord[String(s[8])] + (s[9] ? ", unreadable" : "")));
        })));
    }
    return h("div", { cls: "card" }, hd, bd);
  }

  // ---- a small diff of our own: longest common subsequence over lines (words for one-liners) ----
  function diffOps(a, b) {
    var n = a.length, m = b.length;
    var start = 0;
    while (start < n && start < m && a[start] === b[start]) start++;
    var endA = n, endB = m;
    while (endA > start && endB > start && a[endA - 1] === b[endB - 1]) { endA--; endB--; }
    var x = a.slice(start, endA), y = b.slice(start, endB);
    var ops = [];
    for (var i = 0; i < start; i++) ops.push(["same", a[i]]);
    if (x.length * y.length > 400000) {
      // Too long for the table: everything between the common ends counts as replaced.
      x.forEach(function (s) { ops.push(["del", s]); });
      y.forEach(function (s) { ops.push(["add", s]); });
    } else {
      var L = [];
      for (i = 0; i <= x.length; i++) L.push(new Int32Array(y.length + 1));
      for (i = x.length - 1; i >= 0; i--) {
        for (var j = y.length - 1; j >= 0; j--) {
          L[i][j] = x[i] === y[j] ? L[i + 1][j + 1] + 1 : Math.max(L[i + 1][j], L[i][j + 1]);
        }
      }
      i = 0; j = 0;
      while (i < x.length || j < y.length) {
        if (i < x.length && j < y.length && x[i] === y[j]) { ops.push(["same", x[i]]); i++; j++; }
        else if (j < y.length && (i === x.length || L[i][j + 1] >= L[i + 1][j])) { ops.push(["add", y[j]]); j++; }
        else { ops.push(["del", x[i]]); i++; }
      }
    }
    for (i = endA; i < n; i++) ops.push(["same", a[i]]);
    return ops;
  }
  function diffView(a, b) {
    var box = h("div", { cls: "diff" });
    if (a === b) { box.appendChild(h("span", { cls: "muted" }, "(the same text as the previous answer)")); return box; }
    var linesA = a.split("\n"), linesB = b.split("\n");
    if (linesA.length === 1 && linesB.length === 1) {
      diffOps(a.split(/(\s+)/), b.split(/(\s+)/)).forEach(function (op) {
        box.appendChild(op[0] === "same" ? document.createTextNode(op[1]) : h("span", { cls: op[0] }, op[1]));
      });
    } else {
      diffOps(linesA, linesB).forEach(function (op) {
        box.appendChild(h("span", { cls: "ln " + op[0] }, op[1] === "" ? "\u00a0" : op[1]));
      });
    }
    return box;
  }

  // ---- live reload while `veriloop view --serve` watches a run that is still writing ----
  if (D.live && location.protocol.indexOf("http") === 0) {
    setInterval(function () {
      fetch("__veriloop/version", { cache: "no-store" }).then(function (r) { return r.json(); }).then(function (v) {
        if (v.version !== D.version) location.reload();
      }).catch(function () { /* the server stopped: keep the page as it is */ });
    }, 1500);
  }

  draw();
})();
