#!/usr/bin/env python3
"""Parity vectors of the installed JAX release: for varied real programs, the
inputs of `jax._src.cache_key.get`, its key and its 16 DEBUG trace lines.

    XLA_FLAGS=--xla_force_host_platform_device_count=8 \\
      target/py-matrix/0.10.2/bin/python scripts/gen-jax-parity.py tests/data/parity

writes tests/data/parity/<jax version>/<case>/ with the files the cargo test
(crates/key/tests/release_parity.rs) and pytest (python/tests/test_releases.py)
read (a case a release cannot lower, e.g. `pallas_gpu`, is skipped with a
message): computation.mlirbc (the bytes JAX hashed as "computation"),
compile_options.pb (as passed in) and compile_options.normalized.pb (as
hashed), topology.bin (≤ 0.9: the serialized topology hashed), env.json (every
other input, with `jax_version`) and expected.json (`key`, `debug_lines`,
`included_xla_flags_in_hash_order`). Every value comes from JAX itself.
"""

from __future__ import annotations

import json
import logging
import os
import sys
from pathlib import Path

os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=8")

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
from jax._src import cache_key, compilation_cache, compiler  # noqa: E402
from jax._src.lib import xla_client  # noqa: E402

ENUM_CALLBACKS = hasattr(cache_key, "IgnoreCallbacks")


class _Collect:
    """A hash object that keeps what it is fed."""

    def __init__(self):
        self.data = b""

    def update(self, data):
        self.data += bytes(data)


class _Lines(logging.Handler):
    def __init__(self):
        super().__init__(logging.DEBUG)
        self.messages: list[str] = []

    def emit(self, record):
        self.messages.append(record.getMessage())


def programs():
    """(case, lowered, callbacks argument) for each program."""
    x = jnp.ones((4, 8), jnp.float32)
    w = jnp.ones((8, 3), jnp.float32)

    def mlp(x, w):
        return jnp.tanh(x @ w).sum()

    yield "jit_mlp", jax.jit(mlp).lower(x, w), None
    yield "grad", jax.jit(jax.grad(mlp, argnums=1)).lower(x, w), None

    def scan(x):
        return jax.lax.scan(lambda c, r: (c + r, c * r), jnp.zeros(8), x)

    yield "scan", jax.jit(scan).lower(x), None

    def loop(n):
        return jax.lax.while_loop(lambda s: s[0] < n, lambda s: (s[0] + 1, s[1] * 2.0),
                                  (0, 1.0))

    yield "while", jax.jit(loop).lower(5), None

    def with_callback(x):
        y = jax.pure_callback(lambda a: np.asarray(a) * 2,
                              jax.ShapeDtypeStruct(x.shape, x.dtype), x)
        return y + 1

    lowered = jax.jit(with_callback).lower(x)
    yield "callback", lowered, None
    if ENUM_CALLBACKS:
        yield "callback_ignore_all", lowered, cache_key.IgnoreCallbacks.ALL
    else:
        yield "callback_ignore_partitioning", lowered, True

    if len(jax.devices()) >= 8:
        from jax.sharding import Mesh, PartitionSpec as P
        try:
            from jax import shard_map
        except ImportError:
            from jax.experimental.shard_map import shard_map
        mesh = Mesh(np.array(jax.devices()[:8]), ("i",))
        fn = shard_map(lambda a: jax.lax.psum(a, "i"), mesh=mesh, in_specs=P("i"),
                       out_specs=P())
        yield "shard_map_8", jax.jit(fn).lower(jnp.ones((8, 4))), None

    try:
        from jax.experimental import pallas as pl

        def kernel(x_ref, o_ref):
            o_ref[...] = x_ref[...] * 2.0

        fn = lambda a: pl.pallas_call(kernel, out_shape=jax.ShapeDtypeStruct(a.shape, a.dtype))(a)
        lowered = jax.jit(fn).trace(jnp.ones((8, 128))).lower(lowering_platforms=("tpu",))
        yield "pallas_tpu", lowered, None
    except Exception as ex:  # a release that cannot lower it here has no such vector
        print(f"pallas_tpu skipped: {ex!r}", file=sys.stderr)

    try:
        yield "pallas_gpu", _lower_for_gpu(), None
    except Exception as ex:
        print(f"pallas_gpu skipped: {ex!r}", file=sys.stderr)


def _lower_for_gpu():
    """A Pallas kernel lowered for CUDA by a CPU jaxlib: a `__gpu$xla.gpu.triton` custom call
    whose `ir` is the Triton kernel's bytecode, locations included (JAX hashes it as lowered)."""
    from jax.experimental import pallas as pl
    try:  # ≥ 0.11: the GPU query, answered with an H100 (there is no GPU here)
        from jax._src.pallas.triton import gpu_info
        from jax._src.pallas.triton import pallas_call_registration as registration
        registration.gpu_info_lib.get_gpu_info = lambda: gpu_info._get_gpu_info_impl(
            gpu_info.GpuVersion.H100)
    except ImportError:
        pass

    def kernel(x_ref, y_ref, o_ref):
        o_ref[...] = x_ref[...] * 2.0 + y_ref[...]

    def fn(a, b):
        return pl.pallas_call(kernel, out_shape=jax.ShapeDtypeStruct(a.shape, a.dtype))(a, b) - 1

    # 0.9 and 0.10 lower Pallas GPU kernels to Mosaic GPU by default, which needs a GPU
    # jaxlib; their Triton path lowers here (0.8 defaults to Triton; 0.11 dropped the option).
    previous = getattr(jax.config, "jax_pallas_use_mosaic_gpu", None)
    if previous is not None:
        jax.config.update("jax_pallas_use_mosaic_gpu", False)
    try:
        x = jnp.ones((8, 128), jnp.float32)
        return jax.jit(fn).trace(x, x).lower(lowering_platforms=("cuda",))
    finally:
        if previous is not None:
            jax.config.update("jax_pallas_use_mosaic_gpu", previous)


