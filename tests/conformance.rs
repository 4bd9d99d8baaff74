//! Conformance of the front end against stanc3's test corpus and the
//! posteriordb models: the one harness behind both the CI run
//! (`cargo test --workspace`) and the full sweep (`scripts/conformance.sh`).
//!
//! - good programs (stanc3 `good/`, posteriordb) must produce no error;
//! - bad programs must fail, and the first error must have the kind
//!   (syntax/semantic) and line stanc3 reports (`stanc3/manifest.json`);
//! - a panic is always a failure;
//! - known differences are listed with reasons in `conformance/exceptions.txt`.
//!
//! Selection: every file by default. With `BAT_CONFORMANCE_SLICE=1` only a
//! deterministic subset (every 5th stanc3 entry plus all posteriordb models).
//! Corpus location: `$BAT_CORPUS`, else `../shared/corpus` beside the repo.

#[path = "conformance/harness.rs"]
mod harness;

use harness::{Corpus, Selection, run_cases};
use std::time::Instant;

#[test]
fn front_end_conforms_to_stanc3_corpus() {
    let Some(corpus) = Corpus::locate() else {
        // CI always has the corpus beside the clone; missing it there is a
        // setup failure, not a pass.
        if std::env::var_os("CI").is_some() || std::env::var_os("BAT_FULL_SWEEP").is_some() {
            panic!("conformance corpus not found: set BAT_CORPUS or place shared/ beside the repo");
        }
        eprintln!("conformance: corpus not found (set BAT_CORPUS); skipping");
        return;
    };
    let selection = if std::env::var("BAT_CONFORMANCE_SLICE").as_deref() == Ok("1") {
        Selection::Slice
    } else {
        Selection::All
    };
    let cases = corpus.cases(selection);
    let exceptions = harness::Exceptions::load();

    let started = Instant::now();
    let mut report = harness::Report::default();
    for (case, outcome) in cases.iter().zip(run_cases(&cases)) {
        report.record(case, outcome, &exceptions);
    }
    let elapsed = started.elapsed();

    if std::env::var("BAT_UPDATE_EXCEPTIONS").as_deref() == Ok("1") {
        assert_eq!(
            selection,
            Selection::All,
            "update exceptions from a full run only"
        );
        exceptions.rewrite(&report);
        println!("conformance: rewrote tests/conformance/exceptions.txt");
        assert_eq!(report.panics, 0, "the front end panicked on corpus files");
        return;
    }
    println!("{}", report.render(&exceptions));
    println!(
        "conformance: {} files ({selection:?}) in {:.2} s",
        cases.len(),
        elapsed.as_secs_f64()
    );
    assert!(
        report.unexpected_failures.is_empty(),
        "{} corpus files did not conform (see the list above); fix them or add them \
         with a reason to tests/conformance/exceptions.txt",
        report.unexpected_failures.len()
    );
    // A panic is never acceptable, even in an excepted file.
    assert_eq!(report.panics, 0, "the front end panicked on corpus files");
}
