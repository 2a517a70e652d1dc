//! Runs `examples/doctor_from_rust.rs` as the suite's own code: the documented way to use the
//! doctor from Rust must keep compiling and keep naming the demo server's stall.

#[path = "../examples/doctor_from_rust.rs"]
#[allow(dead_code)] // its main() is the example's, not the test's
mod example;

use nodelay_diagnose::FindingId;

#[test]
fn the_example_diagnoses_the_stalling_demo_server() {
    let report = example::diagnose_stalling_server().expect("the demo server is diagnosed");
    let verdict: Vec<FindingId> = report.findings.iter().map(|f| f.id).collect();
    assert_eq!(verdict.first(), Some(&FindingId::ServerNagleDelayedAck), "{verdict:?}");
    assert!(report.findings[0].proven, "the stall is proven by its experiment");
}
