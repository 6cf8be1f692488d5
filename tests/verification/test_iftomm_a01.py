"""IFToMM benchmark A01 (simple pendulum released from horizontal) with a stiff-spring link.

The example ``scenarios/iftomm_a01_pendulum.yaml`` is loaded and only its link
stiffness, time step, span and ρ∞ are changed, so these checks are about that
file's model (mass, length, gravity are read from it).

Independent references:

- the rigid-link period for a release from 90°, ``T0 = 4 √(L/g) K(1/2)``
  (K the complete elliptic integral of the first kind) = 2.367842 s;
- its first-order correction for a link of stiffness k, from a quasi-static
  perturbation of the elastic pendulum (derived in :func:`stretch_coefficient`):
  ``T(k) = T0 + C/k + O(1/k²)``, C = 39.80 s·N/m for this pendulum;
- conservation of ``kinetic + potential + dissipated − external_work``
  (THEORY §9; no dampers and no loads here, so kinetic + potential).

Run time: about 4700 steps of one body at 2–4 ms each, 10–20 s.
"""
from dataclasses import replace
from functools import lru_cache
from pathlib import Path

import numpy as np
import pytest
from scipy.integrate import quad
from scipy.special import ellipk

from mbsim.driver import run
from mbsim.scenario import OutputSpec, TimeSpec, load_scenario

EXAMPLE = Path(__file__).resolve().parents[2] / "scenarios" / "iftomm_a01_pendulum.yaml"
BASE = load_scenario(str(EXAMPLE))
MASS = BASE.bodies[0].mass
LENGTH = BASE.connectors[0].rest_length
G = float(np.linalg.norm(BASE.gravity))
T_RIGID = 4.0 * np.sqrt(LENGTH / G) * ellipk(0.5)  # m = k² = sin²(π/4)
OMEGA_MAX = np.sqrt(2.0 * G / LENGTH)  # largest angular rate of the swing (at the bottom) [rad/s]

STIFFNESSES = (1e3, 1e4, 1e5, 1e6)
DT = 2e-3  # test step: ω_max Δt = 8.9e-3 (the example itself runs at 1e-3)
# x crosses 0 (the bob passes under the pivot) at T/4 and 3T/4: run a little past 3T/4.
SPAN = 0.77 * T_RIGID


def stretch_coefficient() -> float:
    """C in ``T(k) = T0 + C/k + O(1/k²)`` for the release from horizontal.

    The link stretches quasi-statically by its tension over k (its own
    vibration, at √(k/m), is hardly excited by a release at rest length with
    zero tension): with θ from the downward vertical and the rigid motion
    ``θ'² = 2g cos θ / L``, the tension is ``m L θ'² + m g cos θ = 3 m g cos θ``,
    so δ = 3 m g cos θ / k.  Energy, to O(1/k) (½ m δ'² is O(1/k²)):
    ``½ m (L+δ)² θ'² = m g (L+δ) cos θ − ½ k δ²``, which gives
    ``θ'² = (2g cos θ / L)(1 − (15/2) ε cos θ)``, ε = m g/(k L).  Then
    ``T = 4 ∫₀^{π/2} dθ/θ' = T0 + 15 ε √(L/(2g)) ∫₀^{π/2} √cos θ dθ``.
    """
    integral = quad(lambda th: np.sqrt(np.cos(th)), 0.0, 0.5 * np.pi, epsabs=1e-13)[0]
    return 15.0 * MASS * G / LENGTH * np.sqrt(LENGTH / (2.0 * G)) * integral


@lru_cache(maxsize=None)
def swing(k: float, dt: float, rho: float, end: float = SPAN) -> dict:
    """Frames of the example pendulum with link stiffness k [N/m], step dt [s], ρ∞, a frame per step."""
    link = replace(BASE.connectors[0], stiffness=float(k))
    sc = replace(BASE, connectors=(link,), time=TimeSpec(float(end), float(dt)),
                 integrator=replace(BASE.integrator, rho_inf=float(rho)), output=OutputSpec(interval=float(dt)))
    summary = run(sc, write=False, keep_frames=True)
    assert summary.status == "completed", summary.message
    return summary.frames_data


def zero_crossings(t, x, v):
    """Times where x changes sign, from the cubic Hermite interpolant of (x, v = dx/dt)
    on each step (error O(Δt⁴), ~1e-10 s here, far below the effects measured)."""
    times = []
    for i in np.flatnonzero(np.sign(x[:-1]) != np.sign(x[1:])):
        h = t[i + 1] - t[i]
        s = x[i] / (x[i] - x[i + 1])  # linear guess, then Newton on the cubic
        for _ in range(30):
            f = ((2 * s**3 - 3 * s**2 + 1) * x[i] + (s**3 - 2 * s**2 + s) * h * v[i]
                 + (-2 * s**3 + 3 * s**2) * x[i + 1] + (s**3 - s**2) * h * v[i + 1])
            df = ((6 * s**2 - 6 * s) * x[i] + (3 * s**2 - 4 * s + 1) * h * v[i]
                  + (-6 * s**2 + 6 * s) * x[i + 1] + (3 * s**2 - 2 * s) * h * v[i + 1])
            s -= f / df
        times.append(t[i] + s * h)
    return np.array(times)


