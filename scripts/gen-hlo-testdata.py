#!/usr/bin/env python3
"""Generates the HloModuleProto test data under tests/data/hlo/ with JAX.

Run in a JAX 0.12.0.1 venv (Python 3.12):

    python3.12 -m venv /work/venv-hlo
    /work/venv-hlo/bin/pip install jax==0.12.0.1 jaxlib==0.12.0.1
    /work/venv-hlo/bin/python scripts/gen-hlo-testdata.py

What it writes (each module lowered in a fresh process, so module ids, which
XLA takes from a per-process counter, are those of a fresh run):

- mlp.a.pb, mlp.b.pb: the same function from two "checkouts" (another file
  name, other lines and columns, one Python call deeper): the protos differ
  only in OpMetadata stack_frame_id and the module's StackFrameIndexProto;
- mlp.const.pb, mlp.shape.pb, mlp.op.pb: one change each (a constant, an
  input shape, an op) against mlp.a;
- loop.a.pb, loop.b.pb: a fori_loop (a while with its condition and body
  computations) from two checkouts;
- legacy.a.pb, legacy.b.pb: the older metadata style (source_file,
  source_line, source_column and their end) written by XLA's own HLO text
  parser, from two checkouts;
- ids.*.pb: lowered one after the other in ONE process, so each has another
  module id (XLA's per-process counter): ids.mlp.a and ids.mlp.b (twins:
  the same code from two files at other lines), ids.mlp.const (another
  constant), ids.scan.a and ids.scan.b (a lax.scan: a while with called
  computations), ids.donate.a and ids.donate.b (a jit with a donated
  argument: an input/output alias config);
- ids.scan.shifted.pb: ids.scan.a with other ids in the same order (every
  computation id + 100, every instruction's local id + 7, module id + 1000),
  as a frontend whose counters stood elsewhere writes it (torch-xla after
  other graphs), rewritten here at the wire level;
- crates/hlo/src/fields.txt: the field table of the messages mck-hlo opens
  (it reads its table from this file), read from the protobuf descriptors
  compiled into this jaxlib;
- crates/key/src/compile_options/fields.txt: the same for the messages
  mck-key's compile-options normalization opens (written with --tables too);
- MANIFEST: versions.

With `--in-one-process` it writes only the ids.*.pb files; with `--tables`
only the two field tables.

With `--check BIN` it writes nothing: it canonicalizes each proto with
`BIN canon` and has jaxlib's XLA load both, checking that the modules print
the same (XLA's fingerprint form, which leaves metadata out).
"""

import os
import re
import subprocess
import sys

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "data", "hlo")
# The field table mck-hlo reads (include_str!) is generated here too.
FIELDS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "crates", "hlo", "src",
                      "fields.txt")

# name: (program, file name, lines of padding, body indent, variant)
MODULES = {
    "mlp.a": ("mlp", "/home/ci/checkout-a/model.py", 0, "", {}),
    "mlp.b": ("mlp", "/srv/build/checkout-b/src/model.py", 7, "    ", {"helper": True}),
    "mlp.const": ("mlp", "/home/ci/checkout-a/model.py", 0, "", {"const": "3.0"}),
    "mlp.shape": ("mlp", "/home/ci/checkout-a/model.py", 0, "", {"k": 16}),
    "mlp.op": ("mlp", "/home/ci/checkout-a/model.py", 0, "", {"op": "sin"}),
    "loop.a": ("loop", "/home/ci/checkout-a/train.py", 0, "", {}),
    "loop.b": ("loop", "/srv/build/checkout-b/train.py", 12, "  ", {}),
    "legacy.a": ("legacy", "/home/ci/checkout-a/model.py", 0, "", {}),
    "legacy.b": ("legacy", "/srv/build/checkout-b/src/model.py", 9, "  ", {}),
}

MLP = """\
import jax.numpy as jnp
{pad}
def f(x, w):
    return {indent}jnp.{op}(x @ w + {const}).sum(axis=0)
"""

