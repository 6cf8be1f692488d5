"""The tendon law of scenarios/tendon.yaml (a user force law: THEORY §13, docs/user-laws.md)."""
import math


def tension(length, rate, time, params):
    """A tendon driven by its muscle: slack below its rest length, a toe region quadratic in the stretch x
    up to ``toe``, linear beyond (C¹); the elastic part scaled by the activation 1 + a sin(2π f t), damped
    as far as it is engaged; it never pushes.  params: (k, rest, toe, c, a, f).  Returns the tension and its
    derivatives with respect to the length and the rate."""
    k, rest, toe, c, a, f = params[0], params[1], params[2], params[3], params[4], params[5]
    x = length - rest
    if x <= 0.0:
        return 0.0, 0.0, 0.0
    act = 1.0 + a * math.sin(2.0 * math.pi * f * time)
    if x < toe:
        elastic, slope, engaged, d_engaged = 0.5 * k * x * x / toe, k * x / toe, x / toe, 1.0 / toe
    else:
        elastic, slope, engaged, d_engaged = k * (x - 0.5 * toe), k, 1.0, 0.0
    T = act * elastic + c * engaged * rate
    if T <= 0.0:
        return 0.0, 0.0, 0.0
    return T, act * slope + c * d_engaged * rate, c * engaged
