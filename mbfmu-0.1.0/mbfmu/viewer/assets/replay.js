// mbfmu standalone replay: a small canvas-2D 3D renderer (painter's algorithm).
// No dependencies, no network. Reads the scene from <script id="mbfmu-data">.
// Camera math mirrors mbfmu/viewer/camera.py (Camera.basis / Camera.project).
(function () {
  "use strict";
  var D = JSON.parse(document.getElementById("mbfmu-data").textContent);

  function bytes(s) {
    var b = atob(s), u = new Uint8Array(b.length);
    for (var i = 0; i < b.length; i++) u[i] = b.charCodeAt(i);
    return u.buffer;
  }
  function f32(s) { return new Float32Array(bytes(s)); }
  function f64(s) { return new Float64Array(bytes(s)); }
  function i32(s) { return new Int32Array(bytes(s)); }

  var time = f64(D.time), nf = time.length, ns = D.shapes.length;
  var R = f32(D.R), P = f32(D.p), trails = f32(D.trails), ntr = D.ntrails, nst = D.nstations;
  var shapes = D.shapes.map(function (s) {
    return { kind: s.kind, rgb: s.rgb, name: s.name, V: f32(s.V), F: i32(s.F),
             radius: s.radius, beam: s.beam ? f32(s.beam) : null };
  });
  var t0 = time[0], t1 = time[nf - 1];
  var cam0 = D.camera;
  var cam = { target: cam0.target.slice(), distance: cam0.distance, azimuth: cam0.azimuth,
              elevation: cam0.elevation, fov: cam0.fov };
  var LIGHT = norm([0.3, -0.5, 0.8]);
  var state = { t: t0, playing: false, speed: D.speed || 1, trails: D.trails_on !== false, wall: null };

  var canvas = document.getElementById("mbfmu-canvas"), ctx = canvas.getContext("2d");
  var el = function (id) { return document.getElementById(id); };
  var slider = el("mbfmu-slider"), label = el("mbfmu-time"), playBtn = el("mbfmu-play");
  var speedSel = el("mbfmu-speed"), trailBox = el("mbfmu-trails"), link = el("mbfmu-link");

  // ---------------------------------------------------------------- vectors
  function sub(a, b) { return [a[0] - b[0], a[1] - b[1], a[2] - b[2]]; }
  function dot(a, b) { return a[0] * b[0] + a[1] * b[1] + a[2] * b[2]; }
  function cross(a, b) { return [a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]]; }
  function norm(a) { var n = Math.sqrt(dot(a, a)) || 1; return [a[0] / n, a[1] / n, a[2] / n]; }

  function basis() {
    var c = cam.target, ce = Math.cos(cam.elevation), se = Math.sin(cam.elevation);
    var eye = [c[0] + cam.distance * ce * Math.cos(cam.azimuth), c[1] + cam.distance * ce * Math.sin(cam.azimuth),
               c[2] + cam.distance * se];
    var f = norm(sub(c, eye)), r = cross(f, [0, 0, 1]);
    r = Math.sqrt(dot(r, r)) > 1e-9 ? norm(r) : [1, 0, 0];
    return { eye: eye, r: r, u: cross(r, f), f: f };
  }

  // ---------------------------------------------------------------- time
  function frameAt(t) {  // k, a: t lies between time[k] and time[k+1] with weight a of k+1
    if (t <= t0) return [0, 0];
    if (t >= t1) return [nf - 1, 0];
    var lo = 0, hi = nf - 1;
    while (hi - lo > 1) { var m = (lo + hi) >> 1; if (time[m] <= t) lo = m; else hi = m; }
    var dt = time[hi] - time[lo];
    return [lo, dt > 0 ? (t - time[lo]) / dt : 0];
  }
  function lerp(arr, stride, k, a, off, n) {  // n values at frame k (+a toward k+1)
    var out = new Array(n), b0 = k * stride + off, b1 = Math.min(k + 1, nf - 1) * stride + off;
    for (var i = 0; i < n; i++) out[i] = arr[b0 + i] + a * (arr[b1 + i] - arr[b0 + i]);
    return out;
  }
  // Orientations are slerped: an element-wise blend of two rotation matrices
  // is not a rotation (a body turning 90 deg between frames shrinks by 0.71).
  function quat(M, o) {  // unit quaternion (w, x, y, z) of the row-major matrix M[o..o+8]
    var m = Array.prototype.slice.call(M, o, o + 9), tr = m[0] + m[4] + m[8], s;
    // Shepperd: divide by the largest of 4w^2, 4x^2, 4y^2, 4z^2 (never near 0)
    if (tr >= m[0] && tr >= m[4] && tr >= m[8]) {
      s = 2 * Math.sqrt(1 + tr); return [s / 4, (m[7] - m[5]) / s, (m[2] - m[6]) / s, (m[3] - m[1]) / s];
    }
    if (m[0] >= m[4] && m[0] >= m[8]) {
      s = 2 * Math.sqrt(1 + m[0] - m[4] - m[8]); return [(m[7] - m[5]) / s, s / 4, (m[1] + m[3]) / s, (m[2] + m[6]) / s];
    }
    if (m[4] >= m[8]) {
      s = 2 * Math.sqrt(1 + m[4] - m[0] - m[8]); return [(m[2] - m[6]) / s, (m[1] + m[3]) / s, s / 4, (m[5] + m[7]) / s];
    }
    s = 2 * Math.sqrt(1 + m[8] - m[0] - m[4]); return [(m[3] - m[1]) / s, (m[2] + m[6]) / s, (m[5] + m[7]) / s, s / 4];
  }
  function rotAt(k, a, si) {  // R_WB of shape si at frame k (+a toward k+1), row-major
    var o = (k * ns + si) * 9;
    if (a === 0 || k + 1 >= nf) return Array.prototype.slice.call(R, o, o + 9);
    var q0 = quat(R, o), q1 = quat(R, o + ns * 9), d = 0, i;
    for (i = 0; i < 4; i++) d += q0[i] * q1[i];
    if (d < 0) { d = -d; q1 = q1.map(function (c) { return -c; }); }  // the shorter arc
    var w0 = 1 - a, w1 = a;
    if (d < 0.9995) {  // else nearly parallel: normalized lerp
      var th = Math.acos(d), sn = Math.sin(th);
      w0 = Math.sin((1 - a) * th) / sn; w1 = Math.sin(a * th) / sn;
    }
    var q = [], n = 0;
    for (i = 0; i < 4; i++) { q.push(w0 * q0[i] + w1 * q1[i]); n += q[i] * q[i]; }
    n = Math.sqrt(n);
    var w = q[0] / n, x = q[1] / n, y = q[2] / n, z = q[3] / n;
    return [1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y),
            2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x),
            2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)];
  }

  // ---------------------------------------------------------------- drawing
  function resize() {
    var w = window.innerWidth, h = window.innerHeight, dpr = window.devicePixelRatio || 1;
    if (canvas.width !== Math.round(w * dpr) || canvas.height !== Math.round(h * dpr)) {
      canvas.width = Math.round(w * dpr); canvas.height = Math.round(h * dpr);
    }
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    return [w, h];
  }

  function tubeVerts(pts, radius, Rm) {  // same construction as meshes.tube_mesh
    var n = pts.length / 3, seg = 8, V = [], y = [Rm[1], Rm[4], Rm[7]];
    for (var i = 0; i < n; i++) {
      var a = Math.max(i - 1, 0), b = Math.min(i + 1, n - 1);
      var T = norm([pts[3 * b] - pts[3 * a], pts[3 * b + 1] - pts[3 * a + 1], pts[3 * b + 2] - pts[3 * a + 2]]);
      var d = dot(T, y), Y = norm([y[0] - d * T[0], y[1] - d * T[1], y[2] - d * T[2]]), Z = cross(T, Y);
      for (var j = 0; j < seg; j++) {
        var th = 2 * Math.PI * j / seg, c = Math.cos(th) * radius, s = Math.sin(th) * radius;
        V.push(pts[3 * i] + c * Y[0] + s * Z[0], pts[3 * i + 1] + c * Y[1] + s * Z[1], pts[3 * i + 2] + c * Y[2] + s * Z[2]);
      }
    }
    var F = [];
    for (i = 0; i < n - 1; i++) for (j = 0; j < seg; j++) {
      var p0 = i * seg + j, p1 = i * seg + (j + 1) % seg;
      F.push(p0, p1, p1 + seg, p0, p1 + seg, p0 + seg);
    }
    return [V, F];
  }

  function draw() {
    var wh = resize(), W = wh[0], H = wh[1], B = basis();
    var focal = (H / 2) / Math.tan(cam.fov / 2);
    function proj(x, y, z) {
      var d = [x - B.eye[0], y - B.eye[1], z - B.eye[2]];
      var zc = dot(d, B.f);
      return [W / 2 + focal * dot(d, B.r) / zc, H / 2 - focal * dot(d, B.u) / zc, zc];
    }
    ctx.fillStyle = D.background;
    ctx.fillRect(0, 0, W, H);

    // floor grid under the scene
    var g = D.grid, near = 1e-3 * cam.distance;
    ctx.strokeStyle = "#d0d0d0"; ctx.lineWidth = 1;
    for (var gi = 0; gi <= g.n; gi++) {
      var s = -g.half + 2 * g.half * gi / g.n;
      [[g.c[0] + s, g.c[1] - g.half, g.c[0] + s, g.c[1] + g.half],
       [g.c[0] - g.half, g.c[1] + s, g.c[0] + g.half, g.c[1] + s]].forEach(function (L) {
        var a = proj(L[0], L[1], g.z), b = proj(L[2], L[3], g.z);
        if (a[2] > near && b[2] > near) { ctx.beginPath(); ctx.moveTo(a[0], a[1]); ctx.lineTo(b[0], b[1]); ctx.stroke(); }
      });
    }

    // world axes at the origin (x red, y green, z blue), one grid square long
    var o = proj(0, 0, 0), L = g.step;
    if (o[2] > near) {
      [[L, 0, 0, "#d62728", "x"], [0, L, 0, "#2ca02c", "y"], [0, 0, L, "#1f77b4", "z"]].forEach(function (A) {
        var e = proj(A[0], A[1], A[2]);
        if (e[2] <= near) return;
        ctx.strokeStyle = A[3]; ctx.fillStyle = A[3]; ctx.lineWidth = 2.5;
        ctx.beginPath(); ctx.moveTo(o[0], o[1]); ctx.lineTo(e[0], e[1]); ctx.stroke();
        ctx.font = "12px sans-serif"; ctx.fillText(A[4], e[0] + 3, e[1] - 3);
      });
    }

    var ka = frameAt(state.t), k = ka[0], a = ka[1], tris = [];
    for (var si = 0; si < ns; si++) {
      var sh = shapes[si], Rm = rotAt(k, a, si), V, F;
      if (sh.beam) {
        var vf = tubeVerts(lerp(sh.beam, nst * 3, k, a, 0, nst * 3), sh.radius, Rm); V = vf[0]; F = vf[1];
      } else {
        var p = lerp(P, ns * 3, k, a, si * 3, 3), Vl = sh.V; V = new Array(Vl.length);
        for (var v = 0; v < Vl.length; v += 3) {
          V[v] = Rm[0] * Vl[v] + Rm[1] * Vl[v + 1] + Rm[2] * Vl[v + 2] + p[0];
          V[v + 1] = Rm[3] * Vl[v] + Rm[4] * Vl[v + 1] + Rm[5] * Vl[v + 2] + p[1];
          V[v + 2] = Rm[6] * Vl[v] + Rm[7] * Vl[v + 1] + Rm[8] * Vl[v + 2] + p[2];
        }
        F = sh.F;
      }
      var S = new Array(V.length);
      for (v = 0; v < V.length; v += 3) { var q = proj(V[v], V[v + 1], V[v + 2]); S[v] = q[0]; S[v + 1] = q[1]; S[v + 2] = q[2]; }
      for (var f = 0; f < F.length; f += 3) {
        var i0 = 3 * F[f], i1 = 3 * F[f + 1], i2 = 3 * F[f + 2];
        if (S[i0 + 2] < near || S[i1 + 2] < near || S[i2 + 2] < near) continue;
        var n = norm(cross([V[i1] - V[i0], V[i1 + 1] - V[i0 + 1], V[i1 + 2] - V[i0 + 2]],
                           [V[i2] - V[i0], V[i2 + 1] - V[i0 + 1], V[i2 + 2] - V[i0 + 2]]));
        var shade = 0.35 + 0.55 * Math.abs(dot(n, LIGHT));  // at most 0.9: a white part stays visible on white
        tris.push([(S[i0 + 2] + S[i1 + 2] + S[i2 + 2]) / 3, S[i0], S[i0 + 1], S[i1], S[i1 + 1], S[i2], S[i2 + 1],
                   "rgb(" + sh.rgb.map(function (c) { return Math.round(255 * Math.min(1, c * shade)); }).join(",") + ")"]);
      }
    }
    tris.sort(function (x, y) { return y[0] - x[0]; });
    ctx.lineWidth = 0.6; ctx.lineJoin = "round";
    for (var ti = 0; ti < tris.length; ti++) {
      var T = tris[ti];
      ctx.fillStyle = T[7]; ctx.strokeStyle = T[7];
      ctx.beginPath(); ctx.moveTo(T[1], T[2]); ctx.lineTo(T[3], T[4]); ctx.lineTo(T[5], T[6]); ctx.closePath();
      ctx.fill(); ctx.stroke();
    }

    if (state.trails && ntr > 0) {  // the path of each trail point up to now
      ctx.strokeStyle = D.trail_color; ctx.lineWidth = 1.5;
      for (var j = 0; j < ntr; j++) {
        ctx.beginPath();
        for (var kk = 0; kk <= k; kk++) {
          var o = (kk * ntr + j) * 3, pp = proj(trails[o], trails[o + 1], trails[o + 2]);
          if (kk === 0) ctx.moveTo(pp[0], pp[1]); else ctx.lineTo(pp[0], pp[1]);
        }
        var cur = lerp(trails, ntr * 3, k, a, j * 3, 3), pc = proj(cur[0], cur[1], cur[2]);
        ctx.lineTo(pc[0], pc[1]); ctx.stroke();
      }
    }
    ctx.fillStyle = "#333"; ctx.font = "14px sans-serif";
    ctx.fillText(D.title + "   t = " + state.t.toFixed(3) + " s", 10, 20);
    ctx.font = "12px sans-serif";
    ctx.fillText("grid square " + g.label + ", axes x y z at the world origin", 10, 38);
  }

  // ---------------------------------------------------------------- signal plot
  var plot = el("mbfmu-plot"), sigs = (D.signals || []).map(function (g) {
    return { name: g.name, color: g.color, t: f64(g.t), y: f64(g.y), at: f64(g.at_frames) };
  });
  var units = [];  // one panel (y axis) per unit, in the order the signals come
  sigs.forEach(function (g, j) {
    g.unit = (D.signals[j].unit || "1");
    if (units.indexOf(g.unit) < 0) units.push(g.unit);
  });
  function drawPlot() {
    if (!sigs.length) return;
    plot.hidden = false;
    var PH = 120, Bm = 22;
    if (plot.height !== PH * units.length + Bm) plot.height = PH * units.length + Bm;
    var c = plot.getContext("2d"), w = plot.width, L = 50, Rr = 8, T = 8;
    var X = function (t) { return L + (w - L - Rr) * (t - t0) / ((t1 - t0) || 1); };
    var ka = frameAt(state.t);
    c.clearRect(0, 0, w, plot.height);
    units.forEach(function (unit, ui) {
      var top = ui * PH + T, bot = (ui + 1) * PH - 4, lo = Infinity, hi = -Infinity;
      var mine = sigs.filter(function (g) { return g.unit === unit; });
      mine.forEach(function (g) { for (var i = 0; i < g.y.length; i++) { lo = Math.min(lo, g.y[i]); hi = Math.max(hi, g.y[i]); } });
      if (!(hi > lo)) { hi = lo + 1; lo -= 1; }
      var Y = function (y) { return top + (bot - top) * (hi - y) / (hi - lo); };
      c.strokeStyle = "#999"; c.lineWidth = 1; c.strokeRect(L, top, w - L - Rr, bot - top);
      c.fillStyle = "#333"; c.font = "10px sans-serif";
      c.fillText(hi.toPrecision(3), 2, top + 8); c.fillText(lo.toPrecision(3), 2, bot);
      c.save(); c.translate(12, (top + bot) / 2); c.rotate(-Math.PI / 2); c.textAlign = "center";
      c.fillText("[" + unit + "]", 0, 0); c.restore();
      mine.forEach(function (g, j) {
        c.strokeStyle = g.color; c.beginPath();
        for (var i = 0; i < g.t.length; i++) { if (i) c.lineTo(X(g.t[i]), Y(g.y[i])); else c.moveTo(X(g.t[i]), Y(g.y[i])); }
        c.stroke();
        var k = ka[0], v = g.at[k] + ka[1] * (g.at[Math.min(k + 1, nf - 1)] - g.at[k]);
        c.fillStyle = g.color; c.fillText(g.name + " = " + v.toPrecision(4) + " " + unit, L + 6, top + 12 + 12 * j);
      });
      c.strokeStyle = "#000"; c.beginPath(); c.moveTo(X(state.t), top); c.lineTo(X(state.t), bot); c.stroke();
    });
    c.fillStyle = "#333";
    c.fillText(t0.toFixed(2) + " s", L, plot.height - 8); c.fillText(t1.toFixed(2) + " s", w - Rr - 40, plot.height - 8);
  }

  // ---------------------------------------------------------------- controls
  function setTime(t, fromSlider) {
    state.t = Math.min(t1, Math.max(t0, t));
    if (!fromSlider) slider.value = t1 > t0 ? Math.round(1000 * (state.t - t0) / (t1 - t0)) : 0;
    label.textContent = state.t.toFixed(3) + " s";
    link.href = "#t=" + state.t.toFixed(4) + (state.trails ? "&trails=1" : "");
    draw();
    drawPlot();
    status.dataset.t = String(state.t);
  }
  function setPlaying(on) {
    state.playing = on; playBtn.textContent = on ? "pause" : "play"; state.wall = null;
    if (on) { if (state.t >= t1) setTime(t0); requestAnimationFrame(tick); }
  }
  function tick(ms) {
    if (!state.playing) return;
    if (state.wall !== null) setTime(state.t + state.speed * (ms - state.wall) / 1000);
    state.wall = ms;
    if (state.t >= t1) { setPlaying(false); return; }
    requestAnimationFrame(tick);
  }
  function fromHash() {
    var tr = /[#&]trails=([01])/.exec(location.hash);  // #t=1.5&trails=1 opens with the trails shown
    if (tr) { state.trails = tr[1] === "1"; trailBox.checked = state.trails; }
    var m = /[#&]t=([-+0-9.eE]+)/.exec(location.hash);
    if (m) { setPlaying(false); setTime(parseFloat(m[1])); return true; }
    return false;
  }

  playBtn.addEventListener("click", function () { setPlaying(!state.playing); });
  slider.addEventListener("input", function () { setTime(t0 + (t1 - t0) * slider.value / 1000, true); });
  speedSel.value = String(state.speed);
  if (speedSel.value !== String(state.speed)) {
    var opt = document.createElement("option"); opt.value = opt.textContent = String(state.speed);
    speedSel.appendChild(opt); speedSel.value = opt.value;
  }
  speedSel.addEventListener("change", function () { state.speed = parseFloat(speedSel.value); });
  trailBox.checked = state.trails;
  trailBox.addEventListener("change", function () { state.trails = trailBox.checked; draw(); });
  el("mbfmu-reset").addEventListener("click", function () {
    cam.target = cam0.target.slice(); cam.distance = cam0.distance; cam.azimuth = cam0.azimuth; cam.elevation = cam0.elevation; draw();
  });
  var drag = null;
  canvas.addEventListener("pointerdown", function (e) { drag = [e.clientX, e.clientY]; canvas.setPointerCapture(e.pointerId); });
  canvas.addEventListener("pointerup", function () { drag = null; });
  canvas.addEventListener("pointermove", function (e) {
    if (!drag) return;
    cam.azimuth -= 0.01 * (e.clientX - drag[0]);
    cam.elevation = Math.max(-1.55, Math.min(1.55, cam.elevation + 0.01 * (e.clientY - drag[1])));
    drag = [e.clientX, e.clientY]; draw();
  });
  canvas.addEventListener("wheel", function (e) {
    e.preventDefault(); cam.distance *= Math.exp(0.001 * e.deltaY); draw();
  }, { passive: false });
  document.addEventListener("keydown", function (e) {
    if (e.key === " ") { e.preventDefault(); setPlaying(!state.playing); }
    else if (e.key === "ArrowRight") setTime(state.t + (t1 - t0) / 100);
    else if (e.key === "ArrowLeft") setTime(state.t - (t1 - t0) / 100);
  });
  window.addEventListener("resize", draw);
  window.addEventListener("hashchange", fromHash);

  var status = el("mbfmu-status");
  if (!fromHash()) { setTime(D.start === null ? t0 : D.start); if (D.autoplay) setPlaying(true); }
  status.dataset.ready = "1";
})();
