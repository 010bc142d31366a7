"""The small `jax.jit` programs the benchmarks compile (`bench_small.py`, `bench_paired.py`):
`programs(shape)(i)` compiles and runs a program distinct for each `i`, and returns its result."""

import jax
import jax.numpy as jnp
import numpy as np


def programs(shape: str):
    if shape == "mlp":  # a 6-layer tanh MLP with a gradient: nearer a test suite's programs
        params = [np.full((64, 64), 0.01, np.float32) for _ in range(6)]
        xm = np.ones((8, 64), np.float32)

        def program(i):
            def f(params, x):
                h = x
                for w in params:
                    h = jnp.tanh(h @ w + i * 0.001)
                g = jax.grad(lambda p: jnp.sum(jnp.tanh(x @ p[0]) ** 2))(params)
                return h.sum() + sum(jnp.sum(gi) for gi in g)
            return float(jax.jit(f)(params, xm))
        return program
    if shape != "tanh":
        raise ValueError(f"shape must be 'tanh' or 'mlp', not {shape!r}")
    x = np.arange(16, dtype=np.float32)

    def program(i):  # a 16-element tanh, its constant making it distinct
        c = 1.0 + i / 1000.0
        return float(jax.jit(lambda v: jnp.tanh(v * c))(x)[3])
    return program