# The same function, its body one Python call deeper (more stack frames).
MLP_HELPER = """\
import jax.numpy as jnp
{pad}
def layer(x, w):
    return {indent}jnp.{op}(x @ w + {const}).sum(axis=0)

def f(x, w):
    return layer(x, w)
"""

LOOP = """\
import jax
import jax.numpy as jnp
{pad}
def f(x):
    def body(i, acc):
        return {indent}acc * 0.5 + jnp.cos(acc) + i
    return jax.lax.fori_loop(0, 8, body, x)
"""

# XLA's text format with the metadata of older frontends (no stack frames).
LEGACY = """\
HloModule jit_g, entry_computation_layout={{(f32[4,8]{{1,0}})->f32[4,8]{{1,0}}}}

ENTRY main {{
  x = f32[4,8]{{1,0}} parameter(0), metadata={{op_name="x"}}
  c = f32[] constant(2), metadata={{op_type="mul" op_name="jit(g)/mul" source_file="{file}" source_line={l1} source_end_line={l1} source_column={c1} source_end_column={e1}}}
  b = f32[4,8]{{1,0}} broadcast(c), dimensions={{}}, metadata={{op_type="mul" op_name="jit(g)/mul" source_file="{file}" source_line={l1} source_column={c1}}}
  m = f32[4,8]{{1,0}} multiply(x, b), metadata={{op_type="mul" op_name="jit(g)/mul" source_file="{file}" source_line={l1} source_end_line={l1} source_column={c1} source_end_column={e1}}}
  ROOT t = f32[4,8]{{1,0}} tanh(m), metadata={{op_type="tanh" op_name="jit(g)/tanh" source_file="{file}" source_line={l2} source_end_line={l2} source_column={c2} source_end_column={e2}}}
}}
"""


SCAN = """\
import jax
import jax.numpy as jnp
{pad}
def f(xs):
    def step(carry, x):
        return {indent}carry * 0.9 + jnp.sin(x), carry.sum()
    return jax.lax.scan(step, jnp.zeros(xs.shape[1:]), xs)
"""

DONATE = """\
import jax.numpy as jnp
{pad}
def f(x, y):
    return {indent}x * {const} + jnp.cos(y)
"""

# name: (template, file name, lines of padding, body indent, constant), lowered in this order.
IN_ONE_PROCESS = {
    "ids.mlp.a": (MLP, "/home/ci/checkout-a/model.py", 0, "", "2.0"),
    "ids.mlp.b": (MLP, "/srv/build/checkout-b/src/deeper/model.py", 11, "  ", "2.0"),
    "ids.mlp.const": (MLP, "/home/ci/checkout-a/model.py", 0, "", "3.0"),
    "ids.scan.a": (SCAN, "/home/ci/checkout-a/scan.py", 0, "", ""),
    "ids.scan.b": (SCAN, "/srv/build/checkout-b/scan.py", 6, " ", ""),
    "ids.donate.a": (DONATE, "/home/ci/checkout-a/step.py", 0, "", "2.0"),
    "ids.donate.b": (DONATE, "/srv/build/checkout-b/step.py", 3, "   ", "2.0"),
}


def module_id(proto):
    """HloModuleProto.id (field 5; 0 when absent)."""
    return next((v for n, w, v in fields_of(proto) if n == 5 and w == 0), 0)


