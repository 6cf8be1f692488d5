// What mbsim's viewer page uses of three.js and uPlot, exposed as window.T and window.uPlot (build.sh).
import {
  WebGLRenderer, Scene, PerspectiveCamera, BoxGeometry, SphereGeometry, CylinderGeometry, InstancedMesh,
  MeshStandardMaterial, MeshBasicMaterial, LineBasicMaterial, BufferGeometry, BufferAttribute, LineSegments,
  AmbientLight, DirectionalLight, Raycaster, Vector2, Vector3, Quaternion, Matrix4, Color, GridHelper, AxesHelper,
  Object3D, Group, DynamicDrawUsage,
} from 'three';
import { OrbitControls } from 'three/examples/jsm/controls/OrbitControls.js';
import uPlot from 'uplot';

window.T = {
  WebGLRenderer, Scene, PerspectiveCamera, BoxGeometry, SphereGeometry, CylinderGeometry, InstancedMesh,
  MeshStandardMaterial, MeshBasicMaterial, LineBasicMaterial, BufferGeometry, BufferAttribute, LineSegments,
  AmbientLight, DirectionalLight, Raycaster, Vector2, Vector3, Quaternion, Matrix4, Color, GridHelper, AxesHelper,
  Object3D, Group, DynamicDrawUsage, OrbitControls,
};
window.uPlot = uPlot;
