//! The known compilers' argument shapes, and the generic rule.

use super::*;

fn args(s: &str) -> Vec<String> {
    s.split_whitespace().map(String::from).collect()
}

fn ok(program: &str, line: &str) -> (String, String) {
    let f = recognize(program, &args(line)).unwrap_or_else(|e| panic!("{line}: {e}"));
    (f.input, f.output)
}

fn refused(program: &str, line: &str) -> String {
    recognize(program, &args(line)).expect_err(line)
}

fn pair(a: &str, b: &str) -> (String, String) {
    (a.into(), b.into())
}

#[test]
fn mlir_opt_and_iree_compile() {
    for program in ["mlir-opt", "mlir-opt-22", "iree-compile"] {
        assert_eq!(
            ok(program, "in.mlir -o out.mlir"),
            pair("in.mlir", "out.mlir")
        );
        assert_eq!(
            ok(program, "--x -o=out.mlir --y=1 in.mlir"),
            pair("in.mlir", "out.mlir")
        );
        assert_eq!(ok(program, "--o out -- -in.mlir"), pair("-in.mlir", "out"));
        assert!(refused(program, "in.mlir").contains("no -o OUT"));
        assert!(refused(program, "-o out").contains("standard input"));
        assert!(refused(program, "- -o out").contains("standard input"));
        assert!(refused(program, "in.mlir -o -").contains("standard output"));
        assert!(refused(program, "a.mlir b.mlir -o out").contains("2 positional arguments"));
        assert!(refused(program, "in.mlir -o a -o b").contains("more than one -o"));
        assert!(refused(program, "in.mlir -o").contains("-o without a file"));
    }
    assert_eq!(
        ok(
            "mlir-opt",
            "--pass-pipeline builtin.module(canonicalize) in.mlir -o o"
        ),
        pair("in.mlir", "o")
    );
    assert_eq!(
        ok(
            "iree-compile",
            "--iree-hal-target-device llvm-cpu in.mlir -o o.vmfb"
        ),
        pair("in.mlir", "o.vmfb")
    );
    assert!(refused("mlir-opt", "--load-pass-plugin=p.so in.mlir -o o").contains("plugin"));
    assert!(
        refused("mlir-opt", "--unknown value in.mlir -o o").starts_with("mlir-opt arguments: ")
    );
}

#[test]
fn neuronx_cc_compile() {
    assert_eq!(
        ok(
            "neuronx-cc",
            "compile --framework XLA model.hlo.pb --target trn1 --output model.neff --verbose 35"
        ),
        pair("model.hlo.pb", "model.neff")
    );
    assert_eq!(
        ok(
            "neuronx-cc",
            "compile --framework=XLA m.pb --output=m.neff -O 2 --enable-x"
        ),
        pair("m.pb", "m.neff")
    );
    // -O takes its level as the next argument or attached; either way it is not the input.
    for opt in ["-O 1 m.pb", "-O3 m.pb", "m.pb -O 2"] {
        assert_eq!(
            ok("neuronx-cc", &format!("compile {opt} --output m.neff")),
            pair("m.pb", "m.neff"),
            "{opt}"
        );
    }
    assert!(refused("neuronx-cc", "list-operators --framework XLA").contains("`compile`"));
    assert!(refused("neuronx-cc", "compile m.pb --framework XLA").contains("no --output"));
}

#[test]
fn the_generic_rule() {
    assert_eq!(
        ok("mycc", "-I inc in.src -o out.bin"),
        pair("in.src", "out.bin")
    );
    assert_eq!(
        ok("mycc", "in.src --output out.bin"),
        pair("in.src", "out.bin")
    );
    assert_eq!(
        ok("mycc", "in.src --output=out.bin"),
        pair("in.src", "out.bin")
    );
    assert_eq!(ok("mycc", "-oout.bin in.src"), pair("in.src", "out.bin"));
    assert!(refused("mycc", "in.src").contains("no -o OUT or --output OUT"));
    assert!(refused("mycc", "-o out").contains("no positional argument"));
    // Two existing files: which one is compiled?
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (dir.path().join("a"), dir.path().join("b"));
    std::fs::write(&a, "a").unwrap();
    std::fs::write(&b, "b").unwrap();
    let line = format!("{} {} -o out", a.display(), b.display());
    assert!(refused("mycc", &line).contains("are both files"));
}

#[test]
fn names() {
    for name in ["mlir-opt", "mlir-opt-22", "iree-compile", "neuronx-cc"] {
        assert!(known(name).is_some(), "{name}");
    }
    for name in [
        "mlir-opt-",
        "mlir-opt-x",
        "mlir-cache-key",
        "cc",
        "neuronx-cc2",
    ] {
        assert!(known(name).is_none(), "{name}");
    }
}