def in_one_process():
    """Lowers IN_ONE_PROCESS one after the other in this process and writes them."""
    import jax
    import jax.numpy as jnp

    f32 = jnp.float32
    ids = {}
    for name, (template, filename, pad, indent, const) in IN_ONE_PROCESS.items():
        source = template.format(pad="\n" * pad, indent=indent, op="tanh", const=const)
        namespace = {}
        exec(compile(source, filename, "exec"), namespace)
        f = namespace["f"]
        if template is MLP:
            lowered = jax.jit(f).lower(jax.ShapeDtypeStruct((4, 8), f32),
                                       jax.ShapeDtypeStruct((8, 3), f32))
        elif template is SCAN:
            lowered = jax.jit(f).lower(jax.ShapeDtypeStruct((5, 4), f32))
        else:
            lowered = jax.jit(f, donate_argnums=0).lower(jax.ShapeDtypeStruct((4, 8), f32),
                                                         jax.ShapeDtypeStruct((4, 8), f32))
        proto = lowered.compiler_ir("hlo").as_serialized_hlo_module_proto()
        ids[name] = module_id(proto)
        out = os.path.join(OUT, f"{name}.pb")
        with open(out, "wb") as file:
            file.write(proto)
        print(f"wrote {os.path.relpath(out)} ({len(proto)} bytes, module id {ids[name]})")
    if len(set(ids.values())) != len(ids):
        sys.exit(f"module ids repeat, so these are no test of renumbering: {ids}")
    with open(os.path.join(OUT, "ids.scan.a.pb"), "rb") as file:
        shifted = shift_ids(file.read())
    out = os.path.join(OUT, "ids.scan.shifted.pb")
    with open(out, "wb") as file:
        file.write(shifted)
    print(f"wrote {os.path.relpath(out)} ({len(shifted)} bytes)")


def encode_varint(value):
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if not value:
            out.append(byte)
            return bytes(out)
        out.append(byte | 0x80)


def shift_ids(proto, computations=100, locals_=7, module=1000):
    """The module with every id moved, their order kept: (message, field) -> what it holds."""
    computation = lambda i: i + computations
    instruction = lambda i: ((i >> 32) + computations) << 32 | ((i & 0xFFFFFFFF) + locals_)
    rules = {
        "module": {5: lambda i: i + module, 6: computation, 3: "computation", 7: "schedule"},
        "computation": {5: computation, 6: instruction, 2: "instruction"},
        "instruction": {35: instruction, 36: instruction, 37: instruction, 38: computation},
        "schedule": {1: "sequence"},
        "sequence": {1: computation, 2: "ids"},
        "ids": {1: instruction},
    }

    def rewrite(buf, msg):
        out = bytearray()
        for number, wire, value in fields_of(buf):
            rule = rules[msg].get(number)
            if rule is None:
                out += encode_varint(number << 3 | wire)
                out += (encode_varint(value) if wire == 0
                        else encode_varint(len(value)) + value if wire == 2 else value)
            elif isinstance(rule, str):
                inner = rewrite(value, rule)
                out += encode_varint(number << 3 | 2) + encode_varint(len(inner)) + inner
            elif wire == 0:
                out += encode_varint(number << 3) + encode_varint(rule(value))
            else:
                values, i = [], 0
                while i < len(value):
                    v, i = varint(value, i)
                    values.append(encode_varint(rule(v)))
                packed = b"".join(values)
                out += encode_varint(number << 3 | 2) + encode_varint(len(packed)) + packed
        return bytes(out)

    return rewrite(proto, "module")


def one(name, out):
    import jax
    import jax.numpy as jnp
    from jaxlib import _hlo

    program, filename, pad, indent, variant = MODULES[name]
    if program == "legacy":
        text = LEGACY.format(file=filename, l1=3 + pad, c1=5 + len(indent), e1=14 + len(indent),
                             l2=4 + pad, c2=5, e2=20)
        proto = _hlo.hlo_module_from_text(text).as_serialized_hlo_module_proto()
    else:
        template = LOOP
        if program == "mlp":
            template = MLP_HELPER if variant.get("helper") else MLP
        source = template.format(pad="\n" * pad, indent=indent, op=variant.get("op", "tanh"),
                                 const=variant.get("const", "2.0"))
        namespace = {}
        exec(compile(source, filename, "exec"), namespace)
        f = namespace["f"]
        if program == "mlp":
            k = variant.get("k", 8)
            args = (jax.ShapeDtypeStruct((4, k), jnp.float32),
                    jax.ShapeDtypeStruct((k, 3), jnp.float32))
        else:
            args = (jax.ShapeDtypeStruct((4, 8), jnp.float32),)
        computation = jax.jit(f).lower(*args).compiler_ir("hlo")
        proto = computation.as_serialized_hlo_module_proto()
    with open(out, "wb") as file:
        file.write(proto)


# --- The field table, from the descriptors compiled into jaxlib -------------
#
# jaxlib carries the serialized FileDescriptorProto of every .proto it was
# built from; the table is read from those bytes with a minimal wire reader
# (no protobuf package needed).

