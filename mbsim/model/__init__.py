"""Bodies as a structure of arrays, DOF numbering, batched SO(3) helpers."""
