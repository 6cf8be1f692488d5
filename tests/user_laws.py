"""User force laws for the tests (THEORY §13; docs/user-laws.md): plain Python functions of the line
between a spring's two points, ``f(length, rate, time, params)``."""
import math


def linear(length, rate, time, params):
    """The built-in spring: T = k (L − L0), with its derivatives; params (k, L0)."""
    k, rest = params[0], params[1]
    return k * (length - rest), k, 0.0


def linear_tension(length, rate, time, params):
    """The same, the tension alone (its derivatives by central differences)."""
    return params[0] * (length - params[1])


def linear_stored(length, rate, time, params):
    """The same with its potential ½ k (L − L0)²."""
    k, rest = params[0], params[1]
    return k * (length - rest), k, 0.0, 0.5 * k * (length - rest) ** 2


def tendon(length, rate, time, params):
    """A tendon: slack below its rest length, then a toe region quadratic in the stretch up to ``toe`` and
    linear beyond (C¹), damped in proportion to how far it is engaged, its elastic part scaled in time by an
    activation 1 + a sin(ω t); it never pushes.  params (k, rest, toe, c, a, ω)."""
    k, rest, toe, c, a, w = params[0], params[1], params[2], params[3], params[4], params[5]
    x = length - rest
    if x <= 0.0:
        return 0.0, 0.0, 0.0
    act = 1.0 + a * math.sin(w * time)
    if x < toe:
        elastic, slope, engaged, d_engaged = 0.5 * k * x * x / toe, k * x / toe, x / toe, 1.0 / toe
    else:
        elastic, slope, engaged, d_engaged = k * (x - 0.5 * toe), k, 1.0, 0.0
    T = act * elastic + c * engaged * rate
    if T <= 0.0:
        return 0.0, 0.0, 0.0
    return T, act * slope + c * d_engaged * rate, c * engaged


def smooth(length, rate, time, params):
    """A smooth nonlinear law in all three arguments (for finite-difference checks): T = k (L − L0) +
    k3 (L − L0)³ + c L̇ + c3 L̇³, times 1 + a sin(t); params (k, L0, k3, c, c3, a)."""
    k, rest, k3, c, c3, a = params[0], params[1], params[2], params[3], params[4], params[5]
    s = 1.0 + a * math.sin(time)
    x = length - rest
    T = s * (k * x + k3 * x ** 3 + c * rate + c3 * rate ** 3)
    return T, s * (k + 3.0 * k3 * x * x), s * (c + 3.0 * c3 * rate * rate)