DESCRIBED = [
    "HloModuleProto", "HloComputationProto", "HloInstructionProto", "OpMetadata",
    "StackFrameIndexProto", "StackFrameIndexProto.FileLocation",
    "StackFrameIndexProto.StackFrame", "HloScheduleProto",
    "HloScheduleProto.SequencesEntry", "HloScheduleProto.InstructionSequence",
    "FrontendAttributes", "FrontendAttributes.MapEntry",
]
TYPES = {1: "double", 2: "float", 3: "int64", 4: "uint64", 5: "int32", 6: "fixed64",
         7: "fixed32", 8: "bool", 9: "string", 10: "group", 11: "message", 12: "bytes",
         13: "uint32", 14: "enum", 15: "sfixed32", 16: "sfixed64", 17: "sint32", 18: "sint64"}
LABELS = {1: "optional", 2: "required", 3: "repeated"}


def varint(b, i):
    value = shift = 0
    while True:
        byte = b[i]
        i += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if not byte & 0x80:
            return value, i


def fields_of(b):
    """(number, wire type, value) of a message's fields."""
    i = 0
    while i < len(b):
        key, i = varint(b, i)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, i = varint(b, i)
        elif wire == 2:
            length, i = varint(b, i)
            value, i = b[i:i + length], i + length
        elif wire == 1:
            value, i = b[i:i + 8], i + 8
        elif wire == 5:
            value, i = b[i:i + 4], i + 4
        else:
            raise ValueError(f"wire type {wire}")
        if i > len(b):
            raise ValueError("past the end")
        yield number, wire, value


def file_descriptor(data, name):
    """The FileDescriptorProto named `name` in a binary: its fields up to the
    first key a FileDescriptorProto cannot have."""
    start = data.index(b"\x0a" + bytes([len(name)]) + name.encode())
    i = start
    while True:
        try:
            key, j = varint(data, i)
            number, wire = key >> 3, key & 7
            if not 1 <= number <= 14 or wire not in (0, 2):
                break
            if wire == 2:
                length, j = varint(data, j)
                j += length
            else:
                _, j = varint(data, j)
        except IndexError:
            break
        i = j
    return data[start:i]


def messages(descriptors, prefix=""):
    """Every message of a list of serialized DescriptorProtos, nested ones included:
    {qualified name: [field]}."""
    found = {}
    for descriptor in descriptors:
        name, fields, nested = None, [], []
        for n, _, v in fields_of(descriptor):
            if n == 1:
                name = v.decode()
            elif n == 2:
                field = {"oneof": False, "type_name": ""}
                for fn, _, fv in fields_of(v):
                    if fn == 1:
                        field["name"] = fv.decode()
                    elif fn == 3:
                        field["number"] = fv
                    elif fn == 4:
                        field["label"] = LABELS[fv]
                    elif fn == 5:
                        field["type"] = TYPES[fv]
                    elif fn == 6:
                        field["type_name"] = fv.decode()
                    elif fn == 9:
                        field["oneof"] = True
                fields.append(field)
            elif n == 3:
                nested.append(v)
        found[prefix + name] = fields
        found.update(messages(nested, prefix + name + "."))
    return found


# The messages mck-key's compile-options normalization opens.
COMPILE_OPTIONS_DESCRIBED = [
    "CompileOptionsProto", "CompileOptionsProto.EnvOptionOverridesEntry",
    "ExecutableBuildOptionsProto", "OptionOverrideProto", "DebugOptions",
    "DebugOptions.CollectiveFilter", "DeviceAssignmentProto",
    "DeviceAssignmentProto.ComputationDevice", "ThunkBufferDebugFilter", "IntRangeInclusive",
    # The entry of every map<string, string> in DebugOptions (mck-key reads them as one).
    "DebugOptions.XlaBackendExtraOptionsEntry",
]
COMPILE_OPTIONS_FIELDS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "crates",
                                      "key", "src", "compile_options", "fields.txt")


