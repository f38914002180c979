//! The host's passes of a staged upload: `formats::copy_checked` on any source, a destination of any
//! length near it and any bound (a refusal with nothing written, or the source copied and its first
//! entry past the bound named), and the offsets' passes on the same words read as row offsets.
#![no_main]

use arbitrary::Arbitrary;
use gpu_spmv_fuzz::properties::staging::{check_copy_checked, check_offsets_passes};
use libfuzzer_sys::fuzz_target;

#[derive(Debug, Arbitrary)]
struct Input {
    source: Vec<u32>,
    /// Added to the source's length (wrapping at 0), so that most destinations fit.
    dest_delta: i8,
    /// Repeats of the source, so that some inputs span several of the pass's pieces.
    repeat: u8,
    bound: u32,
}

fuzz_target!(|input: Input| {
    let repeat = usize::from(input.repeat % 8).pow(4).max(1);
    let source: Vec<u32> = input.source.iter().copied().cycle().take(input.source.len() * repeat).collect();
    let dest_len = source.len().saturating_add_signed(isize::from(input.dest_delta % 3));
    check_copy_checked(&source, dest_len, input.bound);
    check_offsets_passes(&source, input.bound as usize);
});
