//! Fuzzes the bytecode container reader, the validation and the location
//! stripper: no input may panic, hang or allocate without bound, and a
//! stripped output must strip to itself.
#![no_main]

use mck_bytecode::{StripOutput, inspect, op_names, strip_locations, validate};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = inspect(data);
    let _ = op_names(data);
    let _ = validate(data);
    if let Ok(report) = strip_locations(data) {
        if let StripOutput::Stripped(out) = report.output {
            let again = strip_locations(&out).expect("stripped output must parse");
            assert_eq!(again.output, StripOutput::Stripped(out), "stripping is not idempotent");
        }
    }
});