def field_table(protos=("xla/service/hlo.proto", "xla/xla_data.proto"), described=DESCRIBED):
    import jaxlib
    path = os.path.join(os.path.dirname(jaxlib.__file__), "libjax_common.so")
    with open(path, "rb") as file:
        data = file.read()
    found = {}
    for proto in protos:
        file_fields = fields_of(file_descriptor(data, proto))
        found.update(messages([v for n, _, v in file_fields if n == 4]))
    lines = []
    for msg in described:
        for f in sorted(found[msg], key=lambda f: f["number"]):
            kind = f["type_name"].lstrip(".") if f["type"] in ("message", "enum") else f["type"]
            if f["type"] == "enum":
                kind = "enum"
            presence = " presence" if f["oneof"] else ""
            lines.append(f"{msg} {f['number']} {f['name']} {kind} {f['label']}{presence}")
    return "\n".join(lines) + "\n"


def check(binary):
    """XLA loads every canonical proto, and it prints as the input does (metadata aside)."""
    import tempfile
    from jaxlib import _hlo
    options = _hlo.HloPrintOptions.fingerprint()
    with tempfile.TemporaryDirectory() as tmp:
        for name in MODULES:
            original = os.path.join(OUT, f"{name}.pb")
            canonical = os.path.join(tmp, f"{name}.pb")
            subprocess.run([binary, "canon", original, "-o", canonical], check=True)
            texts = []
            for path in (original, canonical):
                with open(path, "rb") as file:
                    module = _hlo.HloModule.from_serialized_hlo_module_proto(file.read())
                texts.append(module.to_string(options))
            if texts[0] != texts[1]:
                sys.exit(f"{name}: the canonical proto prints differently in XLA")
            print(f"{name}: XLA loads the canonical proto; same module")


def write_tables():
    """The field tables mck-hlo and mck-key read, from this jaxlib's descriptors."""
    import jaxlib
    import jaxlib.version
    tables = [(FIELDS, "xla/service/hlo.proto and xla/xla_data.proto",
               ("xla/service/hlo.proto", "xla/xla_data.proto"), DESCRIBED),
              (COMPILE_OPTIONS_FIELDS,
               "xla/pjrt/proto/compile_options.proto, xla/xla.proto and xla/xla_data.proto",
               ("xla/pjrt/proto/compile_options.proto", "xla/xla.proto", "xla/xla_data.proto"),
               COMPILE_OPTIONS_DESCRIBED)]
    for path, what, protos, described in tables:
        with open(path, "w") as file:
            file.write(f"# {what} as compiled into jaxlib {jaxlib.__version__} "
                       f"(jax commit {jaxlib.version._git_hash})\n")
            file.write("# message number name kind label [presence: in a oneof]\n")
            file.write(field_table(protos, described))
        print(f"wrote {os.path.relpath(path)}")


def main():
    if len(sys.argv) == 4 and sys.argv[1] == "--one":
        one(sys.argv[2], sys.argv[3])
        return
    if sys.argv[1:] == ["--tables"]:
        write_tables()
        return
    if sys.argv[1:] == ["--in-one-process"]:
        in_one_process()
        return
    if len(sys.argv) == 3 and sys.argv[1] == "--check":
        check(sys.argv[2])
        return
    import jax
    import jaxlib
    import jaxlib.version
    os.makedirs(OUT, exist_ok=True)
    for name in MODULES:
        out = os.path.join(OUT, f"{name}.pb")
        subprocess.run([sys.executable, os.path.abspath(__file__), "--one", name, out], check=True)
        print(f"wrote {os.path.relpath(out)} ({os.path.getsize(out)} bytes)")
    subprocess.run([sys.executable, os.path.abspath(__file__), "--in-one-process"], check=True)
    write_tables()
    with open(os.path.join(OUT, "MANIFEST"), "w") as file:
        file.write(f"jax {jax.__version__}\njaxlib {jaxlib.__version__}\n"
                   f"jaxlib git hash {jaxlib.version._git_hash}\n"
                   f"python {sys.version.split()[0]}\n"
                   "generator scripts/gen-hlo-testdata.py\n")


if __name__ == "__main__":
    main()