def period(frames) -> float:
    """Twice the time between the first two passages under the pivot (T/4 and 3T/4) [s]."""
    tc = zero_crossings(frames["time"], frames["bodies/position"][:, 0, 0], frames["bodies/velocity"][:, 0, 0])
    assert len(tc) >= 2, tc
    return 2.0 * (tc[1] - tc[0])


def energy_error(frames) -> float:
    """Largest |E(t) − E(0)| [J], E = kinetic + potential + dissipated − external_work."""
    e = (frames["energy/kinetic"] + frames["energy/potential"] + frames["energy/dissipated"]
         - frames["energy/external_work"])
    return float(np.abs(e - e[0]).max())


def test_rigid_reference_period():
    """The benchmark's rigid-link period, from the elliptic integral (and a check by quadrature)."""
    assert T_RIGID == pytest.approx(2.367842, abs=5e-7)
    by_quad = 4.0 * quad(lambda th: 1.0 / np.sqrt(2.0 * G / LENGTH * np.cos(th)), 0.0, 0.5 * np.pi)[0]
    assert by_quad == pytest.approx(T_RIGID, rel=1e-9)


def test_period_approaches_rigid_value_like_one_over_k():
    """|T(k) − T0| falls monotonically as k grows, is below 1e-3 s (in fact 1e-4 s) at
    k = 1e6, and T(k) − T(10k) = 0.9 C/k with the analytic C to 3 %: the step's own
    O(Δt²) period error (the same for every k) cancels in these differences.  What
    remains after T0 + C/k is that step error, bounded by (ω_max Δt)² T0."""
    C = stretch_coefficient()
    T = np.array([period(swing(k, DT, BASE.integrator.rho_inf)) for k in STIFFNESSES])
    err = np.abs(T - T_RIGID)
    k = np.array(STIFFNESSES)
    print("\nk [N/m]   T(k) [s]     T(k)-T0 [s]   C/k [s]      (T(k)-T(10k))k/0.9 [s N/m]")
    for i in range(len(k)):
        ratio = (T[i] - T[i + 1]) * k[i] / 0.9 if i + 1 < len(k) else np.nan
        print(f"{k[i]:7.0e}  {T[i]:.8f}  {T[i] - T_RIGID:11.3e}  {C / k[i]:10.3e}  {ratio:8.3f}")
    assert np.all(np.diff(err) < 0), err
    assert err[-1] < 1e-4
    assert np.all(T > T_RIGID)  # a stretching link is a longer pendulum
    scaled = (T[:-1] - T[1:]) * k[:-1] / (1.0 - k[:-1] / k[1:])
    assert np.allclose(scaled, C, rtol=0.03), (scaled, C)
    assert np.all(np.abs(T - T_RIGID - C / k) < 0.02 * C / k + (OMEGA_MAX * DT) ** 2 * T_RIGID)


def test_energy_balance_is_second_order():
    """kinetic + potential stays within (ω_max Δt)² m g L of its start: the natural size of the
    error of an O(Δt²) scheme, with ω_max = √(2g/L) the swing's largest rate (measured: about
    a fifth of it).  Halving Δt divides the error by 4 ± 15 %, for ρ∞ = 1 (no numerical
    dissipation) and for the example's ρ∞.  At k = 1e4 the link's vibration is resolved
    (√(k/m) Δt ≤ 0.4) so Δt is in the asymptotic range; at k = 1e6 (√(k/m) Δt = 2) it is
    not, and only the bound is checked.  The ρ∞ = 1 runs stop at 0.3 T0, past the bottom
    (t = T0/4, largest speed) where the error peaks; the example's ρ∞ is checked over the
    whole span of the period runs."""
    scale = MASS * G * LENGTH
    for rho, end in ((1.0, 0.3 * T_RIGID), (BASE.integrator.rho_inf, SPAN)):
        coarse, fine = energy_error(swing(1e4, 2 * DT, rho, end)), energy_error(swing(1e4, DT, rho, end))
        print(f"\nrho_inf {rho}: energy error {coarse:.3e} J at dt {2 * DT:g} s, {fine:.3e} J at {DT:g} s, "
              f"ratio {coarse / fine:.2f}")
        assert coarse / fine == pytest.approx(4.0, rel=0.15)
        assert coarse < (OMEGA_MAX * 2 * DT) ** 2 * scale
        assert fine < (OMEGA_MAX * DT) ** 2 * scale
    stiff = energy_error(swing(1e6, DT, BASE.integrator.rho_inf))
    print(f"k = 1e6: energy error {stiff:.3e} J at dt {DT:g} s")
    assert stiff < (OMEGA_MAX * DT) ** 2 * scale
