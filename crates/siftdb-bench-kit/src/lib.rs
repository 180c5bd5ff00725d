//! Measurement code shared by siftdb's CLI, examples, benchmarks and the comparison tools under
//! `tools/`. Not part of siftdb's API.

pub mod survey;