def devices_and_options(case):
    n = 8 if case == "shard_map_8" else 1
    devices = np.array(jax.devices()[:n]).reshape(1, n) if n > 1 else np.array(jax.devices()[:1])
    options = compiler.get_compile_options(num_replicas=1, num_partitions=n)
    if case == "grad":  # kept and reset debug options
        debug = options.executable_build_options.debug_options
        debug.xla_dump_to = "/tmp/dump"
        debug.xla_cpu_enable_fast_math = True
        # Reset only from 0.11 on.
        debug.xla_gpu_per_fusion_autotune_cache_dir = "/tmp/autotune"
    return devices, options


def write_vector(out: Path, case, lowered, callbacks) -> None:
    module = lowered.compiler_ir("stablehlo")
    backend = jax.devices()[0].client
    devices, options = devices_and_options(case)
    if callbacks is None:
        callbacks = cache_key.IgnoreCallbacks.NO if ENUM_CALLBACKS else False
    compression = "zstandard" if compilation_cache.zstandard is not None else "zlib"

    handler = _Lines()
    logger = cache_key.logger
    old_level, old_propagate = logger.level, logger.propagate
    logger.addHandler(handler)
    logger.setLevel(logging.DEBUG)
    logger.propagate = False
    try:
        key = cache_key.get(module, devices, options, backend, compression, callbacks)
    finally:
        logger.removeHandler(handler)
        logger.setLevel(old_level)
        logger.propagate = old_propagate
    trace = [m for m in handler.messages if m.startswith("get_cache_key hash")]
    included = [m.split(": ", 1)[1] for m in handler.messages
                if m.startswith("Including XLA flag in cache key: ")]
    included = included[: len(included) // 2]  # DEBUG hashes each entry twice

    with module.context:
        computation = cache_key._canonicalize_ir(module, callbacks)
    normalized = _Collect()
    cache_key._hash_serialized_compile_options(
        normalized, options, strip_device_assignment=backend.platform == "gpu")
    env = dict(
        jax_version=jax.__version__,
        module_name=key.rsplit("-", 1)[0],
        jaxlib_version=cache_key.jaxlib_version_str,
        platform=backend.platform,
        platform_version=backend.platform_version,
        XLA_FLAGS=os.getenv("XLA_FLAGS"),
        LIBTPU_INIT_ARGS=os.getenv("LIBTPU_INIT_ARGS"),
        argv=list(sys.argv),
        extra_flag_prefixes=list(cache_key.get_flag_prefixes()),
        compression=compression,
        custom_hook=cache_key.custom_hook(),
        callbacks=str(getattr(callbacks, "name", callbacks)),
        topology_fingerprint=None,
        device_kinds=[d.device_kind for d in devices.flat],
    )
    if "runtime_type" in cache_key._hash_platform.__code__.co_names:
        env["runtime_type"] = backend.runtime_type
    vector = out / case
    vector.mkdir(parents=True, exist_ok=True)
    try:
        topology = xla_client.get_topology_for_devices(list(devices.flat))
        accelerator = _Collect()
        cache_key._hash_accelerator_config(accelerator, devices)
        if len(accelerator.data) == 8 and hasattr(topology, "fingerprint") and \
                int.from_bytes(accelerator.data, "big") == topology.fingerprint():
            env["topology_fingerprint"] = topology.fingerprint()
        else:
            (vector / "topology.bin").write_bytes(accelerator.data)
    except Exception:  # JAX falls back to the device kinds
        pass
    (vector / "computation.mlirbc").write_bytes(computation)
    (vector / "compile_options.pb").write_bytes(options.SerializeAsString())
    (vector / "compile_options.normalized.pb").write_bytes(normalized.data)
    (vector / "env.json").write_text(json.dumps(env, indent=1) + "\n")
    (vector / "expected.json").write_text(json.dumps(dict(
        key=key, debug_lines=trace, included_xla_flags_in_hash_order=included), indent=1) + "\n")
    assert len(trace) == 16, trace


def main() -> None:
    root = Path(sys.argv[1] if len(sys.argv) > 1 else "tests/data/parity")
    # Command-line and LIBTPU_INIT_ARGS flags reach the key (XLA never parses
    # them on CPU): one always kept, two excluded only by newer releases
    # (0.11.0 and 0.11.1); the device count in XLA_FLAGS is always excluded.
    sys.argv += ["--xla_cpu_enable_fast_min_max=false", "--xla_tpu_compiler_variant=a"]
    os.environ["LIBTPU_INIT_ARGS"] = "--xla_gpu_per_fusion_autotune_cache_dir=/tmp/x --xla_b=1"
    out = root / jax.__version__
    for case, lowered, callbacks in programs():
        write_vector(out, case, lowered, callbacks)
    # The custom hook, on the first program again.
    original = cache_key.custom_hook
    cache_key.custom_hook = lambda: "  team-a/v2  "
    try:
        x = jnp.ones((4, 8), jnp.float32)
        write_vector(out, "custom_hook", jax.jit(lambda a: a * 3).lower(x), None)
    finally:
        cache_key.custom_hook = original
    print(out)


if __name__ == "__main__":
    main()
