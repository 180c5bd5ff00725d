//! Progress bars on stderr for long phases, shown only when stderr is a terminal (so logs and
//! CI output stay clean).

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::io::IsTerminal;

/// A bar of `len` steps labelled `phase`; hidden when stderr is not a terminal.
pub fn bar(phase: &str, len: u64) -> ProgressBar {
    let pb = ProgressBar::new(len);
    if std::io::stderr().is_terminal() {
        pb.set_draw_target(ProgressDrawTarget::stderr());
        pb.set_style(
            ProgressStyle::with_template("{msg:>14} [{bar:40}] {pos}/{len} ({per_sec}, eta {eta})")
                .expect("static template")
                .progress_chars("=> "),
        );
    } else {
        pb.set_draw_target(ProgressDrawTarget::hidden());
    }
    pb.set_message(phase.to_string());
    pb
}
