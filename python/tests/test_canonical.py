"""The computation entry: our in-process canonicalisation gives exactly the
bytes JAX hashes (`jax._src.cache_key._canonicalize_ir`), on real lowered
programs (jit, grad, scan, while, custom_vjp, shard_map on 8 devices, Pallas
for TPU in both Mosaic location modes and for CUDA) and on the corpus."""

from conftest import run


def test_bytes_equal_jax(tmp_path):
    result = run(tmp_path, """
        from jax._src import cache_key
        from jax._src.interpreters import mlir
        from mlir_cache_key._canonical import canonical_bytes, canonical_text
        from mlir_cache_key import _jax_internals as J
        import programs

        # Every value of this release's callback argument.
        if hasattr(cache_key, "IgnoreCallbacks"):
            arguments = list(cache_key.IgnoreCallbacks)
        else:
            arguments = [False, True]
        mods = list(programs.lowered()) + list(programs.corpus_modules(mlir.make_ir_context()))
        checked, differ, mosaic = 0, [], 0
        for name, m in mods:
            for icp in arguments:
                theirs = cache_key._canonicalize_ir(m, icp)
                ours = canonical_bytes(m, icp)
                checked += 1
                mosaic += b"tpu_custom_call" in theirs
                if ours != theirs:
                    differ.append([name, str(icp)])
            assert "loc(" not in canonical_text(m)
        from jax._src import config
        with config.compilation_cache_include_metadata_in_key(True):
            name, m = mods[0]
            assert canonical_bytes(m) == cache_key._serialize_ir(m, J.NO_CALLBACKS_IGNORED)
        report(checked=checked, differ=differ, names=[n for n, _ in mods], mosaic=mosaic,
               pallas=programs.pallas_names(), arguments=len(arguments))
    """)
    assert result["differ"] == []
    names = result["names"]
    for expected in ("jit_mlp", "grad_mlp", "scan", "while", "custom_vjp", "shard_map",
                     *result["pallas"],
                     "large/large_deep_ops.generic.mlir", "cpu/custom_partitioning.a.generic.mlir"):
        assert expected in names
    assert result["mosaic"] >= 2  # the Mosaic path really ran
    assert result["checked"] == result["arguments"] * len(names)


def test_canonical_mode_strips_triton_only(tmp_path):
    """Mode "canonical" equals mode "jax" except where a Triton kernel's own
    locations are dropped; the two Pallas Triton lowerings from different
    lines then agree."""
    result = run(tmp_path, r"""
        import numpy as np
        from mlir_cache_key._canonical import canonical_bytes
        import programs

        from jax.experimental import pallas as pl

        if not programs.triton_lowerable():  # JAX 0.9 and 0.10 on CPU: asks for jaxlib GPU
            report(not_lowerable=jax.__version__)
            sys.exit(0)
        programs.fake_gpu_info()
        x = np.ones((8, 128), np.float32)
        source = (
            "def kernel(x_ref, y_ref, o_ref):\n"
            "    o_ref[...] = x_ref[...] + y_ref[...]\n"
            "def add(x, y):\n"
            "    return pl.pallas_call(kernel, out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype))(x, y)\n"
        )
        mods = []
        for shift, file in ((0, "a.py"), (40, "b/a.py")):
            scope = {"pl": pl, "jax": jax}
            exec(compile("\n" * shift + source, file, "exec"), scope)
            lowered = jax.jit(scope["add"]).trace(x, x).lower(lowering_platforms=("cuda",))
            mods.append(lowered.compiler_ir("stablehlo"))
        jax_mode = [canonical_bytes(m) for m in mods]
        canonical = [canonical_bytes(m, mode="canonical") for m in mods]
        cpu = programs.cpu_programs()[0]
        m = cpu[1].trace(*cpu[2]).lower().compiler_ir("stablehlo")
        report(jax_equal=jax_mode[0] == jax_mode[1], canonical_equal=canonical[0] == canonical[1],
               differs_from_jax=canonical[0] != jax_mode[0],
               plain_same=canonical_bytes(m, mode="canonical") == canonical_bytes(m))
    """)
    if "not_lowerable" in result:  # nothing to compare on this release
        assert result["not_lowerable"].startswith(("0.9.", "0.10.")), result
        return
    assert result["plain_same"]
    assert result["differs_from_jax"]
    assert not result["jax_equal"]  # JAX keeps Triton locations
    assert result["canonical_equal"]
