"""``to_html(model, traj, path=None)``: a self-contained HTML replay of a trajectory.

The page embeds the geoms (type, size, local pose, mesh hull vertices) and the world pose of every
body per frame as JSON, and draws them with three.js (loaded from a CDN). Host-side only.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from ..types import GeomType

__all__ = ["to_html"]

_TEMPLATE = """<!doctype html>
<html><head><meta charset="utf-8"><title>jaxsim_contact replay</title>
<style>body{margin:0;overflow:hidden;font-family:sans-serif}#info{position:absolute;top:8px;left:8px;
background:#fffc;padding:4px 8px;border-radius:4px}</style></head>
<body><div id="info">frame <span id="f">0</span> / __NFRAMES__ &nbsp; t = <span id="t">0</span> s</div>
<script type="importmap">{"imports":{"three":"https://unpkg.com/three@0.160.0/build/three.module.js",
"three/addons/":"https://unpkg.com/three@0.160.0/examples/jsm/"}}</script>
<script type="module">
import * as THREE from 'three';
import {OrbitControls} from 'three/addons/controls/OrbitControls.js';
import {ConvexGeometry} from 'three/addons/geometries/ConvexGeometry.js';
const DATA = __DATA__;
const scene = new THREE.Scene(); scene.background = new THREE.Color(0xeeeeee);
const camera = new THREE.PerspectiveCamera(45, innerWidth/innerHeight, 0.01, 100);
camera.up.set(0,0,1); camera.position.set(1.5,-1.5,1.2);
const renderer = new THREE.WebGLRenderer({antialias:true}); renderer.setSize(innerWidth, innerHeight);
document.body.appendChild(renderer.domElement);
const controls = new OrbitControls(camera, renderer.domElement);
scene.add(new THREE.HemisphereLight(0xffffff, 0x444444, 1.5));
const sun = new THREE.DirectionalLight(0xffffff, 1.5); sun.position.set(2,-3,5); scene.add(sun);
const bodies = DATA.bodies.map(() => { const g = new THREE.Group(); scene.add(g); return g; });
const colors = [0x4e79a7,0xf28e2b,0xe15759,0x76b7b2,0x59a14f,0xedc948,0xb07aa1,0xff9da7];
DATA.geoms.forEach((g, i) => {
  let geo;
  if (g.type === 'plane') geo = new THREE.PlaneGeometry(4, 4);
  else if (g.type === 'sphere') geo = new THREE.SphereGeometry(g.size[0], 24, 16);
  else if (g.type === 'ellipsoid') { geo = new THREE.SphereGeometry(1, 24, 16); geo.scale(g.size[0], g.size[1], g.size[2]); }
  else if (g.type === 'box') geo = new THREE.BoxGeometry(2*g.size[0], 2*g.size[1], 2*g.size[2]);
  else if (g.type === 'capsule') { geo = new THREE.CapsuleGeometry(g.size[0], 2*g.size[1], 8, 16); geo.rotateX(Math.PI/2); }
  else if (g.type === 'cylinder') { geo = new THREE.CylinderGeometry(g.size[0], g.size[0], 2*g.size[1], 24); geo.rotateX(Math.PI/2); }
  else if (g.type === 'mesh') geo = new ConvexGeometry(g.vertices.map(v => new THREE.Vector3(...v)));
  else return;
  const mat = new THREE.MeshStandardMaterial({color: g.type === 'plane' ? 0xcccccc : colors[i % colors.length]});
  const mesh = new THREE.Mesh(geo, mat);
  mesh.position.set(...g.pos); mesh.quaternion.set(g.quat[1], g.quat[2], g.quat[3], g.quat[0]);
  bodies[g.body].add(mesh);
});
let frame = 0;
function show(k) {
  const pos = DATA.pos[k], quat = DATA.quat[k];
  bodies.forEach((b, i) => { b.position.set(...pos[i]); b.quaternion.set(quat[i][1], quat[i][2], quat[i][3], quat[i][0]); });
  document.getElementById('f').textContent = k; document.getElementById('t').textContent = DATA.time[k].toFixed(3);
}
let last = performance.now();
renderer.setAnimationLoop((now) => {
  if (now - last > 1000 * DATA.frame_dt) { frame = (frame + 1) % DATA.pos.length; show(frame); last = now; }
  controls.update(); renderer.render(scene, camera);
});
addEventListener('resize', () => { camera.aspect = innerWidth/innerHeight; camera.updateProjectionMatrix(); renderer.setSize(innerWidth, innerHeight); });
</script></body></html>
"""


def to_html(model, traj, path=None, max_frames: int = 600) -> str:
    """HTML text replaying ``traj`` (a ``State`` with a leading time axis, e.g. from
    ``jc.rollout``); written to ``path`` when given.

    Args:
      model: the scene; traj: stacked states ``q (T, nq)`` and ``time (T,)``;
      path: output file (optional); max_frames: frames kept (evenly subsampled).
    """
    import jax

    from ..dynamics import body_poses

    q = np.asarray(traj.q)
    times = np.asarray(traj.time)
    stride = max(1, int(np.ceil(len(q) / max_frames)))
    q, times = q[::stride], times[::stride]
    poses = jax.jit(jax.vmap(lambda x: body_poses(model, x)))(q.astype(np.asarray(model.qpos0).dtype))
    geoms = []
    for g in range(model.ngeom):
        gtype = GeomType(model.geom_type[g])
        entry = dict(type=gtype.name.lower(), body=int(model.geom_body[g]),
                     size=np.asarray(model.geom_size[g], float).tolist(),
                     pos=np.asarray(model.geom_pos[g], float).tolist(),
                     quat=np.asarray(model.geom_quat[g], float).tolist())
        if gtype == GeomType.MESH:
            entry["vertices"] = np.asarray(model.mesh_vertices[model.geom_mesh[g]], float).round(5).tolist()
        geoms.append(entry)
    frame_dt = float(times[1] - times[0]) if len(times) > 1 else 0.02
    data = dict(bodies=list(model.body_names), geoms=geoms,
                pos=np.asarray(poses.pos, float).round(5).tolist(),
                quat=np.asarray(poses.quat, float).round(5).tolist(),
                time=times.astype(float).tolist(), frame_dt=frame_dt)
    text = _TEMPLATE.replace("__DATA__", json.dumps(data)).replace("__NFRAMES__", str(len(q) - 1))
    if path is not None:
        Path(path).write_text(text)
    return text
