//! Prints what the stripper does with each payload given on the command line:
//! `cargo run -p mck-bytecode --example strip_report -- FILE...`. With
//! `STRIP_OUT=DIR`, also writes each stripped payload to `DIR/<name>.stripped`.

use mck_bytecode::{StripOutput, strip_locations};

fn main() {
    for path in std::env::args().skip(1) {
        let payload = match std::fs::read(&path) {
            Ok(p) => p,
            Err(e) => {
                println!("{path}: {e}");
                continue;
            }
        };
        match strip_locations(&payload) {
            Err(e) => println!("{path}: error: {e}"),
            Ok(r) => match r.output {
                StripOutput::Stripped(bytes) => {
                    if let Some(dir) = std::env::var_os("STRIP_OUT") {
                        let name = std::path::Path::new(&path).file_name().unwrap_or_default();
                        let mut out = std::path::PathBuf::from(dir).join(name);
                        out.set_extension("mlirbc.stripped");
                        if let Err(e) = std::fs::write(&out, &bytes) {
                            println!("{}: {e}", out.display());
                        }
                    }
                    println!(
                        "{path}: stripped {} -> {} bytes, {} locations, {} strings; {}",
                        payload.len(),
                        bytes.len(),
                        r.locations_replaced,
                        r.strings_emptied,
                        r.notes.join("; ")
                    )
                }
                StripOutput::Unchanged { reason } => println!("{path}: unchanged: {reason}"),
            },
        }
    }
}
