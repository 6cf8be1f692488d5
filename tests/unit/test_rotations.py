"""Rotation identities of THEORY §3 and §4, checked numerically on random stacks."""
import numpy as np
import pytest

from mbsim.kernels import rotations as rot

rng = np.random.default_rng(1)


def test_cay_is_rotation_by_2_atan_half_norm():
    c = rng.normal(size=(20, 3))
    C = rot.cay(c)
    assert np.allclose(C @ C.transpose(0, 2, 1), np.eye(3), atol=1e-14)
    assert np.allclose(np.linalg.det(C), 1.0)
    angle = 2 * np.arctan(np.linalg.norm(c, axis=1) / 2)
    phi = c / np.linalg.norm(c, axis=1, keepdims=True) * angle[:, None]
    assert np.allclose(C, rot.quat_to_matrix(rot.rotvec_quat(phi)), atol=1e-14)
    assert np.allclose(rot.quat_to_matrix(rot.cay_quat(c)), C, atol=1e-14)


def test_cayvec_inverts_cay():
    c = rng.normal(size=(20, 3))
    assert np.allclose(rot.cayvec_quat(rot.cay_quat(c)), c, atol=1e-12)


def test_cay_times_T_transpose_is_T():
    c = rng.normal(size=(20, 3))
    assert np.allclose(rot.cay(c) @ rot.tmat(c).transpose(0, 2, 1), rot.tmat(c), atol=1e-13)


def test_left_update_changes_cayley_step_vector_by_T_transpose():
    """Λ' ← cay(Δθ)Λ' changes θ = cayvec(Λ'Λ_nᵀ) by T(θ)ᵀΔθ to first order."""
    qn = rot.quat_normalize(rng.normal(size=4))
    q1 = rot.quat_mul(rot.cay_quat(rng.normal(size=3) * 0.7), qn)
    theta = rot.cayvec_quat(rot.quat_mul(q1, rot.quat_conj(qn)))
    eps = 1e-6
    J = np.empty((3, 3))
    for j in range(3):
        d = np.zeros(3)
        d[j] = eps
        tp = rot.cayvec_quat(rot.quat_mul(rot.quat_mul(rot.cay_quat(d), q1), rot.quat_conj(qn)))
        tm = rot.cayvec_quat(rot.quat_mul(rot.quat_mul(rot.cay_quat(-d), q1), rot.quat_conj(qn)))
        J[:, j] = (tp - tm) / (2 * eps)
    assert np.allclose(J, rot.tmat(theta).T, rtol=1e-8, atol=1e-9)


def test_body_fixed_vector_varies_as_minus_zhat_dtheta():
    q = rot.quat_normalize(rng.normal(size=4))
    Z = rng.normal(size=3)
    z = rot.quat_to_matrix(q) @ Z
    eps = 1e-6
    J = np.empty((3, 3))
    for j in range(3):
        d = np.zeros(3)
        d[j] = eps
        zp = rot.quat_to_matrix(rot.quat_mul(rot.cay_quat(d), q)) @ Z
        zm = rot.quat_to_matrix(rot.quat_mul(rot.cay_quat(-d), q)) @ Z
        J[:, j] = (zp - zm) / (2 * eps)
    assert np.allclose(J, -rot.skew(z), atol=1e-9)


@pytest.mark.parametrize("rho", [0.0, 0.5, 1.0])
def test_angular_velocity_and_acceleration_linearizations(rho):
    """Dω' = (gT − ω̂')Δθ and Dα' = (T/(βΔt²) − α̂')Δθ (THEORY §4)."""
    from mbsim.integrators import AlphaParameters
    p = AlphaParameters.from_rho(rho)
    dt = 0.01
    g, ca = p.gamma / (p.beta * dt), 1 / (p.beta * dt * dt)
    qn = rot.quat_normalize(rng.normal(size=4))
    wn, aln = rng.normal(size=3), rng.normal(size=3)

    def kin(q1):
        th = rot.cayvec_quat(rot.quat_mul(q1, rot.quat_conj(qn)))
        C = rot.cay(th)
        w1 = C @ (g * th + (1 - p.gamma / p.beta) * wn + dt * (1 - p.gamma / (2 * p.beta)) * aln)
        al1 = C @ (ca * th - wn / (p.beta * dt) + (1 - 1 / (2 * p.beta)) * aln)
        return th, w1, al1

    q1 = rot.quat_mul(rot.cay_quat(rng.normal(size=3) * 0.3), qn)
    th, w1, al1 = kin(q1)
    eps = 1e-7
    Jw, Ja = np.empty((3, 3)), np.empty((3, 3))
    for j in range(3):
        d = np.zeros(3)
        d[j] = eps
        _, wp, ap = kin(rot.quat_mul(rot.cay_quat(d), q1))
        _, wm, am = kin(rot.quat_mul(rot.cay_quat(-d), q1))
        Jw[:, j] = (wp - wm) / (2 * eps)
        Ja[:, j] = (ap - am) / (2 * eps)
    T = rot.tmat(th)
    assert np.allclose(Jw, g * T - rot.skew(w1), rtol=1e-6, atol=1e-6 * np.abs(Jw).max())
    assert np.allclose(Ja, ca * T - rot.skew(al1), rtol=1e-6, atol=1e-6 * np.abs(Ja).max())


def test_quat_angle_small_and_sign_insensitive():
    q = rot.quat_normalize(rng.normal(size=4))
    d = rot.quat_mul(rot.rotvec_quat(np.array([1e-9, 0, 0])), q)
    assert abs(rot.quat_angle(d, q) - 1e-9) < 1e-15
    assert abs(rot.quat_angle(-d, q) - 1e-9) < 1e-15
