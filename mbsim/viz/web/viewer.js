// mbsim's viewer page (mbsim/viz/view.py fills META and DATA): bodies as their inertia boxes (one instanced
// mesh), connectors as lines between their points (or markers), joints as balls and axes, a ground grid and
// the world axes; orbit, pan, zoom; play, pause, scrub, speed, loop; a click on a body shows its values; one
// plot of a chosen channel with a cursor at the time shown.  window.VIEWER exposes the scene state to tests.
"use strict";
(async () => {
  const T = window.T;
  const META = JSON.parse(document.getElementById("meta").textContent);
  const B64 = JSON.parse(document.getElementById("data").textContent);

  async function decode(b64) {  // gzip-compressed little-endian float32, base64
    const bin = Uint8Array.from(atob(b64), (c) => c.charCodeAt(0));
    const stream = new Blob([bin]).stream().pipeThrough(new DecompressionStream("gzip"));
    return new Float32Array(await new Response(stream).arrayBuffer());
  }
  const D = {};
  await Promise.all(Object.keys(B64).map(async (k) => { D[k] = await decode(B64[k]); }));

  const nb = META.bodies.names.length, nc = META.connectors.names.length, nj = META.joints.names.length;
  let nf = D.time.length;
  const root = document.getElementById("view");
  // (smoothing costs most where drawing is done in software: a large scene goes without it)
  const renderer = new T.WebGLRenderer({ antialias: nb + nc <= 300, preserveDrawingBuffer: true });
  renderer.setPixelRatio(window.devicePixelRatio);
  renderer.setSize(root.clientWidth, root.clientHeight);
  root.appendChild(renderer.domElement);
  const scene = new T.Scene();
  scene.background = new T.Color(0xf2f2f0);
  const size = META.size;  // the scene's extent [m]
  const up = new T.Vector3(0, 0, 1);
  T.Object3D.DEFAULT_UP.copy(up);
  const grid = new T.GridHelper(1.5 * size, 30, 0xbbbbbb, 0xdddddd);
  grid.rotation.x = Math.PI / 2;  // the z-up world: the grid in the x-y plane
  grid.position.set(META.centre[0], META.centre[1], META.ground);
  scene.add(grid);
  scene.add(new T.AxesHelper(0.3 * size));
  const camera = new T.PerspectiveCamera(45, root.clientWidth / root.clientHeight, size * 1e-3, size * 100);
  camera.up.copy(up);
  camera.position.set(META.centre[0] + 0.8 * size, META.centre[1] - 1.15 * size, META.centre[2] + 0.6 * size);
  const controls = new T.OrbitControls(camera, renderer.domElement);
  controls.target.set(META.centre[0], META.centre[1], META.centre[2]);
  controls.update();
  scene.add(new T.AmbientLight(0xffffff, 0.7));
  const sun = new T.DirectionalLight(0xffffff, 1.6);
  sun.position.set(1, -2, 3);
  scene.add(sun);

  // bodies: one instanced box mesh (edges META.bodies.edges, turned by the box axes' quaternion)
  const boxes = new T.InstancedMesh(new T.BoxGeometry(1, 1, 1), new T.MeshStandardMaterial({ roughness: 0.7 }), nb);
  boxes.instanceMatrix.setUsage(T.DynamicDrawUsage);
  boxes.frustumCulled = false;
  const colour = new T.Color();
  for (let i = 0; i < nb; i++) {
    boxes.setColorAt(i, META.bodies.fixed[i] ? colour.set(0x888888) : colour.setHSL((0.58 + 0.61 * i) % 1, 0.55, 0.55));
  }
  scene.add(boxes);
  const M = new T.Matrix4(), P = new T.Vector3(), Q = new T.Quaternion(), Qb = new T.Quaternion(), S = new T.Vector3();

  // connectors: line segments between their two points, per frame
  const lineGeo = new T.BufferGeometry();
  // a spring's coil: TURNS turns of SAMPLES segments each, fewer when there are many (at most ~30 000 in all)
  const coils = META.connectors.draw.filter((d) => d === "coil").length;
  const TURNS = 8, SAMPLES = Math.max(3, Math.min(12, Math.floor(30000 / (8 * Math.max(coils, 1))))), LEAD = 0.12;
  const COIL = TURNS * SAMPLES + 2;
  const linePos = new Float32Array(6 * Math.max(nc + nj + coils * COIL, 1));
  lineGeo.setAttribute("position", new T.BufferAttribute(linePos, 3));
  const lines = new T.LineSegments(lineGeo, new T.LineBasicMaterial({ color: 0xc0392b }));
  lines.frustumCulled = false;
  scene.add(lines);
  // the joints' stops and needles (mbsim/viz/view.py, _stop_marks): drawn over everything (the stops of a
  // hinge lie inside the bodies it joins)
  const ns = META.joints.stop_of.length, nn = META.joints.needle_of.length;
  const markGeo = new T.BufferGeometry(), markPos = new Float32Array(6 * Math.max(ns + nn, 1)), markOwner = [];
  markGeo.setAttribute("position", new T.BufferAttribute(markPos, 3));
  const marks = new T.LineSegments(markGeo, new T.LineBasicMaterial({ color: 0xd35400, depthTest: false }));
  marks.renderOrder = 1;
  marks.frustumCulled = false;
  scene.add(marks);
  // joints: balls at their points
  const ballR = 0.008 * size, coilR = 0.012 * size;
  const balls = new T.InstancedMesh(new T.SphereGeometry(1, nj + nc > 300 ? 6 : 12, nj + nc > 300 ? 4 : 8), new T.MeshStandardMaterial({ color: 0x2c3e50 }),
    Math.max(nj + nc, 1));
  balls.instanceMatrix.setUsage(T.DynamicDrawUsage);
  balls.frustumCulled = false;
  scene.add(balls);

  let frame = 0, playing = false, dirty = true, selected = null, speed = 1.0, loop = true;
  const el = (id) => document.getElementById(id);
  const scrub = el("scrub"), clock = el("clock"), info = el("info");
  scrub.max = nf - 1;

  function vec(a, k) { return [a[k], a[k + 1], a[k + 2]]; }
  // a material vector of body i (arms[k …]) at the frame shown: turned by its orientation (world, i = nb:
  // as it is), and for a point carried to its position
  const W = new T.Vector3(), W2 = new T.Vector3(), Qc = new T.Quaternion();
  function turned(i, arms, k, out) {
    out.set(arms[k], arms[k + 1], arms[k + 2]);
    if (i < nb) {
      const o = 4 * (frame * nb + i);
      out.applyQuaternion(Qc.set(D.orientation[o + 1], D.orientation[o + 2], D.orientation[o + 3], D.orientation[o]));
    }
    return out;
  }
  // a helical spring from p to q (as mbsim animate draws one): straight leads, TURNS turns between whose
  // radius fades to 0 at their ends; its segments from line nl on, each owned by ``owner``
  const Cu = new T.Vector3(), Ce1 = new T.Vector3(), Ce2 = new T.Vector3(), Ca = new T.Vector3(), Cb = new T.Vector3();
  function coil(p, q, nl, owner) {
    Cu.subVectors(q, p);
    const L = Cu.length();
    if (!(L > 1e-12)) { p.toArray(linePos, 6 * nl); q.toArray(linePos, 6 * nl + 3); lineOwner[nl] = owner; return nl + 1; }
    const d = Cu.clone();
    Cu.divideScalar(L);
    const ax = Math.abs(Cu.x) <= Math.abs(Cu.y) && Math.abs(Cu.x) <= Math.abs(Cu.z) ? new T.Vector3(1, 0, 0)
      : Math.abs(Cu.y) <= Math.abs(Cu.z) ? new T.Vector3(0, 1, 0) : new T.Vector3(0, 0, 1);
    Ce1.crossVectors(Cu, ax).normalize();
    Ce2.crossVectors(Cu, Ce1);
    const r = coilR;
    Ca.copy(p);
    const n = TURNS * SAMPLES;
    for (let m = 0; m <= n + 1; m++) {
      if (m <= n) {
        const s = m / n, phi = 2 * Math.PI * TURNS * s, rad = r * Math.pow(Math.sin(Math.PI * s), 0.25);
        Cb.copy(p).addScaledVector(d, LEAD + (1 - 2 * LEAD) * s)
          .addScaledVector(Ce1, rad * Math.cos(phi)).addScaledVector(Ce2, rad * Math.sin(phi));
      } else {
        Cb.copy(q);
      }
      Ca.toArray(linePos, 6 * nl);
      Cb.toArray(linePos, 6 * nl + 3);
      lineOwner[nl++] = owner;
      Ca.copy(Cb);
    }
    return nl;
  }
  function carried(i, arms, k, out) {
    turned(i, arms, k, out);
    if (i < nb) out.add(P.fromArray(D.position, 3 * (frame * nb + i)));
    return out;
  }
  // segment m of ``arms`` (two material points of body i) as the mark k
  function mark(i, arms, m, k) {
    carried(i, arms, 6 * m, W).toArray(markPos, 6 * k);
    carried(i, arms, 6 * m + 3, W2).toArray(markPos, 6 * k + 3);
  }
  function fmt(v) { return v.map((x) => x.toPrecision(4)).join(", "); }

  function setFrame(f) {
    frame = Math.max(0, Math.min(nf - 1, f | 0));
    const o = frame * nb;
    for (let i = 0; i < nb; i++) {
      P.fromArray(D.position, 3 * (o + i));
      const k = 4 * (o + i);
      Q.set(D.orientation[k + 1], D.orientation[k + 2], D.orientation[k + 3], D.orientation[k]);
      Qb.set(META.bodies.box_q[4 * i + 1], META.bodies.box_q[4 * i + 2], META.bodies.box_q[4 * i + 3],
        META.bodies.box_q[4 * i]);
      Q.multiply(Qb);
      S.fromArray(META.bodies.edges, 3 * i);
      M.compose(P, Q, S);
      boxes.setMatrixAt(i, M);
    }
    boxes.instanceMatrix.needsUpdate = true;  // (not culled: no bounding sphere to recompute per frame)
    let nl = 0, nball = 0;
    ballOwner.length = 0;
    lineOwner.length = 0;
    const one = new T.Quaternion(), ball = new T.Vector3(ballR, ballR, ballR);
    for (let c = 0; c < nc; c++) {
      const a = META.connectors.ends[2 * c], b = META.connectors.ends[2 * c + 1];
      if (META.connectors.points[c]) {
        carried(a, META.connectors.arms, 6 * c, W);
        carried(b, META.connectors.arms, 6 * c + 3, W2);
        if (META.connectors.draw[c] === "coil") {
          nl = coil(W, W2, nl, ["connector", c]);
        } else {
          W.toArray(linePos, 6 * nl);
          W2.toArray(linePos, 6 * nl + 3);
          lineOwner[nl++] = ["connector", c];
        }
      } else {
        carried(b, META.connectors.arms, 6 * c + 3, W);
        M.compose(W, one, ball);
        ballOwner[nball] = ["connector", c];
        balls.setMatrixAt(nball++, M);
      }
    }
    for (let j = 0; j < nj; j++) {
      carried(META.joints.ends[2 * j + 1], META.joints.arms, 6 * j + 3, W);
      M.compose(W, one, ball);
      ballOwner[nball] = ["joint", j];
      balls.setMatrixAt(nball++, M);
      if (META.joints.axis[j]) {
        turned(META.joints.ends[2 * j], META.joints.axes, 3 * j, W2);
        // a slider's axis as its rail (longer), a hinge's as a short pin
        W2.multiplyScalar((RAILS.has(META.joints.types[j]) ? 0.25 : 0.06) * size);
        W.clone().sub(W2).toArray(linePos, 6 * nl);
        W.clone().add(W2).toArray(linePos, 6 * nl + 3);
        lineOwner[nl++] = ["joint", j];
      }
    }
    // the stops: marks carried by A, and B's needle between them
    for (let m = 0; m < ns; m++) {
      mark(META.joints.ends[2 * META.joints.stop_of[m]], META.joints.stop_arms, m, m);
      markOwner[m] = ["joint", META.joints.stop_of[m]];
    }
    for (let m = 0; m < nn; m++) {
      mark(META.joints.ends[2 * META.joints.needle_of[m] + 1], META.joints.needle_arms, m, ns + m);
      markOwner[ns + m] = ["joint", META.joints.needle_of[m]];
    }
    markGeo.setDrawRange(0, 2 * (ns + nn));
    markGeo.attributes.position.needsUpdate = true;
    lineGeo.setDrawRange(0, 2 * nl);
    lineGeo.attributes.position.needsUpdate = true;
    balls.count = nball;
    balls.instanceMatrix.needsUpdate = true;
    scrub.value = frame;
    clock.textContent = `t = ${D.time[frame].toFixed(4)} s   frame ${frame + 1} / ${nf}`;
    if (plot) plot.setCursor({ left: plot.valToPos(D.time[frame], "x"), top: 0 });
    if (selected !== null) show(selected);
    dirty = true;
  }

  const RAILS = new Set(["prismatic", "cylindrical"]);  // joints that slide along their axis
  const ballOwner = [], lineOwner = [];  // what each marker and line drawn belongs to: [kind, index]
  function nameOf(sel) {
    return sel[0] === "body" ? META.bodies.names[sel[1]] : sel[0] === "joint" ? META.joints.names[sel[1]]
      : META.connectors.names[sel[1]];
  }
  function show(sel) {
    const [what, i] = sel;
    if (what === "body") {
      const k = 3 * (frame * nb + i);
      info.innerHTML = `<b>${META.bodies.names[i]}</b> (body)<br>position ${fmt(vec(D.position, k))} m` +
        `<br>velocity ${fmt(vec(D.velocity, k))} m/s<br>angular velocity ${fmt(vec(D.angular_velocity, k))} rad/s`;
    } else {
      const group = what === "joint" ? "joints" : "connectors", n = META[group].names.length;
      const k = 3 * (frame * n + i), F = vec(D[group + "_force"], k), Mo = vec(D[group + "_moment"], k);
      info.innerHTML = `<b>${META[group].names[i]}</b> (${what === "joint" ? "joint" : META.connectors.types[i]})` +
        `<br>${what === "joint" ? "reaction " : ""}force on A ${fmt(F)} N (|F| ${Math.hypot(...F).toPrecision(4)} N)` +
        `<br>${what === "joint" ? "reaction " : ""}moment on A ${fmt(Mo)} N·m (|M| ${Math.hypot(...Mo).toPrecision(4)} N·m)`;
    }
    arrowAt(sel);
  }
  // the force on A of the connector or joint picked, as an arrow at its point on A (length: its magnitude
  // over the largest of the run, times a tenth of the scene)
  const arrowGeo = new T.BufferGeometry();
  arrowGeo.setAttribute("position", new T.BufferAttribute(new Float32Array(6), 3));
  const shaft = new T.LineSegments(arrowGeo, new T.LineBasicMaterial({ color: 0x1f6fd1 }));
  const head = new T.InstancedMesh(new T.CylinderGeometry(0, 0.012 * size, 0.04 * size, 12),
    new T.MeshBasicMaterial({ color: 0x1f6fd1 }), 1);  // (one instance: the bundle's mesh class)
  shaft.frustumCulled = head.frustumCulled = false;
  scene.add(shaft, head);
  shaft.visible = head.visible = false;
  const Ya = new T.Vector3(0, 1, 0);
  function arrowAt(sel) {
    shaft.visible = head.visible = false;
    if (sel === null || sel[0] === "body") return;
    const group = sel[0] === "joint" ? "joints" : "connectors", n = META[group].names.length, a = D[group + "_force"];
    let big = 0;
    for (let f = 0; f < nf; f++) { const k = 3 * (f * n + sel[1]); big = Math.max(big, Math.hypot(a[k], a[k + 1], a[k + 2])); }
    const k = 3 * (frame * n + sel[1]), F = new T.Vector3(a[k], a[k + 1], a[k + 2]), m = F.length();
    if (!(big > 0) || !(m > 0)) return;
    const at = carried(META[group].ends[2 * sel[1]], META[group].arms, 6 * sel[1], new T.Vector3());
    const tip = at.clone().addScaledVector(F, 0.1 * size / big);
    at.toArray(arrowGeo.attributes.position.array, 0);
    tip.toArray(arrowGeo.attributes.position.array, 3);
    arrowGeo.attributes.position.needsUpdate = true;
    head.setMatrixAt(0, new T.Matrix4().compose(tip, new T.Quaternion().setFromUnitVectors(Ya, F.normalize()),
      new T.Vector3(1, 1, 1)));
    head.instanceMatrix.needsUpdate = true;
    shaft.visible = head.visible = true;
  }

  scrub.oninput = () => { playing = false; el("play").textContent = "Play"; setFrame(+scrub.value); };
  el("play").onclick = () => { playing = !playing; el("play").textContent = playing ? "Pause" : "Play"; };
  el("speed").onchange = (e) => { speed = +e.target.value; };
  el("loop").onchange = (e) => { loop = e.target.checked; };

  // one plot: a chosen channel against time, its cursor at the frame shown
  const channels = META.channels;
  const select = el("channel");
  channels.forEach((c, i) => { const o = document.createElement("option"); o.value = i; o.textContent = c.label; select.appendChild(o); });
  let plot = null;
  function channel(i) {
    const c = channels[i];
    if (c.data) return D[c.data];
    const out = new Float32Array(nf);
    if (c.vec) {  // the magnitude of a connector's force or a joint's reaction
      const a = D[c.vec], m = a.length / (3 * nf);
      for (let f = 0; f < nf; f++) { const k = 3 * (f * m + c.index); out[f] = Math.hypot(a[k], a[k + 1], a[k + 2]); }
      return out;
    }
    for (let f = 0; f < nf; f++) out[f] = D.position[3 * (f * nb + c.body) + c.axis];  // a body's coordinate
    return out;
  }
  function drawPlot(i) {
    if (plot) plot.destroy();
    const box = el("plot");
    plot = new window.uPlot({ width: 380, height: 190, scales: { x: { time: false } }, legend: { show: true },
      series: [{ label: "t [s]" }, { label: channels[i].label, stroke: "#c0392b", width: 1.5 }] },
    [Array.from(D.time), Array.from(channel(i))], box);
    setFrame(frame);
  }
  select.onchange = () => drawPlot(+select.value);
  drawPlot(0);

  // a click on a body: its name and values
  const ray = new T.Raycaster(), mouse = new T.Vector2();
  renderer.domElement.addEventListener("click", (e) => {
    const r = renderer.domElement.getBoundingClientRect();
    mouse.set(((e.clientX - r.left) / r.width) * 2 - 1, -((e.clientY - r.top) / r.height) * 2 + 1);
    ray.setFromCamera(mouse, camera);
    ray.params.Line.threshold = 0.01 * size;
    // (the lines move every frame: their bounds anew; the marks, drawn over everything, are picked first)
    lineGeo.computeBoundingSphere();
    markGeo.computeBoundingSphere();
    const hit = ray.intersectObject(marks, false)[0] || ray.intersectObjects([boxes, balls, lines], false)[0];
    if (!hit) return;
    if (hit.object === boxes) selected = ["body", hit.instanceId];
    else if (hit.object === balls) selected = ballOwner[hit.instanceId];
    else if (hit.object === marks) selected = markOwner[Math.floor(hit.index / 2)];
    else selected = lineOwner[Math.floor(hit.index / 2)];
    if (!selected) { selected = null; return; }
    show(selected);
    window.VIEWER.picked = nameOf(selected);
  });
  controls.addEventListener("change", () => { dirty = true; });
  window.addEventListener("resize", () => {
    renderer.setSize(root.clientWidth, root.clientHeight);
    camera.aspect = root.clientWidth / root.clientHeight;
    camera.updateProjectionMatrix();
    dirty = true;
  });

  // play in real time (times the speed), skipping frames when drawing lags
  let wallStart = null, simStart = 0;
  function tick(now) {
    if (playing) {
      if (wallStart === null) { wallStart = now; simStart = D.time[frame]; }
      let t = simStart + speed * (now - wallStart) / 1000;
      if (t > D.time[nf - 1]) {
        if (loop) { wallStart = now; simStart = D.time[0]; t = D.time[0]; } else { playing = false; el("play").textContent = "Play"; }
      }
      let f = frame;
      while (f + 1 < nf && D.time[f + 1] <= t) f++;
      if (t < D.time[frame]) f = 0;
      if (f !== frame) setFrame(f);
    } else {
      wallStart = null;
    }
    if (dirty) { renderer.render(scene, camera); dirty = false; window.VIEWER.rendered++; }
    requestAnimationFrame(tick);
  }
  window.VIEWER = {
    setFrame, get frame() { return frame; }, get playing() { return playing; }, rendered: 0, picked: null,
    nframes: nf, time: D.time, bodies: META.bodies.names, live: !!META.live,
    // the pose the page draws for body i at the frame shown: [x, y, z], quaternion [w, x, y, z] (of the body)
    pose(i) { const k = frame * nb + i; return [vec(D.position, 3 * k),
      [D.orientation[4 * k], D.orientation[4 * k + 1], D.orientation[4 * k + 2], D.orientation[4 * k + 3]]]; },
    // the drawn box's world matrix of body i (column-major, as three.js keeps it)
    boxMatrix(i) { const m = new T.Matrix4(); boxes.getMatrixAt(i, m); return Array.from(m.elements); },
    // the screen position of body i's centre, in CSS pixels (for a test's click)
    screen(i) { const r = renderer.domElement.getBoundingClientRect(); const v = new T.Vector3().fromArray(D.position, 3 * (frame * nb + i)).project(camera);
      return [r.left + (v.x + 1) / 2 * r.width, r.top + (1 - v.y) / 2 * r.height]; },
    plotCursor() { return plot ? plot.cursor.left : null; },
    // the screen position of joint j's ball (its point on B), in CSS pixels
    jointScreen(j) { const r = renderer.domElement.getBoundingClientRect();
      const v = carried(META.joints.ends[2 * j + 1], META.joints.arms, 6 * j + 3, new T.Vector3()).project(camera);
      return [r.left + (v.x + 1) / 2 * r.width, r.top + (1 - v.y) / 2 * r.height]; },
    joints: META.joints.names,
    // the line segments drawn at the frame shown (connectors with points in order, then joints' axes)
    segments() { return Array.from(linePos.slice(0, 3 * lineGeo.drawRange.count)); },
    // the two points connector c is drawn between at the frame shown
    connectorEnds(c) {
      const a = carried(META.connectors.ends[2 * c], META.connectors.arms, 6 * c, new T.Vector3());
      const b = carried(META.connectors.ends[2 * c + 1], META.connectors.arms, 6 * c + 3, new T.Vector3());
      return [a.toArray(), b.toArray()];
    },
    // the stops' marks and the needles drawn at the frame shown: [[p0, p1], …] each
    stops() { return Array.from({ length: ns }, (_, m) => [vec(markPos, 6 * m), vec(markPos, 6 * m + 3)]); },
    needles() { return Array.from({ length: nn }, (_, m) => [vec(markPos, 6 * (ns + m)), vec(markPos, 6 * (ns + m) + 3)]); },
    plotX(t) { return plot ? plot.valToPos(t, "x") : null; },
    // the force arrow drawn for the connector or joint picked: [x0, y0, z0, x1, y1, z1], or null
    arrow() { return shaft.visible ? Array.from(arrowGeo.attributes.position.array) : null; },
  };
  // live (a run being computed: mbsim run --view): blocks of frames as server-sent events, appended; the
  // view follows the newest frame while "follow" is on (scrubbing or playing turns it off)
  let follow = !!META.live, lastPlot = 0;
  function appendBlock(arrays) {
    for (const k of Object.keys(arrays)) {
      const a = D[k], b = arrays[k], c = new Float32Array(a.length + b.length);
      c.set(a); c.set(b, a.length); D[k] = c;
    }
    nf = D.time.length;
    scrub.max = nf - 1;
    window.VIEWER.nframes = nf;
    window.VIEWER.time = D.time;
    const now = performance.now();
    if (now - lastPlot > 500) { lastPlot = now; plot.setData([Array.from(D.time), Array.from(channel(+select.value))]); }
    if (follow) setFrame(nf - 1);
  }
  if (META.live) {
    const status = el("live");
    status.textContent = "live: running …";
    scrub.addEventListener("input", () => { follow = false; });
    el("play").addEventListener("click", () => { follow = false; });
    let chain = Promise.resolve();
    const events = new EventSource("events");
    events.onmessage = (e) => {
      chain = chain.then(async () => {
        const packed = JSON.parse(e.data), arrays = {};
        await Promise.all(Object.keys(packed).map(async (k) => { arrays[k] = await decode(packed[k]); }));
        appendBlock(arrays);
        window.VIEWER.blocks++;
      });
    };
    // the run is over and what was sent differs from its file (a block read half flushed): load again
    events.addEventListener("reload", () => { events.close(); location.reload(); });
    events.addEventListener("end", (e) => {
      events.close();
      chain = chain.then(() => {
        plot.setData([Array.from(D.time), Array.from(channel(+select.value))]);
        status.textContent = "run " + JSON.parse(e.data);
        window.VIEWER.ended = JSON.parse(e.data);
      });
    });
  }
  window.VIEWER.blocks = 0;
  window.VIEWER.ended = null;
  setFrame(0);
  if (follow) setFrame(nf - 1);
  requestAnimationFrame(tick);
  window.VIEWER.ready = true;
})().catch((e) => { console.error(e); document.body.insertAdjacentHTML("beforeend", `<pre id="error">${e}</pre>`); });
